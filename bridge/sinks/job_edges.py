"""DataHub's job edges as the union over a job's runs, kept by the DataHub sinks that cannot read them back
(a GMS, a metadata file) in a file of their own beside the outbox, per sink.

DataHub replaces a job's edges on every write; the sink writes the union, so it must remember it.
DataHub Lite reads the union back from its own file and keeps nothing here.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from bridge.outbox.outbox import Outbox

Edges = dict[str, list[str]]
STORE_NAME = "datahub_job_edges.sqlite"
SCHEMA = "CREATE TABLE IF NOT EXISTS job_edges (sink TEXT, urn TEXT, edges TEXT NOT NULL, PRIMARY KEY (sink, urn))"


class EdgeStore:
    """Job edges per sink and job URN, in ``folder``/datahub_job_edges.sqlite."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / STORE_NAME
        self.connection = sqlite3.connect(self.path, isolation_level=None)
        self.connection.execute(SCHEMA)

    @classmethod
    def beside(cls, outbox: Outbox, sink: str) -> EdgeStore:
        """The store in the outbox's folder."""
        return cls(outbox.path.parent / "sink-state")

    def load(self, sink: str) -> dict[str, Edges]:
        rows = self.connection.execute("SELECT urn, edges FROM job_edges WHERE sink = ?", (sink,)).fetchall()
        return {urn: json.loads(edges) for urn, edges in rows}

    def save(self, sink: str, edges: dict[str, Edges], replace: bool = False) -> None:
        """Store ``sink``'s edges of these jobs; ``replace`` forgets every job's edges it had before."""
        self.connection.execute("BEGIN IMMEDIATE")
        try:
            if replace:
                self.connection.execute("DELETE FROM job_edges WHERE sink = ?", (sink,))
            self.connection.executemany(
                "INSERT INTO job_edges (sink, urn, edges) VALUES (?, ?, ?) "
                "ON CONFLICT(sink, urn) DO UPDATE SET edges = excluded.edges",
                [(sink, urn, json.dumps(value)) for urn, value in edges.items()],
            )
            self.connection.execute("COMMIT")
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.connection.close()
