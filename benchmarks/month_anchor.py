"""The Iceberg-to-Iceberg anchor under the monthly ingestion: the job's tables for one month with DuckDB and
pyiceberg, no Spark and no Dagster.

For each table DuckDB writes the month as one zstd Parquet file (``month_floor``'s queries); pyiceberg
registers it with ``add_files`` on an ``audit`` branch of the table, in the same commit as the month's old
files leave that branch; the floor's audits read the branch's files; and ``main`` is fast-forwarded to the
branch, which is then dropped. The catalog is pyiceberg's SQL catalog on SQLite in ``--warehouse``.

Each publication records the month's source fingerprint (the actuals: the raw_yellow snapshot they were
counted from). A month whose fingerprints match what ``main`` holds is left alone unless ``--rewrite``,
as the job leaves it unless ``rewrite_unchanged``. Run as a script, one month in this new process, as
``month_ingestion`` times it; prints its seconds as JSON:

    python benchmarks/month_anchor.py --month 2025-01 --trips FILE --green FILE --weather FILE ... --warehouse DIR
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import pyarrow.parquet as pq
from month_floor import (
    PARQUET,
    HeldBack,
    MonthFiles,
    actuals_blocked,
    actuals_query,
    connect,
    fingerprint,
    month_parser,
    parquet_relation,
    parsed_zones,
    raw_trips_blocked,
    raw_trips_query,
    raw_weather_blocked,
    raw_weather_query,
    verify,
    weather_rows,
)
from pyiceberg.catalog import Catalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import And, BooleanExpression, EqualTo, GreaterThanOrEqual, LessThan
from pyiceberg.table import Table
from pyiceberg.table.snapshots import ancestors_of
from pyiceberg.transforms import IdentityTransform, MonthTransform, Transform
from pyiceberg.types import DateType, StringType

from forecast_assets.audits import MonthFacts
from forecast_assets.source_specs.green_trips import GREEN
from forecast_assets.source_specs.yellow_trips import YELLOW
from forecast_assets.sources.tlc_format import TripLayout
from taxi_core.months import MonthWindow

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


def published_actuals(warehouse: Path, month: str):
    """The anchor's hourly actuals of ``month`` on ``main``, as pyiceberg reads them."""
    anchor = Anchor(warehouse, month, rewrite=False)
    table = anchor.catalog.load_table(f"{NAMESPACE}.yellow_rides_hourly_actuals")
    return table.scan(row_filter=anchor.month_filter(table, "pickup_hour")).to_arrow()


def main() -> int:
    parser = month_parser(__doc__)
    parser.add_argument("--warehouse", type=Path, required=True, help="the anchor's catalog and tables")
    parser.add_argument("--rewrite", action="store_true", help="publish the month again even when unchanged")
    args = parser.parse_args()
    zones = parsed_zones(args.zones)
    done = iceberg_month(
        args.month, MonthFiles(args.trips, args.weather, args.green), args.warehouse, zones, args.rewrite
    )
    print(json.dumps(done))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
