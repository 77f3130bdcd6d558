"""The floors under a month's ingestion: the job's work for one month on the staged files, without Dagster.

Three ways, each run as a script in a new process (as ``month_ingestion`` times it), printing its seconds as JSON:

* ``--way duckdb`` (DuckDB parallel): verifies the staged files; normalises, audits and writes raw_yellow,
  raw_green and raw_weather; then counts, audits and writes the hourly actuals. Each month is written as zstd
  Parquet to a staged path, audited there and moved into place only when no blocking audit fails
  (write-audit-publish), under ``--out``.
* ``--way anchor`` (DuckDB + pyiceberg, Iceberg to Iceberg): DuckDB writes each table's month as one Parquet
  file, pyiceberg registers it with ``add_files`` on an ``audit`` branch in the same commit as the month's old files
  leave that branch, the same audits read the branch's files, and ``main`` is fast-forwarded to the branch. The
  catalog is pyiceberg's SQL catalog on SQLite under ``--out``. A month whose source fingerprints match what
  ``main`` holds is left alone unless ``--rewrite``, as the job leaves it unless ``rewrite_unchanged``.
* ``--way bare-spark``: starts Spark with the project's settings (its Iceberg catalog, class path and driver flags,
  from its class archive), writes each staged file's rows unchanged into a new Iceberg table and the yellow month's
  rides per hour and zone, in the job's order: no Dagster, no normalising, no audits, no branches, no lineage. What
  is left is what Spark and Iceberg themselves cost. Its tables go to the state folder ``TAXI_STATE_DIR`` names.

``pyarrow_actuals`` counts the actuals again with pyarrow alone; ``same_actuals`` compares two tables.

    python benchmarks/month_floor.py --way duckdb --month 2025-01 --trips FILE --green FILE --weather FILE ... --out DIR
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.catalog import Catalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import And, BooleanExpression, EqualTo, GreaterThanOrEqual, LessThan
from pyiceberg.table import Table
from pyiceberg.table.snapshots import ancestors_of
from pyiceberg.transforms import IdentityTransform, MonthTransform, Transform
from pyiceberg.types import DateType, StringType

from forecast_assets.audits import MonthFacts
from forecast_assets.lakehouse.neighbours import NeighbourMonth
from forecast_assets.source_specs import green_trips, noaa_weather, yellow_trips
from forecast_assets.source_specs.green_trips import GREEN
from forecast_assets.source_specs.yellow_trips import YELLOW
from forecast_assets.sources.noaa_format import COLUMNS, DAY_COLUMNS, MISSING_VALUE, NYC_COUNTY_FIPS
from forecast_assets.sources.tlc_format import TripLayout
from forecast_assets.sources.verify import verify_trip_file, verify_weather_file
from forecast_assets.trip_audits import DUPLICATE_LIMIT, OUTSIDE_MONTH_LIMIT, ROWS_AGAINST_RECENT, trip_record
from forecast_assets.trip_zones import ZONE_COVERAGE_MIN, usual_zones
from taxi_core.catalog import CatalogConfig, open_catalog
from taxi_core.months import MonthWindow
from taxi_core.names import ACTUALS
from taxi_core.settings import Settings

# Spark's types of a trip layout's columns; the trip times are New York wall-clock times, timestamps without zone.
DUCKDB_TYPES = {
    "int": "INTEGER",
    "bigint": "BIGINT",
    "double": "DOUBLE",
    "string": "VARCHAR",
    "timestamp_ntz": "TIMESTAMP",
}
# As the Iceberg tables are written (TABLE_PROPERTIES): zstd at the codec's default level.
PARQUET = "(FORMAT parquet, COMPRESSION zstd)"
ACTUALS_KEYS = ("pickup_hour", "pulocationid")
HOUR_MICROS = 3_600_000_000


class HeldBack(RuntimeError):
    """A month failed a blocking audit: the floor does not publish it, as the job would not."""


@dataclass(frozen=True)
class MonthFiles:
    """The files the job's file assets staged for one month."""

    trips: Path
    weather: list[Path]
    green: Path


@dataclass(frozen=True)
class FloorRun:
    seconds: dict[str, float]  # verify, raw_yellow, raw_green, raw_weather, hourly_actuals, total
    actuals: pa.Table  # pickup_hour, pulocationid, total_rides, in key order
    raw_trips: Path  # the month's raw_yellow Parquet, for pyarrow_actuals


def staged_files(settings: Settings, month: str) -> MonthFiles:
    """Where a run of the job staged ``month`` (``YYYY-MM``), in a local staging folder."""
    window, root = MonthWindow.from_partition_key(month), Path(settings.staging_location)
    trips, weather, green = (
        [root / s.staged_name(f) for f in s.files_for(window)]
        for s in (yellow_trips.SOURCE, noaa_weather.SOURCE, green_trips.SOURCE)
    )
    return MonthFiles(trips=trips[0], weather=weather, green=green[0])


def published_actuals(settings: Settings, month: str) -> pa.Table:
    """The month of the published hourly actuals, as pyiceberg reads ``main``."""
    table = open_catalog(CatalogConfig.from_settings(settings)).load_table(ACTUALS).scan().to_arrow()
    return table.filter(pc.equal(pc.strftime(table["pickup_hour"], "%Y-%m"), month))


def duckdb_month(
    month: str,
    files: MonthFiles,
    out_dir: Path,
    zones: Sequence[int] | None = None,
    neighbours: Sequence[NeighbourMonth] = (),
    threads: int | None = None,
    ordered: bool = False,
) -> FloorRun:
    """The job's steps for ``month``; ``zones`` defaults to the job's eligible zones, ``neighbours`` to none
    (the job's neighbours are the published months around this one: none in a fresh state folder).

    ``ordered`` keeps DuckDB's default of writing rows in the order read, one writer at a time; off, row groups
    are written in parallel (a table's rows have no order).
    """
    window = MonthWindow.from_partition_key(month)
    con = connect(threads, ordered)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    (rows, trips_fingerprint), (green_rows, green_fingerprint) = _timed(seconds, "verify", lambda: verify(files, month))
    facts = MonthFacts(window, expected_rows=rows, neighbours=tuple(neighbours))
    trips = _timed(
        seconds, "raw_yellow", lambda: _raw_trips(con, YELLOW, files.trips, trips_fingerprint, facts, out_dir)
    )
    green = MonthFacts(window, expected_rows=green_rows)
    _timed(seconds, "raw_green", lambda: _raw_trips(con, GREEN, files.green, green_fingerprint, green, out_dir))
    _timed(seconds, "raw_weather", lambda: _raw_weather(con, files.weather, window, out_dir))
    actuals = _timed(seconds, "hourly_actuals", lambda: _hourly_actuals(con, trips, window, zones, out_dir))
    seconds["total"] = time.perf_counter() - started
    con.close()
    return FloorRun(seconds, pq.read_table(actuals).sort_by([(key, "ascending") for key in ACTUALS_KEYS]), trips)


def connect(threads: int | None = None, ordered: bool = False) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection set as the floor runs: UTC, and ``ordered`` or parallel writes."""
    con = duckdb.connect(config={"threads": threads} if threads else {})
    con.execute("SET TimeZone = 'UTC'")  # the Spark session's zone, in which ingested_at's TIMESTAMPTZ literal is read
    con.execute(f"SET preserve_insertion_order = {str(ordered).lower()}")
    return con


def _timed(seconds: dict[str, float], step: str, action: Callable):
    started = time.perf_counter()
    result = action()
    seconds[step] = time.perf_counter() - started
    return result


def verify(files: MonthFiles, month: str) -> tuple[tuple[int, str], tuple[int, str]]:
    """The file assets' checks and fingerprints: each trip file's rows (yellow, green), and its fingerprint for
    the raw rows."""
    yellow = verify_trip_file(files.trips, files.trips.as_uri(), YELLOW, "TAXI_TRIP_BASE_URL")
    green = verify_trip_file(files.green, files.green.as_uri(), GREEN, "TAXI_GREEN_TRIP_BASE_URL")
    for path in files.weather:
        verify_weather_file(path, path.as_uri(), path.name.split("-", 1)[0], month)
        fingerprint(path)
    return (yellow.rows, fingerprint(files.trips)), (green.rows, fingerprint(files.green))


def fingerprint(path: Path) -> str:
    """The sha256 of the file's bytes, as the download computes it while the file arrives."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def _publish(con, query: str, target: Path, blocked_by: Callable[[str], list[str]]) -> Path:
    staged = target.with_name(f"_staged_{target.name}")
    staged.parent.mkdir(parents=True, exist_ok=True)
    con.execute(f"COPY ({query}) TO '{staged}' {PARQUET}")
    blocked = blocked_by(parquet_relation(staged))
    if blocked:
        msg = f"{target.parent} not published: {', '.join(blocked)} failed; the staged month is {staged}"
        raise HeldBack(msg)
    return staged.replace(target)


def parquet_relation(path: Path | Sequence[Path]) -> str:
    paths = [str(p) for p in path] if isinstance(path, Sequence) else str(path)
    return f"read_parquet({paths!r}, hive_partitioning = false)"  # the table's own columns, not the folders' names


def _one_row(con, query: str) -> tuple:
    return con.execute(query).fetchall()[0]


def _raw_column(name: str, spark_type: str, published: dict[str, tuple[str, str]]) -> str:
    if name not in published:
        return f"NULL::{DUCKDB_TYPES[spark_type]} AS {name}"
    original, file_type = published[name]
    column = f'"{original}"'
    if file_type == "TIMESTAMP_NS":  # as with_timestamps: Spark reads nanoseconds as a long, floor(ns / 1000.0)
        column = f"make_timestamp(floor(epoch_ns({column}) / 1000)::BIGINT)"
    elif spark_type in ("int", "bigint") and file_type.startswith(("FLOAT", "DOUBLE", "DECIMAL")):
        column = f"trunc({column})"  # Spark's cast drops the fraction; DuckDB's would round it
    return f"{column}::{DUCKDB_TYPES[spark_type]} AS {name}"


def _raw_trips(con, layout: TripLayout, trips: Path, source_fingerprint: str, facts: MonthFacts, out_dir: Path):
    target = out_dir / f"raw_{layout.service}" / f"source_month={facts.month.month}" / "data.parquet"
    query = raw_trips_query(con, layout, trips, source_fingerprint, facts.month)
    return _publish(con, query, target, lambda month: raw_trips_blocked(con, layout, month, facts))


def raw_trips_query(con, layout: TripLayout, trips: Path, source_fingerprint: str, window: MonthWindow) -> str:
    """normalize_trips(with_timestamps(file)): one schema for every year, and the source columns."""
    source = parquet_relation(trips)
    published = {name.lower(): (name, kind) for name, kind, *_ in con.execute(f"DESCRIBE FROM {source}").fetchall()}
    columns = [_raw_column(name, spark_type, published) for name, spark_type in layout.columns.items()]
    columns += [f"'{window.month}' AS source_month", f"'{trips.name}' AS source_file"]
    columns += [f"'{source_fingerprint}' AS source_fingerprint", f"TIMESTAMPTZ '{datetime.now(UTC)}' AS ingested_at"]
    return f"SELECT {', '.join(columns)} FROM {source}"


def raw_trips_blocked(con, layout: TripLayout, rows: str, facts: MonthFacts) -> list[str]:
    """The trip source's audits that would hold the month back, from two passes over it: one for every count (the
    warnings' too, as the job counts them) and the zones with pickups, one grouping for repeated trip records."""
    pickup, dropoff, window, table = layout.pickup, layout.dropoff, facts.month, f"raw_{layout.service}"
    start, end = f"TIMESTAMP '{window.start}'", f"TIMESTAMP '{window.end}'"
    total, null_keys, outside, _, _, zones = _one_row(
        con,
        f"SELECT count(*), count(*) FILTER ({pickup} IS NULL OR pulocationid IS NULL), "
        f"count(*) FILTER ({pickup} < {start} OR {pickup} >= {end}), "
        f"count(*) FILTER (fare_amount < 0 OR total_amount < 0), count(*) FILTER ({dropoff} < {pickup}), "
        f"list(DISTINCT pulocationid) FILTER (pulocationid IS NOT NULL) FROM {rows}",
    )
    repeats = f"SELECT count(*) AS n FROM {rows} GROUP BY {', '.join(trip_record(layout))}"
    (extra_copies,) = _one_row(con, f"SELECT coalesce(sum(n - 1), 0) FROM ({repeats}) WHERE n > 1")
    blocked = {
        f"{table}_row_count_matches_source": total != facts.expected_rows,
        f"{table}_no_null_keys": null_keys > 0,
        f"{table}_no_duplicate_trips": (extra_copies / total if total else 0.0) > DUPLICATE_LIMIT,
        f"{table}_pickups_inside_month": (outside / total if total else 1.0) > OUTSIDE_MONTH_LIMIT,
    }
    if usual := usual_zones(facts.neighbours):
        covered = usual & set(zones or ())
        blocked[f"{table}_zones_like_recent_months"] = len(covered) / len(usual) < ZONE_COVERAGE_MIN
    if facts.neighbours:
        typical = statistics.median(n.rows for n in facts.neighbours)
        ratio = total / typical if typical else float("inf")
        blocked[f"{table}_rows_like_recent_months"] = not ROWS_AGAINST_RECENT[0] <= ratio <= ROWS_AGAINST_RECENT[1]
    return [name for name, failed in blocked.items() if failed]


def _raw_weather(con, csv_files: list[Path], window: MonthWindow, out_dir: Path) -> Path:
    target = out_dir / "raw_weather" / f"date_month={window.month}" / "data.parquet"
    expected = weather_rows(csv_files, window)
    return _publish(con, raw_weather_query(csv_files), target, lambda month: raw_weather_blocked(con, month, expected))


def weather_rows(csv_files: list[Path], window: MonthWindow) -> int:
    """The rows raw_weather should hold: one per NYC county, day and file (element)."""
    return len(NYC_COUNTY_FIPS) * window.days * len(csv_files)


def raw_weather_query(csv_files: list[Path]) -> str:
    """weather_long: NYC counties, one row per county, day and element; -999.99 is missing."""
    names = ", ".join(f"'{c}'" for c in COLUMNS)
    csv = f"read_csv({[str(p) for p in csv_files]}, header = false, delim = ',', all_varchar = true, names = [{names}])"
    county, nyc = "lpad(trim(region_code), 5, '0')", ", ".join(f"'{c}'" for c in NYC_COUNTY_FIPS)
    query = f"""
        WITH nyc AS (SELECT {county} AS county_fips, trim(year)::INTEGER AS year, trim(month)::INTEGER AS month,
                            lower(trim(element)) AS element, {", ".join(DAY_COLUMNS)}
                     FROM {csv} WHERE {county} IN ({nyc})),
             long AS (SELECT *, substr(day_column, 5, 2)::INTEGER AS day, trim(text)::DOUBLE AS value
                      FROM nyc UNPIVOT INCLUDE NULLS (text FOR day_column IN ({", ".join(DAY_COLUMNS)})))
        SELECT county_fips, make_date(year, month, day) AS date, element, nullif(value, {MISSING_VALUE}) AS value
        FROM long WHERE day <= day(last_day(make_date(year, month, 1)))"""
    return query


def raw_weather_blocked(con, rows: str, expected: int) -> list[str]:
    """RAW_WEATHER_AUDITS' blocking ones in one query (the range audit only warns, as in the job)."""
    keys = "county_fips, date, element"
    total, null_keys, duplicate_keys = _one_row(
        con,
        "SELECT count(*), count(*) FILTER (county_fips IS NULL OR date IS NULL OR element IS NULL), "
        f"(SELECT count(*) FROM (SELECT 1 FROM {rows} GROUP BY {keys} HAVING count(*) > 1)) FROM {rows}",
    )
    blocked = {
        "raw_weather_row_count_matches_source": total != expected,
        "raw_weather_no_null_keys": null_keys > 0,
        "raw_weather_no_duplicate_keys": duplicate_keys > 0,
    }
    return [name for name, failed in blocked.items() if failed]


def _hourly_actuals(con, raw_trips: Path, window: MonthWindow, zones, out_dir: Path) -> Path:
    target = actuals_file(out_dir, window.month)
    query = actuals_query(parquet_relation(raw_trips), window, zones)
    return _publish(con, query, target, lambda month: actuals_blocked(con, month, window.hours))


def eligible_zones() -> list[int]:
    """The job's eligible zones. Imported when asked: the asset module brings Dagster, which the floor's own
    process (``main``) does not need; ``month_ingestion`` hands it the zones."""
    from forecast_assets.assets.lakehouse_tables import eligible_zones as job_zones

    return job_zones()


def actuals_query(trips: str, window: MonthWindow, zones: Sequence[int] | None) -> str:
    """hourly_actuals from ``trips`` (a relation of raw_yellow's rows): every eligible zone with a ride in the
    month, every hour of it, zero without a ride."""
    start, end = f"TIMESTAMP '{window.start}'", f"TIMESTAMP '{window.end}'"
    eligible = ", ".join(map(str, zones or eligible_zones()))
    query = f"""
        WITH in_month AS (SELECT tpep_pickup_datetime AS pickup, pulocationid FROM {trips}
                          WHERE tpep_pickup_datetime >= {start} AND tpep_pickup_datetime < {end}),
             counts AS (SELECT date_trunc('hour', pickup) AS pickup_hour, pulocationid, count(*) AS total_rides
                        FROM in_month GROUP BY ALL),
             zones AS (SELECT DISTINCT pulocationid FROM in_month WHERE pulocationid IN ({eligible})),
             hours AS (SELECT unnest(generate_series({start}, {end} - INTERVAL 1 HOUR, INTERVAL 1 HOUR)) AS pickup_hour)
        SELECT pickup_hour, pulocationid::INTEGER AS pulocationid, coalesce(total_rides, 0)::BIGINT AS total_rides
        FROM hours CROSS JOIN zones LEFT JOIN counts USING (pickup_hour, pulocationid)"""
    return query


def actuals_blocked(con, rows: str, hours: int) -> list[str]:
    """ACTUALS_AUDITS, all blocking, in one query of three passes over the (small) month."""
    null_keys, duplicate_keys, zones, incomplete = _one_row(
        con,
        f"SELECT (SELECT count(*) FROM {rows} WHERE pickup_hour IS NULL OR pulocationid IS NULL), "
        f"(SELECT count(*) FROM (SELECT 1 FROM {rows} GROUP BY pickup_hour, pulocationid HAVING count(*) > 1)), "
        f"count(*), count(*) FILTER (hours != {hours}) "
        f"FROM (SELECT count(DISTINCT pickup_hour) AS hours FROM {rows} GROUP BY pulocationid)",
    )
    blocked = {
        "actuals_no_null_keys": null_keys > 0,
        "actuals_no_duplicate_keys": duplicate_keys > 0,
        "actuals_every_zone_has_every_hour": zones == 0 or incomplete > 0,
    }
    return [name for name, failed in blocked.items() if failed]


def pyarrow_actuals(
    raw_trips: Path | list[Path], month: str, zones: Sequence[int] | None = None
) -> tuple[float, pa.Table]:
    """The month's hourly actuals from raw_yellow Parquet files with pyarrow alone, and the seconds taken."""
    started = time.perf_counter()
    window = MonthWindow.from_partition_key(month)
    trips = pq.read_table(raw_trips, columns=["tpep_pickup_datetime", "pulocationid"])
    actuals = _with_every_hour(_rides_per_hour(trips, window), window, zones or eligible_zones())
    return time.perf_counter() - started, actuals


def _rides_per_hour(trips: pa.Table, window: MonthWindow) -> pa.Table:
    """``hour`` (counted from the month's start), ``pulocationid``, ``count_all``: the pickups inside the month."""
    micros = pc.cast(pc.cast(trips["tpep_pickup_datetime"], pa.timestamp("us")), pa.int64())
    start = _epoch_micros(window.start)
    in_month = pc.and_(pc.greater_equal(micros, start), pc.less(micros, _epoch_micros(window.end)))
    hour = pc.divide(pc.subtract(micros.filter(in_month), start), HOUR_MICROS)
    rides = pa.table({"hour": hour, "pulocationid": trips["pulocationid"].filter(in_month)})
    return rides.group_by(["hour", "pulocationid"]).aggregate([([], "count_all")])


def _with_every_hour(counts: pa.Table, window: MonthWindow, zones: Sequence[int]) -> pa.Table:
    present = pc.unique(counts["pulocationid"])
    kept = np.sort(present.filter(pc.is_in(present, pa.array(zones, pa.int32()))).to_numpy())
    grid = pa.table({"hour": np.repeat(np.arange(window.hours), len(kept)),
                     "pulocationid": pa.array(np.tile(kept, window.hours), pa.int32())})  # fmt: skip
    joined = grid.join(counts, ["hour", "pulocationid"], join_type="left outer")
    pickup_hour = pc.add(pc.multiply(joined["hour"], HOUR_MICROS), _epoch_micros(window.start))
    actuals = pa.table({
        "pickup_hour": pc.cast(pickup_hour, pa.timestamp("us")),
        "pulocationid": joined["pulocationid"],
        "total_rides": pc.fill_null(joined["count_all"], 0),
    })  # fmt: skip
    return actuals.sort_by([(key, "ascending") for key in ACTUALS_KEYS])


def _epoch_micros(wall_clock: datetime) -> int:
    return int(wall_clock.replace(tzinfo=UTC).timestamp()) * 1_000_000


def same_actuals(ours: pa.Table, floor: pa.Table) -> str | None:
    """None when both hold the same rows, cell for cell (storage order aside); else the first difference."""
    if ours.column_names != floor.column_names:
        return f"columns differ: {ours.column_names} against {floor.column_names}"
    if ours.num_rows != floor.num_rows:
        return f"{ours.num_rows} rows against {floor.num_rows}"
    ours, floor = _in_key_order(ours), _in_key_order(floor)
    for name in ours.column_names:
        mine, theirs = ours[name], floor[name]
        if mine.type != theirs.type:
            return f"{name} is {mine.type} against {theirs.type}"
        same = pc.or_(pc.fill_null(pc.equal(mine, theirs), False), pc.and_(pc.is_null(mine), pc.is_null(theirs)))
        if not pc.all(same).as_py():
            row = pc.index(same, False).as_py()
            key = ", ".join(f"{k}={ours[k][row]}" for k in ACTUALS_KEYS)
            return f"row {row} ({key}): {name} is {mine[row]} against {theirs[row]}"
    return None


def _in_key_order(actuals: pa.Table) -> pa.Table:
    # "UTC" and "+00:00" name the same zone: pyiceberg and DuckDB label it differently.
    columns = [pc.cast(c, pa.timestamp(c.type.unit, "UTC")) if pa.types.is_timestamp(c.type) and c.type.tz else c
               for c in actuals.columns]  # fmt: skip
    return pa.Table.from_arrays(columns, names=actuals.column_names).sort_by([(k, "ascending") for k in ACTUALS_KEYS])


# --- the Iceberg anchor: DuckDB and pyiceberg ---

NAMESPACE = "nyc_taxi"
AUDIT = "audit"
MONTH, SOURCE = "taxi.month", "taxi.source"  # snapshot properties of a publication: its month, what it was made of


class Anchor:
    """The month's three tables in one SQL catalog, each published through an audit branch."""

    def __init__(self, warehouse: Path, month: str, rewrite: bool) -> None:
        warehouse.mkdir(parents=True, exist_ok=True)
        self.catalog: Catalog = SqlCatalog(
            "anchor", uri=f"sqlite:///{warehouse / 'catalog.db'}", warehouse=warehouse.resolve().as_uri()
        )
        self.catalog.create_namespace_if_not_exists(NAMESPACE)
        self.folder, self.window, self.rewrite = warehouse, MonthWindow.from_partition_key(month), rewrite
        self.con = connect()
        self.published: list[str] = []

    def month_filter(self, table: Table, column: str) -> BooleanExpression:
        """The month's rows: a month string's, or a date's or timestamp's inside the month."""
        kind = table.schema().find_type(column)
        if isinstance(kind, StringType):
            return EqualTo(column, self.window.month)
        start, end = self.window.start, self.window.end
        if isinstance(kind, DateType):
            start, end = start.date(), end.date()
        return And(GreaterThanOrEqual(column, start.isoformat()), LessThan(column, end.isoformat()))

    def table(self, name: str, query: str, partition: tuple[str, Transform]) -> tuple[Table, str]:
        """The table, created from the month's first file when missing, and a new Parquet file of ``query``."""
        folder = self.folder / name / "data" / self.window.month
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{uuid.uuid4()}.parquet"
        self.con.execute(f"COPY ({query}) TO '{path}' {PARQUET}")
        identifier = f"{NAMESPACE}.{name}"
        if not self.catalog.table_exists(identifier):
            schema = pq.read_schema(path)
            table = self.catalog.create_table(identifier, schema=schema)
            with table.update_spec() as spec:
                spec.add_field(partition[0], partition[1])
            table.append(schema.empty_table())  # a branch starts from a snapshot: main's first is empty
        return self.catalog.load_table(identifier), str(path)

    def publication(self, table: Table) -> dict[str, str]:
        """The properties of the snapshot that last published this month to ``main``; empty when none did."""
        head = table.current_snapshot()
        for snapshot in ancestors_of(head, table.metadata) if head else ():
            properties = snapshot.summary.additional_properties if snapshot.summary else {}
            if properties.get(MONTH) == self.window.month:
                return {**properties, "snapshot": str(snapshot.snapshot_id)}
        return {}

    def unchanged(self, name: str, source: str) -> bool:
        identifier = f"{NAMESPACE}.{name}"
        if self.rewrite or not self.catalog.table_exists(identifier):
            return False
        return self.publication(self.catalog.load_table(identifier)).get(SOURCE) == source

    def publish(
        self, name: str, query: str, partition: tuple[str, Transform], source: str, blocked: Callable[[str], list[str]]
    ) -> Table:
        """The month written, added to the audit branch in place of its old files, audited there, published."""
        table, path = self.table(name, query, partition)
        if AUDIT in table.metadata.refs:  # left by a month held back
            table.manage_snapshots().remove_branch(AUDIT).commit()
        main = table.current_snapshot()
        assert main is not None
        table.manage_snapshots().create_branch(main.snapshot_id, AUDIT).commit()
        month = self.month_filter(table, partition[0])
        with table.transaction() as transaction:
            transaction.delete(month, branch=AUDIT)
            transaction.add_files([path], snapshot_properties={MONTH: self.window.month, SOURCE: source}, branch=AUDIT)
        staged = table.snapshot_by_name(AUDIT)
        assert staged is not None
        failed = blocked(self.rows(table, month, staged.snapshot_id))
        if failed:
            msg = f"{name} {self.window.month} not published: {', '.join(failed)} failed; it stays on branch {AUDIT}"
            raise HeldBack(msg)
        head = table.refresh().current_snapshot()
        if head is None or head.snapshot_id != main.snapshot_id:
            msg = f"{name}: main moved while {self.window.month} was audited; run the month again"
            raise RuntimeError(msg)
        table.manage_snapshots().set_current_snapshot(ref_name=AUDIT).remove_branch(AUDIT).commit()
        self.published.append(name)
        return table

    def rows(self, table: Table, month: BooleanExpression, snapshot_id: int | None = None) -> str:
        """The month's rows in the snapshot (main's head by default), as a DuckDB relation over their files."""
        tasks = table.scan(row_filter=month, snapshot_id=snapshot_id).plan_files()
        return parquet_relation([Path(task.file.file_path.removeprefix("file://")) for task in tasks])


def iceberg_month(
    month: str, files: MonthFiles, warehouse: Path, zones: Sequence[int] | None = None, rewrite: bool = False
) -> dict:
    """The job's steps for ``month`` into the anchor's tables: seconds per step, and what was published."""
    anchor, seconds = Anchor(warehouse, month, rewrite), {}
    started = time.perf_counter()

    def timed(step: str, action: Callable[[], object]) -> None:
        began = time.perf_counter()
        action()
        seconds[step] = time.perf_counter() - began

    verified: dict[str, tuple[int, str]] = {}
    timed("verify", lambda: verified.update(zip(("raw_yellow", "raw_green"), verify(files, month), strict=True)))

    def raw_trips(layout: TripLayout, path: Path) -> Callable[[], None]:
        table = f"raw_{layout.service}"
        rows, source = verified[table]
        facts = MonthFacts(anchor.window, expected_rows=rows)

        def step() -> None:
            if not anchor.unchanged(table, source):
                query = raw_trips_query(anchor.con, layout, path, source, anchor.window)
                blocked = lambda relation: raw_trips_blocked(anchor.con, layout, relation, facts)  # noqa: E731
                anchor.publish(table, query, ("source_month", IdentityTransform()), source, blocked)

        return step

    def raw_weather() -> None:
        source = ",".join(sorted(fingerprint(path) for path in files.weather))
        if not anchor.unchanged("raw_weather", source):
            expected = weather_rows(files.weather, anchor.window)
            blocked = lambda rows: raw_weather_blocked(anchor.con, rows, expected)  # noqa: E731
            anchor.publish("raw_weather", raw_weather_query(files.weather), ("date", MonthTransform()), source, blocked)

    def hourly_actuals() -> None:
        trips = anchor.catalog.load_table(f"{NAMESPACE}.raw_yellow")
        source = anchor.publication(trips)["snapshot"]  # the counts are of the month raw_yellow publishes now
        if not anchor.unchanged("yellow_rides_hourly_actuals", source):
            query = actuals_query(anchor.rows(trips, anchor.month_filter(trips, "source_month")), anchor.window, zones)
            blocked = lambda rows: actuals_blocked(anchor.con, rows, anchor.window.hours)  # noqa: E731
            partition = ("pickup_hour", MonthTransform())
            anchor.publish("yellow_rides_hourly_actuals", query, partition, source, blocked)

    timed("raw_yellow", raw_trips(YELLOW, files.trips))
    timed("raw_green", raw_trips(GREEN, files.green))
    timed("raw_weather", raw_weather)
    timed("hourly_actuals", hourly_actuals)
    seconds["total"] = time.perf_counter() - started
    anchor.con.close()
    return {"seconds": seconds, "published": anchor.published}


def anchor_actuals(warehouse: Path, month: str) -> pa.Table:
    """The anchor's hourly actuals of ``month`` on ``main``, as pyiceberg reads them."""
    anchor = Anchor(warehouse, month, rewrite=False)
    table = anchor.catalog.load_table(f"{NAMESPACE}.yellow_rides_hourly_actuals")
    return table.scan(row_filter=anchor.month_filter(table, "pickup_hour")).to_arrow()


# --- bare Spark ---

BARE_SPARK = """
import json, sys, time
from pathlib import Path
started = time.perf_counter()
from pyspark.sql import SparkSession, functions as F
from forecast_assets.lakehouse.spark_session import SparkOptions, spark_conf
from taxi_core.catalog import CatalogConfig
from taxi_core.settings import load_settings
settings = load_settings()
from forecast_assets.lakehouse.class_archive import ClassArchive
conf = spark_conf(CatalogConfig.from_settings(settings), settings.state_dir, SparkOptions.from_settings(settings))
# Started from the class archive, as the project's runs are (a first round records it).
folder = settings.state_dir / "tmp" / "spark-classes"
archive = ClassArchive.for_spark(folder, conf.get("spark.driver.extraClassPath", ""))
options = archive.java_options()
conf["spark.driver.extraJavaOptions"] = conf.get("spark.driver.extraJavaOptions", "") + " " + options
builder = SparkSession.builder
for key, value in conf.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
if archive.records(options):
    archive.recording_by(spark._jvm.java.lang.ProcessHandle.current().pid())
spark.sql("CREATE NAMESPACE IF NOT EXISTS floor")
ready = time.perf_counter()
yellow, green, weather = sys.argv[1], sys.argv[2], sys.argv[3:]
steps = {}
def timed(name, action):
    began = time.perf_counter()
    action()
    steps[name] = time.perf_counter() - began
timed("raw_green", lambda: spark.read.parquet(green).writeTo("floor.raw_green").createOrReplace())
timed("raw_yellow", lambda: spark.read.parquet(yellow).writeTo("floor.raw_yellow").createOrReplace())
timed("raw_weather", lambda: spark.read.csv(weather).writeTo("floor.raw_weather").createOrReplace())
hour = F.date_trunc("hour", "tpep_pickup_datetime").alias("pickup_hour")
counts = lambda: spark.table("floor.raw_yellow").groupBy(hour, "PULocationID").count()
timed("hourly_actuals", lambda: counts().writeTo("floor.actuals").createOrReplace())
steps["spark_start"] = ready - started
steps["total"] = time.perf_counter() - started
print(json.dumps({"seconds": steps}))
"""


def month_parser(description: str | None) -> argparse.ArgumentParser:
    """The arguments of a script that does one month's work on staged files: the month, its files, the zones."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--month", required=True, help="YYYY-MM")
    parser.add_argument("--trips", type=Path, required=True, help="the staged trip file")
    parser.add_argument("--weather", type=Path, nargs="+", required=True, help="the staged weather files")
    parser.add_argument("--green", type=Path, required=True, help="the staged green-taxi trip file")
    parser.add_argument("--zones", help="the eligible zones, comma-separated (default: the job's)")
    return parser


def parsed_zones(text: str | None) -> list[int] | None:
    return [int(zone) for zone in text.split(",")] if text else None


def main() -> int:
    parser = month_parser(__doc__)
    parser.add_argument("--way", choices=("duckdb", "anchor", "bare-spark"), default="duckdb")
    parser.add_argument("--out", type=Path, help="duckdb: where the tables are written; anchor: its catalog and tables")
    parser.add_argument("--ordered", action="store_true", help="duckdb: DuckDB's default of ordered, one-writer writes")
    parser.add_argument("--rewrite", action="store_true", help="anchor: publish the month again even when unchanged")
    args = parser.parse_args()
    zones, files = parsed_zones(args.zones), MonthFiles(args.trips, args.weather, args.green)
    if args.way == "bare-spark":
        command = [sys.executable, "-c", BARE_SPARK, str(files.trips), str(files.green), *map(str, files.weather)]
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        print(done.stdout.strip().splitlines()[-1])
        return 0
    if args.out is None:
        parser.error(f"--way {args.way} needs --out")
    if args.way == "anchor":
        print(json.dumps(iceberg_month(args.month, files, args.out, zones, args.rewrite)))
        return 0
    run = duckdb_month(args.month, files, args.out, zones=zones, ordered=args.ordered)
    print(json.dumps({"seconds": run.seconds, "actuals": str(actuals_file(args.out, args.month))}))
    return 0


def actuals_file(out_dir: Path, month: str) -> Path:
    """Where ``duckdb_month`` publishes the month's hourly actuals under ``out_dir``."""
    return out_dir / "yellow_rides_hourly_actuals" / f"pickup_hour_month={month}" / "data.parquet"


if __name__ == "__main__":
    raise SystemExit(main())
