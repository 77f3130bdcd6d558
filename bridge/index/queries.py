"""Questions asked of the lineage index: the graph, last runs, current versions, and versioned trees.

A dataset version's tree is the run that wrote it and, for each dataset version that run read, the
run that wrote that, and so on: the lineage exactly as each run read it. A column's tree follows
the column lineage the same way, version by version.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from bridge.index.graph_view import LineageGraph, RunSummary, ToolRunName
from bridge.wording import short, when


def graph(connection: sqlite3.Connection) -> LineageGraph:
    nodes = dict(connection.execute("SELECT name, kind FROM nodes"))
    return LineageGraph(
        labels={name: name for name in nodes},
        kinds=nodes,
        edges=set(connection.execute("SELECT source, target FROM edges")),
    )


def reach(connection: sqlite3.Connection, node: str) -> tuple[int, int]:
    """How many nodes lie upstream and downstream of ``node`` (from the closure table)."""
    up = connection.execute("SELECT count(*) FROM closure WHERE descendant = ?", (node,)).fetchone()[0]
    down = connection.execute("SELECT count(*) FROM closure WHERE ancestor = ?", (node,)).fetchone()[0]
    return up, down


def last_runs(connection: sqlite3.Connection) -> dict[str, RunSummary]:
    """Each job's newest run (by start)."""
    rows = connection.execute(
        "SELECT job, status, coalesce(started, finished), finished, orchestrator, tool_run_id, task, partition_key"
        " FROM runs ORDER BY coalesce(started, finished)"
    )
    return {
        job: RunSummary(status or "RUNNING", started, finished, ToolRunName.of(*tool_run))
        for job, status, started, finished, *tool_run in rows
    }


def current_versions(connection: sqlite3.Connection) -> dict[str, str]:
    """Each dataset's version written last by a completed run."""
    rows = connection.execute(
        """SELECT io.dataset, io.version FROM io JOIN runs USING (run_id)
           WHERE io.direction = 'output' AND io.version IS NOT NULL ORDER BY runs.finished"""
    )
    return dict(rows)


@dataclass(frozen=True)
class Run:
    run_id: str
    job: str
    parent_run_id: str | None
    status: str | None
    started: str | None
    finished: str | None
    orchestrator: str | None = None  # the run as its tool names it, to find it there
    tool_run_id: str | None = None
    task: str | None = None
    partition: str | None = None

    def describe(self, brief: bool = False) -> str:
        """``job (run ID, COMPLETE time; Dagster run ...)``; ``brief``: ids shortened, the time to the second."""
        name = ToolRunName.of(self.orchestrator, self.tool_run_id, self.task, self.partition)
        tool = f"; {name.label(brief)}" if name else ""
        moment = self.finished or self.started
        at = (when(moment) if moment else "") if brief else moment or ""
        run = short(self.run_id) if brief else self.run_id
        return f"{self.job} (run {run}, {self.status or 'RUNNING'} {at}{tool})"


def _run(connection: sqlite3.Connection, run_id: str) -> Run | None:
    row = connection.execute(
        "SELECT run_id, job, parent_run_id, status, started, finished, orchestrator, tool_run_id, task, partition_key"
        " FROM runs WHERE run_id = ?",
        (run_id,),
    ).fetchone()
    return Run(*row) if row else None


def datasets_read(connection: sqlite3.Connection, run_id: str) -> list[tuple[str, str | None]]:
    rows = connection.execute(
        "SELECT dataset, version FROM io WHERE run_id = ? AND direction = 'input' ORDER BY dataset", (run_id,)
    )
    return list(rows)


@dataclass(frozen=True)
class PartitionWrite:
    """What one partition of a table version holds: the version that wrote it last, its run, and what that run read
    (each input at its version: a source file at its fingerprint, a table at its snapshot)."""

    partition: str | None  # None: the run wrote the table whole
    version: str
    run_id: str
    read: tuple[tuple[str, str | None], ...]

    def to_json(self) -> dict[str, Any]:
        return {"partition": self.partition, "version": self.version, "run_id": self.run_id, "read": dict(self.read)}


def contents_at(connection: sqlite3.Connection, dataset: str, version: str) -> dict[str | None, PartitionWrite]:
    """What ``dataset`` at ``version`` holds, partition by partition: of the completed writes up to the one that made
    ``version``, in the order they finished, each partition's latest (a whole-table write replaces them all)."""
    # A write a child run also names (a Dagster run and its step; a run of a range and its runs per partition) is
    # the child's: the parent names no partition of its own, which would read as a write of the whole table. Runs
    # of a range's months that end in the same millisecond are in the order the range wrote them, its months'.
    rows = connection.execute(
        """SELECT io.version, runs.run_id, runs.partition_key FROM io JOIN runs USING (run_id)
           WHERE io.dataset = ? AND io.direction = 'output' AND io.version IS NOT NULL AND runs.status = 'COMPLETE'
             AND NOT EXISTS (SELECT 1 FROM runs AS child JOIN io AS named ON named.run_id = child.run_id
                             WHERE child.parent_run_id = runs.run_id AND named.dataset = io.dataset
                               AND named.version = io.version AND named.direction = 'output')
           ORDER BY runs.finished, runs.partition_key, runs.run_id""",
        (dataset,),
    ).fetchall()
    held: dict[str | None, PartitionWrite] = {}
    for written, run_id, partition in rows:
        if partition is None:
            held.clear()
        if partition not in held or held[partition].version != written:  # a step and its job name one write
            by = writer(connection, dataset, written)  # the run that says what it read
            run_id = by.run_id if by is not None else run_id
            read = tuple((name, at) for name, at in datasets_read(connection, run_id) if name != dataset)
            held[partition] = PartitionWrite(partition, written, run_id, read)
        if written == version:
            return held
    return held


def versions_of(connection: sqlite3.Connection, dataset: str) -> list[str]:
    rows = connection.execute(
        """SELECT DISTINCT io.version FROM io JOIN runs USING (run_id)
           WHERE io.dataset = ? AND io.direction = 'output' AND io.version IS NOT NULL ORDER BY runs.finished""",
        (dataset,),
    )
    return [version for (version,) in rows]


def writer(connection: sqlite3.Connection, dataset: str, version: str) -> Run | None:
    """The run that wrote ``dataset`` at ``version`` and says what it read.

    A step that recorded its reads (a Dagster asset step) is the most exact; a step that read nothing
    itself (a Metaflow step fed by artifacts) stands for its run, whose event names the run's reads.
    Of runs that name the same version as output (a later run found it unchanged), the first wrote it.
    """
    rows = connection.execute(
        """SELECT runs.run_id, runs.parent_run_id,
                  (SELECT count(*) FROM io AS reads WHERE reads.run_id = runs.run_id AND reads.direction = 'input')
           FROM io JOIN runs USING (run_id)
           WHERE io.dataset = ? AND io.version = ? AND io.direction = 'output' AND runs.status = 'COMPLETE'
           ORDER BY runs.finished, runs.run_id""",
        (dataset, version),
    ).fetchall()
    if not rows:
        return None
    run_id, _, _ = max(rows, key=lambda r: (r[2] > 0, r[1] is not None))  # the first of the best
    return _run(connection, run_id)


def partitions_read(connection: sqlite3.Connection, run_id: str, dataset: str) -> list[tuple[str, str]]:
    """The partitions ``run_id`` read of ``dataset``, each with the version that wrote it; none for a plain read."""
    rows = connection.execute(
        "SELECT partition, version FROM parts WHERE run_id = ? AND dataset = ? ORDER BY partition, version",
        (run_id, dataset),
    )
    return list(rows)


@dataclass
class VersionNode:
    """A dataset version, the run that wrote it, and the dataset versions that run read.

    A version read as partitions (a whole-table read of a partitioned table) is made of ``partitions``:
    one node per partition read, each at the version that wrote it, with that version's own lineage.
    """

    dataset: str
    version: str | None
    written_by: Run | None = None
    read: list[VersionNode] = field(default_factory=list)
    repeated: bool = False
    partition: str | None = None  # the partition this node is, inside the version read whole
    partitions: list[VersionNode] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "version": self.version,
            "partition": self.partition,
            "written_by": None if self.written_by is None else vars(self.written_by),
            "read": [node.to_json() for node in self.read],
            "partitions": [node.to_json() for node in self.partitions],
            "repeated": self.repeated,
        }

    def sources(self) -> list[VersionNode]:
        """The versions at the bottom of this one's lineage: what no recorded run made from anything else."""
        if self.repeated:
            return []
        below = [*self.read, *self.partitions]
        return [self] if not below else [source for node in below for source in node.sources()]


def version_tree(connection: sqlite3.Connection, dataset: str, version: str | None) -> VersionNode:
    seen: set[tuple[str, str | None, str | None]] = set()

    def visit(name: str, at: str | None, partition: str | None = None) -> VersionNode:
        key = (name, at, partition)
        node = VersionNode(name, at, repeated=key in seen, partition=partition)
        seen.add(key)
        if at is None or node.repeated:
            return node
        node.written_by = writer(connection, name, at)
        if node.written_by is not None:
            run_id = node.written_by.run_id
            node.read = [read(run_id, d, v) for d, v in datasets_read(connection, run_id) if d != name]
        return node

    def read(run_id: str, name: str, at: str | None) -> VersionNode:
        parts = partitions_read(connection, run_id, name)
        if not parts:
            return visit(name, at)
        return VersionNode(name, at, partitions=[visit(name, version, partition) for partition, version in parts])

    return visit(dataset, version)


@dataclass
class ColumnNode:
    """A column of a dataset version and the input columns it comes from, with how."""

    dataset: str
    column: str
    version: str | None
    how: tuple[str, ...] = ()
    origins: list[ColumnNode] = field(default_factory=list)
    repeated: bool = False
    partition: str | None = None  # the partition of the version read whole that this column's values came from

    @property
    def name(self) -> str:
        where = f" [{self.partition}]" if self.partition else ""
        return f"{self.dataset}.{self.column}{where}"

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "column": self.column,
            "version": self.version,
            "partition": self.partition,
            "transformations": list(self.how),
            "origins": [o.to_json() for o in self.origins],
            "repeated": self.repeated,
        }


def column_versions(connection: sqlite3.Connection, dataset: str) -> list[str]:
    rows = connection.execute(
        """SELECT DISTINCT columns.version FROM columns JOIN runs USING (run_id)
           WHERE columns.dataset = ? ORDER BY runs.finished""",
        (dataset,),
    )
    return [version for (version,) in rows]


def columns_of(connection: sqlite3.Connection, dataset: str) -> set[str]:
    rows = connection.execute("SELECT DISTINCT column_name FROM columns WHERE dataset = ?", (dataset,))
    return {column for (column,) in rows}


def column_origins(
    connection: sqlite3.Connection, dataset: str, version: str, column: str
) -> list[tuple[str, str, str | None, tuple[str, ...]]]:
    """``(input dataset, input column, the input's version read, transformations)`` for one column."""
    rows = connection.execute(
        """SELECT c.input_dataset, c.input_column, c.transformations,
                  (SELECT io.version FROM io WHERE io.run_id = c.run_id AND io.direction = 'input'
                   AND io.dataset = c.input_dataset)
           FROM columns AS c WHERE c.dataset = ? AND c.version = ? AND c.column_name = ?""",
        (dataset, version, column),
    )
    merged: dict[tuple[str, str], tuple[set[str], str | None]] = {}
    for input_dataset, input_column, transformations, read_version in rows:
        kinds, known = merged.get((input_dataset, input_column), (set(), None))
        merged[(input_dataset, input_column)] = (kinds | set(json.loads(transformations)), known or read_version)
    return [(d, c, v, tuple(sorted(k))) for (d, c), (k, v) in sorted(merged.items())]


def column_partitions(
    connection: sqlite3.Connection, dataset: str, version: str, input_dataset: str
) -> list[tuple[str, str]]:
    """The partitions of ``input_dataset`` the run(s) that wrote ``dataset`` at ``version`` read, each at the version
    that wrote it; none when the input was not read as partitions."""
    rows = connection.execute(
        """SELECT DISTINCT p.partition, p.version FROM columns AS c
           JOIN parts AS p ON p.run_id = c.run_id AND p.dataset = c.input_dataset
           WHERE c.dataset = ? AND c.version = ? AND c.input_dataset = ? ORDER BY p.partition, p.version""",
        (dataset, version, input_dataset),
    )
    return list(rows)


def column_tree(
    connection: sqlite3.Connection, dataset: str, column: str, version: str | None, direct_only: bool = False
) -> ColumnNode:
    """The upstream columns of ``dataset.column`` at ``version`` (default: the newest with column lineage); an input
    read as partitions is followed into each partition, at the version that wrote it."""
    seen: set[tuple[str, str, str | None, str | None]] = set()

    def visit(name: str, col: str, at: str | None, how: tuple[str, ...], partition: str | None = None) -> ColumnNode:
        key = (name, col, at, partition)
        node = ColumnNode(name, col, at, how, repeated=key in seen, partition=partition)
        seen.add(key)
        if node.repeated:
            return node
        known = column_versions(connection, name)
        if at is None and known:
            at = node.version = known[-1]
        if at not in known:  # a source file, or a version written before column lineage was recorded
            return node
        for input_dataset, input_column, read_version, kinds in column_origins(connection, name, at, col):
            if direct_only and not any(kind.startswith("DIRECT") for kind in kinds):
                continue
            parts = column_partitions(connection, name, at, input_dataset)
            if not parts:
                node.origins.append(visit(input_dataset, input_column, read_version, kinds))
            for partition, part_version in parts:
                node.origins.append(visit(input_dataset, input_column, part_version, kinds, partition))
        return node

    return visit(dataset, column, version, ())


def trained_events(connection: sqlite3.Connection) -> list[dict[str, Any]]:
    return [json.loads(payload) for (payload,) in connection.execute("SELECT payload FROM trained")]


Versions = list[tuple[str, str | None]]  # datasets, each at a version (if known)


def run_steps(connection: sqlite3.Connection, run_id: str) -> list[tuple[Run, Versions, Versions]]:
    """The completed steps of a run, in order, each with the dataset versions it read and wrote."""
    steps = connection.execute(
        "SELECT run_id FROM runs WHERE parent_run_id = ? AND status = 'COMPLETE' ORDER BY finished", (run_id,)
    ).fetchall()
    result: list[tuple[Run, Versions, Versions]] = []
    for (step_id,) in steps:
        io: dict[str, Versions] = defaultdict(list)
        for direction, dataset, version in connection.execute(
            "SELECT direction, dataset, version FROM io WHERE run_id = ? ORDER BY dataset", (step_id,)
        ):
            io[direction].append((dataset, version))
        step = _run(connection, step_id)
        if step is None:  # an internal invariant: the step was read from the runs table a moment ago
            raise LookupError(f"Run {step_id} is no longer in the lineage index")
        result.append((step, io["input"], io["output"]))
    return result


def outputs_of_run(connection: sqlite3.Connection, run_id: str) -> list[str]:
    rows = connection.execute(
        "SELECT DISTINCT dataset FROM io WHERE direction = 'output' AND (run_id = ? OR run_id IN "
        "(SELECT run_id FROM runs WHERE parent_run_id = ?)) ORDER BY dataset",
        (run_id, run_id),
    )
    return [dataset for (dataset,) in rows]


def written_by_run(connection: sqlite3.Connection, run_id: str, dataset: str) -> str | None:
    """The version of ``dataset`` that run ``run_id`` (or one of its steps) wrote."""
    row = connection.execute(
        "SELECT version FROM io WHERE direction = 'output' AND dataset = ? AND version IS NOT NULL AND (run_id = ? "
        "OR run_id IN (SELECT run_id FROM runs WHERE parent_run_id = ?))",
        (dataset, run_id, run_id),
    ).fetchone()
    return row[0] if row else None


def column_lineage_of(connection: sqlite3.Connection, node: VersionNode) -> set[str]:
    """A dataset version's column lineage as ``column <- input.column`` lines (direct origins only)."""
    rows = connection.execute(
        "SELECT column_name, input_dataset, input_column, transformations FROM columns "
        "WHERE dataset = ? AND version = ?",
        (node.dataset, node.version),
    )
    return {
        f"{column} <- {dataset}.{source}"
        for column, dataset, source, kinds in rows
        if any(kind.startswith("DIRECT") for kind in json.loads(kinds))
    }
