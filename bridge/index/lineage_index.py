"""A lineage index over the queued OpenLineage events, so the command line answers in milliseconds.

:func:`event_facts` (pure) reads one event into what the index keeps: the job-level graph (the union
over runs, as DataHub shows it) with a closure table of every ancestor/descendant pair and its
distance, each run's state and times, the dataset versions each run read and wrote, column lineage
per dataset version, and the runs that trained a model. :class:`LineageIndex` applies the outbox's
events in order, past its own mark, so it is updated as events are queued and rebuilt from the
outbox if its file is removed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridge.outbox.database import connect
from bridge.outbox.outbox import Outbox
from bridge.outbox.queue import UnreadableEvent, event_document
from bridge.translate.partitions import PartitionVersion, partitions_in

SCHEMA = """
CREATE TABLE IF NOT EXISTS mark (id INTEGER PRIMARY KEY CHECK (id = 0), seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (name TEXT PRIMARY KEY, kind TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS edges (source TEXT, target TEXT, PRIMARY KEY (source, target));
CREATE TABLE IF NOT EXISTS closure (
    ancestor TEXT, descendant TEXT, depth INTEGER NOT NULL, PRIMARY KEY (ancestor, descendant)
);
CREATE INDEX IF NOT EXISTS closure_by_descendant ON closure (descendant);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, job TEXT NOT NULL, parent_run_id TEXT, started TEXT, status TEXT, finished TEXT,
    orchestrator TEXT, tool_run_id TEXT, task TEXT, partition_key TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_job ON runs (job);
CREATE TABLE IF NOT EXISTS io (
    run_id TEXT, direction TEXT, dataset TEXT, version TEXT, PRIMARY KEY (run_id, direction, dataset)
);
CREATE INDEX IF NOT EXISTS io_by_dataset ON io (dataset, version);
CREATE TABLE IF NOT EXISTS columns (
    dataset TEXT, version TEXT, run_id TEXT, column_name TEXT, input_dataset TEXT, input_column TEXT,
    transformations TEXT NOT NULL,
    PRIMARY KEY (dataset, version, run_id, column_name, input_dataset, input_column)
);
CREATE TABLE IF NOT EXISTS parts (
    run_id TEXT, dataset TEXT, partition TEXT, version TEXT, rows INTEGER,
    PRIMARY KEY (run_id, dataset, partition, version)
);
CREATE TABLE IF NOT EXISTS trained (run_id TEXT PRIMARY KEY, payload TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS located (namespace TEXT, name TEXT, label TEXT NOT NULL, PRIMARY KEY (namespace, name));
"""
# The index's format: an index file of another format (an older bridge's) is emptied and refilled from the
# outbox when it is opened. Raise it with every change to SCHEMA or to what event_facts keeps.
INDEX_FORMAT = 3
FINAL_STATES = ("COMPLETE", "FAIL", "ABORT")
TOOL_RUN_FIELDS = ("orchestrator", "runId", "task", "partition")


def dataset_label(dataset: dict[str, Any]) -> str:
    """A dataset's catalog name when it has one (``nyc_taxi.raw_weather``), else its OpenLineage name."""
    symlinks = dataset.get("facets", {}).get("symlinks", {}).get("identifiers", [])
    label: str = symlinks[0]["name"] if symlinks else dataset["name"]
    return label


def dataset_version(dataset: dict[str, Any]) -> str | None:
    version: str | None = dataset.get("facets", {}).get("version", {}).get("datasetVersion")
    return version


@dataclass(frozen=True)
class ColumnFact:
    dataset: str
    version: str
    column: str
    input_dataset: str
    input_column: str
    transformations: tuple[str, ...]


@dataclass
class EventFacts:
    """What one event adds to the index."""

    nodes: dict[str, str] = field(default_factory=dict)
    edges: set[tuple[str, str]] = field(default_factory=set)
    run: tuple[str, str, str | None] | None = None  # run id, job, parent run id
    tool_run: tuple[str | None, ...] = (None, None, None, None)  # the orchestratorRun facet's TOOL_RUN_FIELDS
    started: str | None = None
    final: tuple[str, str] | None = None  # state, time
    io: list[tuple[str, str, str | None]] = field(default_factory=list)  # direction, dataset, version
    columns: list[ColumnFact] = field(default_factory=list)
    # The partitions each input was read as, each at the version that wrote it (a whole-table read).
    parts: list[tuple[str, PartitionVersion]] = field(default_factory=list)
    trained: bool = False


def event_facts(event: dict[str, Any], located: dict[tuple[str, str], str] | None = None) -> EventFacts:
    """The index's facts in one OpenLineage event (as JSON).

    ``located`` maps an OpenLineage (namespace, name) to the label of a dataset seen before, so a column
    lineage input known only by its location is named as its table.
    """
    located = located if located is not None else {}
    facts = EventFacts()
    job = event["job"]["name"]
    kind = event["job"].get("facets", {}).get("jobType", {}).get("integration", "job").lower()
    run_facets = event["run"].get("facets", {})
    parent = run_facets.get("parent", {}).get("run", {}).get("runId")
    facts.run = (event["run"]["runId"], job, parent)
    tool_run = run_facets.get("orchestratorRun", {})
    facts.tool_run = tuple(tool_run.get(name) for name in TOOL_RUN_FIELDS)
    inputs, outputs = event.get("inputs", []), event.get("outputs", [])
    for dataset in (*inputs, *outputs):
        located[(dataset["namespace"], dataset["name"])] = dataset_label(dataset)
    if "." in job:  # a step: a job in the graph, as DataHub shows DataJobs
        facts.nodes[job] = kind
        for dataset in inputs:
            facts.nodes[dataset_label(dataset)] = "dataset"
            facts.edges.add((dataset_label(dataset), job))
        for dataset in outputs:
            facts.nodes[dataset_label(dataset)] = "dataset"
            facts.edges.add((job, dataset_label(dataset)))
        for upstream in run_facets.get("jobDependencies", {}).get("upstream", []):
            facts.nodes.setdefault(upstream["job"]["name"], kind)
            facts.edges.add((upstream["job"]["name"], job))
    if event["eventType"] == "START":
        facts.started = event["eventTime"]
    if event["eventType"] in FINAL_STATES:
        facts.final = (event["eventType"], event["eventTime"])
    if event["eventType"] != "COMPLETE":
        return facts
    facts.io = [("input", dataset_label(d), dataset_version(d)) for d in inputs]
    facts.io += [("output", dataset_label(d), dataset_version(d)) for d in outputs]
    facts.parts = [(dataset_label(d), part) for d in inputs for part in partitions_in(d)]
    for dataset in outputs:
        fields = dataset.get("facets", {}).get("columnLineage", {}).get("fields", {})
        for column, spec in fields.items():
            for source in spec.get("inputFields", []):
                name = located.get((source["namespace"], source["name"]), source["name"])
                kinds = tuple(
                    f"{t['type']}:{t['subtype']}" if t.get("subtype") else t["type"]
                    for t in source.get("transformations") or []
                )
                facts.columns.append(
                    ColumnFact(
                        dataset_label(dataset), dataset_version(dataset) or "", column, name, source["field"], kinds
                    )
                )
    facts.trained = "modelTraining" in run_facets
    return facts


class LineageIndex:
    """The index file beside the outbox; every read first applies the outbox's newer events."""

    def __init__(self, path: Path, outbox: Outbox) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.outbox = path, outbox
        connection = self._connect()
        try:
            if connection.execute("PRAGMA user_version").fetchone()[0] != INDEX_FORMAT:
                _reformat(connection)
        finally:
            connection.close()

    def _connect(self) -> sqlite3.Connection:
        return connect(self.path)

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A connection to an index that holds every event queued so far."""
        self.catch_up()
        connection = self._connect()
        try:
            yield connection
        finally:
            connection.close()

    def catch_up(self, batch: int = 5000) -> int:
        """Apply the outbox's events past the mark, in order, one transaction per batch; returns how many."""
        applied = 0
        connection = self._connect()
        try:
            while True:
                row = connection.execute("SELECT seq FROM mark WHERE id = 0").fetchone()
                events = self.outbox.queue.after(row[0] if row else 0, limit=batch)
                if not events:
                    return applied
                # Column inputs are named by location; a dataset seen in any event gives its catalog name.
                located = {(ns, name): label for ns, name, label in connection.execute("SELECT * FROM located")}
                known = dict(located)
                connection.execute("BEGIN IMMEDIATE")
                held = _Held()
                for queued in events:
                    try:
                        facts = event_facts(event_document(queued.payload), located)
                    except (UnreadableEvent, KeyError, TypeError):  # no run event: the sinks park it, with why
                        continue
                    _apply(connection, queued.payload, facts, held)
                connection.executemany(
                    "INSERT OR REPLACE INTO located VALUES (?, ?, ?)",
                    [(*key, label) for key, label in located.items() if known.get(key) != label],
                )
                connection.execute(
                    "INSERT INTO mark (id, seq) VALUES (0, ?) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq",
                    (events[-1].seq,),
                )
                connection.execute("COMMIT")
                applied += len(events)
        finally:
            connection.close()


def _reformat(connection: sqlite3.Connection) -> None:
    """Empty an index of another format (or a new file) and give it this one; the next read refills it."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        if connection.execute("PRAGMA user_version").fetchone()[0] != INDEX_FORMAT:  # unless another process just did
            tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in tables:
                connection.execute(f'DROP TABLE "{table}"')
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {INDEX_FORMAT}")
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


@dataclass
class _Held:
    """Nodes and edges one batch has found or put in the index: inside its transaction nobody else adds any,
    and runs of the same jobs name the same ones again."""

    nodes: set[str] = field(default_factory=set)
    edges: set[tuple[str, str]] = field(default_factory=set)


def _apply(connection: sqlite3.Connection, payload: str, facts: EventFacts, held: _Held) -> None:
    nodes = [(name, kind) for name, kind in facts.nodes.items() if name not in held.nodes]
    connection.executemany("INSERT OR IGNORE INTO nodes (name, kind) VALUES (?, ?)", nodes)
    held.nodes.update(name for name, _ in nodes)
    for source, target in sorted(facts.edges):
        if (source, target) in held.edges:
            continue
        held.edges.add((source, target))
        if connection.execute("SELECT 1 FROM edges WHERE source = ? AND target = ?", (source, target)).fetchone():
            continue
        connection.execute("INSERT INTO edges (source, target) VALUES (?, ?)", (source, target))
        # Every ancestor of the source (and itself) now reaches every descendant of the target (and itself).
        connection.execute(
            """
            INSERT INTO closure (ancestor, descendant, depth)
            SELECT up.node, down.node, up.depth + 1 + down.depth
            FROM (SELECT ancestor AS node, depth FROM closure WHERE descendant = :source
                  UNION ALL SELECT :source, 0) AS up,
                 (SELECT descendant AS node, depth FROM closure WHERE ancestor = :target
                  UNION ALL SELECT :target, 0) AS down
            WHERE up.node != down.node
            ON CONFLICT (ancestor, descendant) DO UPDATE SET depth = min(depth, excluded.depth)
            """,
            {"source": source, "target": target},
        )
    if facts.run:
        run_id, job, parent = facts.run
        connection.execute(
            "INSERT INTO runs (run_id, job, parent_run_id, orchestrator, tool_run_id, task, partition_key)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING",
            (run_id, job, parent, *facts.tool_run),
        )
        if facts.started:
            connection.execute(
                "UPDATE runs SET started = min(coalesce(started, ?), ?) WHERE run_id = ?",
                (facts.started, facts.started, run_id),
            )
        if facts.final:
            connection.execute("UPDATE runs SET status = ?, finished = ? WHERE run_id = ?", (*facts.final, run_id))
        connection.executemany(
            "INSERT OR REPLACE INTO io (run_id, direction, dataset, version) VALUES (?, ?, ?, ?)",
            [(run_id, *entry) for entry in facts.io],
        )
        connection.executemany(
            "INSERT OR REPLACE INTO columns VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (c.dataset, c.version, run_id, c.column, c.input_dataset, c.input_column, json.dumps(c.transformations))
                for c in facts.columns
            ],
        )
        connection.executemany(
            "INSERT OR REPLACE INTO parts VALUES (?, ?, ?, ?, ?)",
            [(run_id, dataset, part.partition, part.version, part.rows) for dataset, part in facts.parts],
        )
        if facts.trained:
            connection.execute("INSERT OR REPLACE INTO trained (run_id, payload) VALUES (?, ?)", (run_id, payload))
