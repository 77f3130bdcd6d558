"""Any history of writes to a partitioned Iceberg table, then whole-table reads: each read's lineage is every
partition it read, each at the snapshot that wrote it, down to the file that write was built from.

Real pyiceberg tables (a SQL catalog on SQLite in a temporary folder; no JVM). Hypothesis draws histories: months
written in any order, a month replaced (republished), appended to a second time or deleted, and reads over a
window of months at any point. The truth is the test's own record of what each commit did (the snapshot it made
and the file it was built from) and the rows each read returned; the claims are ``partitions_read`` (from the
table's manifests), the events' facets (valid against the official schemas), the lineage index's version tree
down to the files, and ``diff`` between two reads.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from uuid import uuid4

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openlineage.client.event_v2 import RunState
from openlineage.client.serde import Serde
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import MonthTransform
from pyiceberg.types import LongType, NestedField, TimestampType

from bridge.index import queries
from bridge.index.lineage_index import LineageIndex
from bridge.index.model_versions import Input, PartitionRead, Source, partition_changes, trained_versions
from bridge.outbox.outbox import Outbox
from bridge.sources.iceberg_contents import partitions_read
from bridge.translate.events import DatasetRef, EventSpec, JobRef, ModelTraining, event_key, run_event
from bridge.translate.naming import IcebergTables, Naming
from tests.openlineage_schema import validation_errors

MONTHS = ["2024-10", "2024-11", "2024-12", "2025-01"]
NAMING = Naming(
    tables=IcebergTables("/warehouse"),
    table_namespaces=("shop",),
    locations={"files": "/staging/files", "model": "/models/demand"},
    job_namespace="truth",
)
TABLE, FILES, MODEL = "shop.rides", "/staging/files", "/models/demand"
SCHEMA = Schema(
    NestedField(1, "pickup_hour", TimestampType(), required=False),  # New York wall-clock time, as the actuals
    NestedField(2, "total_rides", LongType(), required=False),
)
SPEC = PartitionSpec(PartitionField(source_id=1, field_id=1000, transform=MonthTransform(), name="pickup_hour_month"))

operations = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["write", "append", "delete"]), st.sampled_from(MONTHS)),
        st.tuples(st.just("read"), st.sampled_from(range(len(MONTHS))), st.sampled_from(range(1, len(MONTHS) + 1))),
    ),
    min_size=2,
    max_size=9,
)


def _start(month: str) -> datetime:
    return datetime.strptime(month, "%Y-%m")


def _window(first: int, last: int):
    """Rows from the first month's start to the last month's start (``last`` past the end: to the end)."""
    low = GreaterThanOrEqual("pickup_hour", _start(MONTHS[first]).isoformat())
    if last >= len(MONTHS):
        return low
    return And(low, LessThan("pickup_hour", _start(MONTHS[last]).isoformat()))


def _rows(month: str, count: int, rides: int) -> pa.Table:
    start = _start(month)
    hours = [start.replace(day=1 + day, hour=hour) for day in range(count) for hour in (0, 12)]
    return pa.table({"pickup_hour": pa.array(hours, pa.timestamp("us")), "total_rides": [rides] * len(hours)})


class History:
    """A real table, what each commit really did, and the lineage events a pipeline would have sent."""

    def __init__(self, folder: Path) -> None:
        catalog = SqlCatalog("truth", uri=f"sqlite:///{folder}/catalog.db", warehouse=f"file://{folder}/warehouse")
        catalog.create_namespace("shop")
        self.table = catalog.create_table(TABLE, schema=SCHEMA, partition_spec=SPEC)
        self.written: dict[str, set[str]] = {}  # month -> the snapshots whose files it holds
        self.built_from: dict[str, str] = {}  # snapshot -> the file's fingerprint it was built from
        self.events: list[tuple[str, str]] = []
        self.reads: list[tuple[str, dict[str, set[str]]]] = []  # model version, truth: month -> snapshots
        self.clock = 0

    def _moment(self) -> datetime:
        self.clock += 1
        return datetime(2026, 1, 1, tzinfo=UTC).replace(minute=self.clock % 60, hour=self.clock // 60)

    def _emit(self, job: str, inputs: list[DatasetRef], outputs: list[DatasetRef], model: ModelTraining | None) -> None:
        ref = JobRef("truth", job, uuid4())
        for state in (RunState.START, RunState.COMPLETE):
            spec = EventSpec(state, self._moment(), ref, "TEST", "JOB", inputs, outputs,
                             model=model if state == RunState.COMPLETE else None)  # fmt: skip
            event = json.loads(Serde.to_json(run_event(spec)))
            assert validation_errors(event) == []
            self.events.append((event_key(spec), json.dumps(event)))

    def apply(self, operation: tuple) -> None:
        kind, *args = operation
        if kind == "read":
            self.read(*args)
            return
        month = args[0]
        number = len(self.built_from) + 1
        if kind == "delete":
            self.table.delete(_window(MONTHS.index(month), MONTHS.index(month) + 1))
            self.written.pop(month, None)
            return
        rows = _rows(month, 1 + number % 3, number)
        if kind == "write":  # replace the month, as a republished file does
            window = _window(MONTHS.index(month), MONTHS.index(month) + 1)
            self.table.overwrite(rows, overwrite_filter=window)
            self.written[month] = set()
        else:
            self.table.append(rows)
        snapshot = str(self.table.current_snapshot().snapshot_id)
        self.written.setdefault(month, set()).add(snapshot)
        self.built_from[snapshot] = f"sha256:{number:064x}"
        files = DatasetRef(NAMING.asset(["files"]), self.built_from[snapshot])
        self._emit("ingest.rides", [files], [DatasetRef(NAMING.table(TABLE), snapshot)], None)

    def read(self, first: int, last: int) -> None:
        current = self.table.current_snapshot()
        if current is None:
            return
        window = _window(first, last)
        rows = self.table.scan(row_filter=window, snapshot_id=current.snapshot_id).to_arrow()
        months = {f"{moment:%Y-%m}" for moment in rows.column("pickup_hour").to_pylist()}
        truth = {month: set(self.written[month]) for month in months}
        parts = partitions_read(self.table, current.snapshot_id, window)
        said: dict[str, set[str]] = {}
        for part in parts:
            said.setdefault(part.partition.rpartition("=")[2], set()).add(part.version)
        assert said == truth
        assert all(dict(part.dimensions) == {"pickup_hour_month": part.partition[-7:]} for part in parts)
        version = f"Train/{len(self.reads) + 1}"
        table = DatasetRef(NAMING.table(TABLE), str(current.snapshot_id), partitions=parts)
        model = DatasetRef(NAMING.asset(["model"]), version)
        self._emit("Train", [table], [model], ModelTraining("demand", version))
        self.reads.append((version, truth))


def _index(folder: Path, events: list[tuple[str, str]]) -> LineageIndex:
    outbox = Outbox(folder / "outbox.sqlite")
    with outbox.queue.batch("truth") as batch:
        for key, payload in events:
            batch.add(key, payload)
    return LineageIndex(folder / "index.sqlite", outbox)


@pytest.mark.filterwarnings("ignore::UserWarning")  # pyiceberg warns that the delete rewrote no file
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=operations)
def test_a_whole_table_read_is_built_from_every_partition_at_its_writer(history):
    with tempfile.TemporaryDirectory() as folder:
        world = History(Path(folder))
        for operation in [*history, ("read", 0, len(MONTHS))]:
            world.apply(operation)
        with _index(Path(folder), world.events).reading() as connection:
            for version, truth in world.reads:
                tree = queries.version_tree(connection, MODEL, version)
                [read] = tree.read
                if not truth:  # an empty read (every month deleted) has no partitions to follow
                    assert read.partitions == []
                    continue
                found: dict[str, set[tuple[str, str]]] = {}
                for part in read.partitions:
                    [source] = part.sources()
                    assert source.dataset == FILES
                    found.setdefault(part.partition.rpartition("=")[2], set()).add((part.version, source.version))
                assert found == {
                    month: {(snapshot, world.built_from[snapshot]) for snapshot in snapshots}
                    for month, snapshots in truth.items()
                }
            versions = trained_versions(queries.trained_events(connection))
    assert [v.version for v in versions] == [version for version, _ in world.reads]
    for (before, old), (after, new), first, second in zip(
        world.reads, world.reads[1:], versions, versions[1:], strict=False
    ):
        _, changed = partition_changes(_only(first.inputs), _only(second.inputs))
        said = {(how, name.rpartition("=")[2].rstrip("]")) for how, names in changed.items() for name in names}
        want = {("replaced", m) for m in old.keys() & new.keys() if old[m] != new[m]}
        want |= {("added", m) for m in new.keys() - old.keys()} | {("removed", m) for m in old.keys() - new.keys()}
        assert said == want, (before, after)


def _only(inputs: tuple[Input, ...]) -> Input:
    [found] = inputs
    return found


@dataclass(frozen=True)
class _Writer:
    """A writing run as the lineage index describes it."""

    text: str

    def describe(self, brief: bool = False) -> str:
        return self.text


def test_partition_reads_name_their_versions_in_each_summary_sentence():
    """``diff`` in words: same, replaced (old and new source, and who wrote the new one), added, removed."""

    def read(*parts: tuple[str, str, str]) -> Input:
        found = tuple(
            PartitionRead(f"m={month}", version, 1, _Writer(f"run {version}"), (Source(FILES, fingerprint),))
            for month, version, fingerprint in parts
        )
        return Input(TABLE, "head", found)

    before = read(("2024-11", "1", "sha256:a"), ("2024-12", "2", "sha256:b"), ("2025-01", "3", "sha256:c"))
    after = read(("2024-12", "4", "sha256:d"), ("2025-01", "3", "sha256:c"), ("2025-02", "5", "sha256:e"))
    lines, changed = partition_changes(before, after)
    assert changed == {"replaced": [f"{TABLE} [m=2024-12]"], "added": [f"{TABLE} [m=2025-02]"],
                       "removed": [f"{TABLE} [m=2024-11]"]}  # fmt: skip
    by_month = {line.split("]")[0].rpartition("=")[2]: line for line in lines}
    assert "removed" in by_month["2024-11"] and "sha256:a" in by_month["2024-11"]
    assert "sha256:b" in by_month["2024-12"] and "sha256:d" in by_month["2024-12"]
    assert "written by run 4" in by_month["2024-12"]
    assert "same" in by_month["2025-01"] and "added" in by_month["2025-02"]


def test_a_read_whose_partitions_cannot_be_told_is_recorded_without_them(tmp_path, caplog):
    """Lineage never fails the read it records: a snapshot the table no longer has gives no partitions, and a
    warning that names the table and the snapshot."""
    from bridge.sources.iceberg_contents import partitions_for_lineage

    world = History(tmp_path)
    world.apply(("write", "2024-11"))
    assert partitions_for_lineage(world.table, 42) == ()
    assert "shop.rides snapshot 42" in caplog.text
