"""What reading a trip month's neighbours costs as history grows: from the summaries the published months kept,
beside rereading their rows (the way before summaries, the baseline), in the same run.

    ./run python benchmarks/neighbour_audit.py [--trips 500000] [--repeat 5]

Writes 12 sample months around 2025-01 (2024-07..2024-12 and 2025-02..2025-07) into a temporary state folder and
publishes them to ``raw_yellow`` one by one, nearest to 2025-01 first, as ``write_audit_publish`` does
(``Publication.stage`` then ``publish`` with the month's summary). Once 1, 2, 4, 8 and 12 months are published,
times, interleaved, median of ``--repeat``, the facts the neighbour audits of 2025-01 are given:

* from the summaries, as the pipeline reads them now (``neighbour_months``): ``main``'s history walked and the
  nearest months' summaries parsed, in the table's state write-audit-publish already loaded; and the same with
  that load (``table_state``) timed in;
* rereading the rows, as before: every published month within six months grouped by month and zone, by drop-off
  zone and by hour of the week;
* with no summary kept (months published before summaries): the nearest months alone counted from their rows.

The answers are compared. No figure is asserted: the benchmark prints them, beside its baseline.
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
from typing import Any

from harness import load_text, timed

AUDITED = "2025-01"
HISTORIES = (1, 2, 4, 8, 12)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trips", type=int, default=500_000, help="trips per month in the sample source")
    parser.add_argument("--repeat", type=int, default=5, help="times each way of reading is timed per history")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="taxi-neighbour-bench-") as state:  # the months are not left behind
        os.environ["TAXI_STATE_DIR"] = state  # before any project module reads its settings
        os.environ.setdefault("TAXI_SPARK_CLASS_ARCHIVE", "false")  # a folder about to go: never used again
        return measure(args)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def nearest_first(month: str, search: int) -> list[str]:
    """The months within ``search`` of ``month``, nearest first (the earlier of two as near)."""
    year, number = int(month[:4]), int(month[5:7]) - 1

    def shifted(by: int) -> str:
        return f"{year + (number + by) // 12:04d}-{(number + by) % 12 + 1:02d}"

    return [shifted(by) for distance in range(1, search + 1) for by in (-distance, distance)]


class WithoutSummaries:
    """A table's state with its summaries hidden, as a table published before they were kept reads."""

    def __init__(self, state: Any) -> None:
        self._state = state

    def __getattr__(self, name: str) -> Any:
        return getattr(self._state, name)

    def property(self, key: str) -> str | None:
        from forecast_assets.lakehouse.snapshots import SUMMARY_PROPERTY_PREFIX

        return None if key.startswith(SUMMARY_PROPERTY_PREFIX) else self._state.property(key)


def measure(args: argparse.Namespace) -> int:
    from forecast_assets.audits import ROWS, Measured, MonthFacts
    from forecast_assets.definitions import resources_for
    from forecast_assets.lakehouse.neighbours import NEAREST, SEARCH_MONTHS, counted_from_table, neighbour_months
    from forecast_assets.lakehouse.publication import Publication
    from forecast_assets.lakehouse.table_state import table_state
    from forecast_assets.month_summary import summarised_by
    from forecast_assets.source_specs.yellow_trips import RAW_YELLOW, YELLOW
    from forecast_assets.transforms.tlc_trips import normalize_trips, with_timestamps
    from forecast_assets.trip_calendar import DROPOFF_ZONE, PICKUP_ZONE, trip_calendar
    from taxi_core.months import MonthWindow
    from taxi_core.settings import load_settings
    from taxi_core.tool_env import apply_tool_environment
    from taxi_demo.sample_source import SampleSource

    print(f"load average at start: {load_text()} (1, 5, 15 min; {os.cpu_count()} cores)")
    settings = load_settings()
    apply_tool_environment(settings)
    months = nearest_first(AUDITED, SEARCH_MONTHS)
    source = SampleSource(settings.path("sample_source"), trips_per_month=args.trips)
    written, _ = timed(lambda: source.write_months(sorted(months)))
    print(f"{len(months)} sample months around {AUDITED}, {args.trips:,} trips a month asked for: {written:.1f} s")

    started = time.perf_counter()
    spark = resources_for(settings)["spark"].session
    print(f"Spark start: {time.perf_counter() - started:.1f} s (not in any figure below)")
    window = MonthWindow.from_partition_key(AUDITED)
    summarise = summarised_by(PICKUP_ZONE)
    reread = counted_from_table(spark, RAW_YELLOW, PICKUP_ZONE, YELLOW.pickup, DROPOFF_ZONE)

    def publish(month: str) -> int:
        """The month staged and published as write-audit-publish does, with its summary."""
        path = source.trip_path(month)
        rows = normalize_trips(
            with_timestamps(spark.read.parquet(str(path)), YELLOW), YELLOW, month, path.name, _sha256(path),
            datetime.now(UTC),
        )  # fmt: skip
        publication = Publication.open(spark, RAW_YELLOW, MonthWindow.from_partition_key(month), f"{month}-01")
        staged = publication.stage(rows, "bench", {"dagster.partition": f"{month}-01"})
        # The summary from the month's calendar, as the audits count it in the pipeline.
        staged_rows = staged.rows(spark)
        calendar = trip_calendar(YELLOW.pickup)(staged_rows, MonthFacts(MonthWindow.from_partition_key(month)))
        summary = summarise(staged_rows, Measured({ROWS: staged.write.rows_written, **calendar}))
        publication.publish(staged, lambda snapshot_id: {}, summary)
        return staged.write.rows_written

    loaded: Any = None  # the table's state, loaded once the months of a history are published

    def from_summaries() -> Any:
        return neighbour_months(loaded, window, _refused)

    def loading_then_from_summaries() -> Any:
        return neighbour_months(_state(), window, _refused)

    def rereading() -> Any:  # as the audits read their neighbours before summaries: every month within six
        return reread(months)

    def without_summaries() -> Any:
        return neighbour_months(WithoutSummaries(_state()), window, reread)

    def _state() -> Any:
        state = table_state(spark, RAW_YELLOW.identifier)
        if state is None:  # an invariant: the months were just published
            raise RuntimeError(f"{RAW_YELLOW.identifier} does not exist")
        return state

    ways = {
        "from summaries (now)": from_summaries,
        "the same, with the state's load": loading_then_from_summaries,
        "rereading rows (before)": rereading,
        "no summary kept (fallback)": without_summaries,
    }
    results: dict[int, dict[str, list[float]]] = {}
    published_rows: list[int] = []
    for history in HISTORIES:
        while len(published_rows) < history:
            published_rows.append(publish(months[len(published_rows)]))
        loaded = _state()  # as Publication.open loads it for the audited month
        answers = {way: run() for way, run in ways.items()}  # once untimed: each path warm
        nearest = answers["from summaries (now)"]
        reread_all = answers["rereading rows (before)"].values()
        reread_nearest = tuple(sorted(reread_all, key=lambda found: months.index(found.month))[:NEAREST])
        same = (
            nearest
            == answers["the same, with the state's load"]
            == reread_nearest
            == answers["no summary kept (fallback)"]
        )
        if not same:
            print(f"history {history}: the ways disagree on the neighbours")
            return 1
        results[history] = {way: [] for way in ways}
        for _ in range(args.repeat):
            for way, run in ways.items():
                results[history][way].append(timed(run)[0])
        print(f"history {history:2d}: published {', '.join(sorted(months[:history]))}; load {load_text()}")

    print(f"\n{AUDITED}'s neighbour facts, seconds, median of {args.repeat} (min-max); months of "
          f"{statistics.median(published_rows):,.0f} rows; every way gave the same neighbours")  # fmt: skip
    print(f"{'months published':>17s}" + "".join(f"{way:>34s}" for way in ways))
    for history, timings in results.items():
        cells = "".join(
            f"{statistics.median(s):>14.3f} ({min(s):.3f}-{max(s):.3f})".rjust(34) for s in timings.values()
        )
        print(f"{history:>17d}{cells}")
    print(f"\nload average at end: {load_text()}")
    spark.stop()  # its JVM ends before the state folder it writes to is removed
    return 0


def _refused(months: Any) -> dict[str, Any]:
    raise RuntimeError(f"every month published here keeps a summary, yet {months} had to be counted")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
