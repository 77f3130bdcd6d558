"""What the audits of a trip month cost, beside the month's raw_yellow write, with the audits before the calendar,
direction, pseudo-zone and layout audits as the baseline, all from the same run.

    ./run python benchmarks/audit_cost.py [--trips 3000000] [--repeat 3]

Writes two sample months (2024-12, the neighbour; 2025-01, the audited month) into a temporary state folder and
starts Spark there. Reads and normalizes 2025-01 as the pipeline does and writes it to a staging branch of
``raw_yellow`` as ``write_audit_publish`` does (``stage_month``, the audits' aggregate pass observed while the rows
are written): that write is the ingest reference, timed observing the baseline audits' pass and observing every
audit's. The month's facts are the pipeline's: the neighbour counted from the 2024-12 file with pyarrow, the zone
lookup shipped with the project. Then, interleaved, median of ``--repeat``:

* ``audit_month`` with the baseline audits, with every audit in ``YELLOW_TRIPS.audits``, and with the new ones alone,
  on the month read back from the staged branch (one aggregate pass, then each distinct query once);
* the same three with the aggregate pass given as observed during the write, as the pipeline runs them: only the
  audits' own queries and the judges are left after the write;
* the first three again on the month held in memory (``localCheckpoint``): the audits' own work, without reading
  the table's Parquet files.

No figure is asserted: the benchmark prints them, beside its baseline.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from harness import load_text, timed

NEIGHBOUR, AUDITED = "2024-12", "2025-01"
BASELINE = (
    "raw_yellow_row_count_matches_source",
    "raw_yellow_no_null_keys",
    "raw_yellow_no_duplicate_trips",
    "raw_yellow_zones_like_recent_months",
    "raw_yellow_rows_like_recent_months",
    "raw_yellow_pickups_inside_month",
    "raw_yellow_no_negative_fares",
    "raw_yellow_pickups_before_dropoffs",
    "raw_yellow_zone_ids_known",
    "raw_yellow_zone_mix_like_recent_months",
    "raw_yellow_boroughs_like_recent_months",
    "raw_yellow_every_day_has_its_trips",
    "raw_yellow_distances_possible",
    "raw_yellow_durations_possible",
)
# The calendar, direction, pseudo-zone and layout audits.
NEW = (
    "raw_yellow_week_like_recent_months",
    "raw_yellow_no_repeated_days",
    "raw_yellow_direction_like_recent_months",
    "raw_yellow_pseudo_zones_at_their_rate",
    "raw_yellow_layout_of_its_year",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trips", type=int, default=3_000_000, help="trips per month in the sample source")
    parser.add_argument("--repeat", type=int, default=3, help="times each write and each audit run is timed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="taxi-audit-bench-") as state:  # the months' files are not left behind
        os.environ["TAXI_STATE_DIR"] = state  # before any project module reads its settings
        # A class archive recorded in a folder about to be removed is never used (as in month_ingestion).
        os.environ.setdefault("TAXI_SPARK_CLASS_ARCHIVE", "false")
        return measure(args)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def neighbour_from_file(path: Path, month: str):
    """The neighbour as ``neighbour_months`` would read it once published: its rows, pickups and drop-offs per
    zone, and its pickups inside the month by hour of the week."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from forecast_assets.lakehouse.neighbours import NeighbourMonth

    table = pq.read_table(path, columns=["PULocationID", "DOLocationID", "tpep_pickup_datetime"])

    def by_zone(column: str) -> dict[int, int]:
        counts = pc.value_counts(table.column(column)).to_pylist()
        return {int(item["values"]): int(item["counts"]) for item in counts if item["values"] is not None}

    pickups = table.column("tpep_pickup_datetime").to_pandas()
    inside = pickups[pickups.dt.strftime("%Y-%m") == month]
    hours = (inside.dt.day_of_week * 24 + inside.dt.hour).value_counts()
    week = tuple(int(hours.get(hour, 0)) for hour in range(168))
    return NeighbourMonth(month, table.num_rows, by_zone("PULocationID"), week, by_zone("DOLocationID"))


def measure(args: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from forecast_assets.audit_run import AggregatePass, audit_month
    from forecast_assets.audits import MonthFacts
    from forecast_assets.definitions import resources_for
    from forecast_assets.lakehouse.publication import Publication, staging_branch
    from forecast_assets.lakehouse.zone_reference import ZoneReference
    from forecast_assets.source_specs.yellow_trips import RAW_YELLOW, YELLOW
    from forecast_assets.source_specs.yellow_trips import SOURCE as YELLOW_TRIPS
    from forecast_assets.transforms.tlc_trips import normalize_trips, with_timestamps
    from taxi_core.months import MonthWindow
    from taxi_core.settings import load_settings
    from taxi_core.tool_env import apply_tool_environment
    from taxi_core.zones import load_zones
    from taxi_demo.sample_source import SampleSource

    by_name = {audit.name: audit for audit in YELLOW_TRIPS.audits}
    unknown = sorted(set(BASELINE + NEW) - set(by_name))
    unlisted = sorted(set(by_name) - set(BASELINE + NEW))
    if unknown or unlisted:
        print(f"YELLOW_TRIPS.audits has changed: not found {unknown or 'none'}; not in either set {unlisted or 'none'}")
        return 1
    sets = {
        "baseline audits (before)": [by_name[name] for name in BASELINE],
        "every audit (now)": list(YELLOW_TRIPS.audits),
        "the new audits alone": [by_name[name] for name in NEW],
    }

    print(f"load average at start: {load_text()} (1, 5, 15 min; {os.cpu_count()} cores)")
    settings = load_settings()
    apply_tool_environment(settings)
    source = SampleSource(settings.path("sample_source"), trips_per_month=args.trips)
    written = timed(lambda: source.write_months([NEIGHBOUR, AUDITED]))[0]
    path = source.trip_path(AUDITED)
    trips = pq.read_metadata(path).num_rows
    print(f"sample months {NEIGHBOUR} and {AUDITED}: {args.trips:,} a month asked for, written in {written:.1f} s")

    window = MonthWindow.from_partition_key(f"{AUDITED}-01")
    zones = ZoneReference({zone.location_id: zone.borough for zone in load_zones()}, "TLC's zone lookup (shipped)")
    neighbour = neighbour_from_file(source.trip_path(NEIGHBOUR), NEIGHBOUR)
    facts = MonthFacts(window, expected_rows=trips, neighbours=(neighbour,), zones=zones)

    started = time.perf_counter()
    spark = resources_for(settings)["spark"].session
    print(f"Spark start: {time.perf_counter() - started:.1f} s (not in any figure below)")
    fingerprint = _sha256(path)

    def source_rows():  # as the trip source's _read: the staged file, timestamps, one schema, source columns
        published = with_timestamps(spark.read.parquet(str(path)), YELLOW)
        return normalize_trips(published, YELLOW, AUDITED, path.name, fingerprint, datetime.now(UTC))

    publication = Publication.open(spark, RAW_YELLOW, window, f"{AUDITED}-01")
    branch = staging_branch(window, "audit-cost")
    passes = {label: AggregatePass.of(audits, facts) for label, audits in sets.items()}
    observed_json: dict[str, str] = {}

    def write(label: str) -> None:  # the pipeline's write of the month, observing that set's aggregate pass
        staged = publication.stage(source_rows(), "audit-cost", {}, observe=passes[label].column())
        observed_json[label] = staged.observed

    write_labels = {"observing the baseline's pass": "baseline audits (before)",
                    "observing every audit's pass (now)": "every audit (now)"}  # fmt: skip
    write("every audit (now)")  # once untimed: the JVM warm, the table and the branch in place
    writes: dict[str, list[float]] = {label: [] for label in write_labels}
    for _ in range(args.repeat):
        for label, audits_label in write_labels.items():
            writes[label].append(timed(lambda audits=audits_label: write(audits))[0])
    # Every audit's values, as observed in the last write; each set's own pass reads its names from them.
    observed = {label: passes[label].values(observed_json["every audit (now)"]) for label in sets}

    def staged_rows():  # as write_audit_publish reads the staged month: the branch, the month's partition
        return spark.read.option("branch", branch).table(RAW_YELLOW.identifier).where(RAW_YELLOW.rows_condition(window))

    count = staged_rows().count()
    held = staged_rows().localCheckpoint()
    held.count()
    verdicts = {label: audit_month(staged_rows(), audits, facts) for label, audits in sets.items()}  # untimed warm-up
    ways = {
        "from the staged table": lambda label: audit_month(staged_rows(), sets[label], facts),
        "pass observed in the write (the pipeline)": lambda label: audit_month(
            staged_rows(), sets[label], facts, observed[label]
        ),
        "on rows held in memory": lambda label: audit_month(held, sets[label], facts),
    }
    timings: dict[tuple[str, str], list[float]] = {(way, label): [] for way in ways for label in sets}
    for _ in range(args.repeat):
        for way, run in ways.items():
            for label in sets:
                timings[way, label].append(timed(lambda run=run, label=label: run(label))[0])

    def median(seconds: list[float]) -> float:
        return statistics.median(seconds)

    def spread(seconds: list[float]) -> str:
        return ", ".join(f"{s:.2f}" for s in seconds)

    print(f"\n{AUDITED}: {count:,} trips staged ({trips:,} in the file); neighbour {NEIGHBOUR}: {neighbour.rows:,}")
    failed = [f"{audit.name}" for audits in verdicts.values() for audit, result in audits if not result.passed]
    print(f"audits not passed on the sample: {', '.join(sorted(set(failed))) or 'none'}")
    queries = {label: len({a.query for a in audits if a.query is not None}) for label, audits in sets.items()}
    print("aggregates and queries: " + "; ".join(
        f"{label}: {len(passes[label].aggregates)} aggregates, {queries[label]} queries" for label in sets
    ))  # fmt: skip
    print(f"\nseconds per month, median of {args.repeat} (each run in brackets)")
    write_now = median(writes["observing every audit's pass (now)"])
    print("the month's raw_yellow write (stage_month: read, normalize, write the branch):")
    for label, seconds in writes.items():
        print(f"  {label:44s}{median(seconds):8.2f} s   ({spread(seconds)})")
    added_in_write = write_now - median(writes["observing the baseline's pass"])
    print(f"  {'the new aggregates in the write':44s}{added_in_write:+8.2f} s")
    for way in ways:
        print(f"audit_month, {way}:")
        for label in sets:
            seconds = timings[way, label]
            print(f"  {label:44s}{median(seconds):8.2f} s   ({spread(seconds)})")
        base, now = median(timings[way, "baseline audits (before)"]), median(timings[way, "every audit (now)"])
        print(f"  {'added by the new audits (every - baseline)':44s}{now - base:+8.2f} s   "
              f"({(now - base) / write_now:+.0%} of the write; every audit {now / write_now:.0%} of it)")  # fmt: skip
    print(f"\nload average at end: {load_text()}")
    spark.stop()  # its JVM ends before the state folder it writes to is removed
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
