"""The durable outbox: translated events and the source cursors, committed together in SQLite.

A pass inserts its events and moves its cursor in one transaction, so an interrupted pass leaves
neither; a replay inserts nothing new (events are keyed by identity). Delivery reads undelivered
events in order and marks each one once its transport accepted it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    event_key TEXT NOT NULL UNIQUE,
    payload TEXT NOT NULL,
    delivered_at TEXT
);
CREATE TABLE IF NOT EXISTS cursors (source TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sink_offsets (sink TEXT PRIMARY KEY, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS job_edges (sink TEXT, urn TEXT, edges TEXT NOT NULL, PRIMARY KEY (sink, urn));
"""


def connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode, WAL journal, that waits up to 30 s for a writer."""
    connection = sqlite3.connect(path, timeout=30, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    return connection


@dataclass(frozen=True)
class QueuedEvent:
    seq: int
    key: str
    payload: str


class Outbox:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        with self._connect() as connection:
            connection.executescript(SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        return connect(self.path)

    def cursor(self, source: str) -> dict:
        with self._connect() as connection:
            row = connection.execute("SELECT value FROM cursors WHERE source = ?", (source,)).fetchone()
        return json.loads(row[0]) if row else {}

    @contextmanager
    def batch(self, source: str) -> Iterator[Batch]:
        """Queue events and move ``source``'s cursor atomically: all of it, or none of it."""
        connection = self._connect()
        try:
            connection.execute("BEGIN IMMEDIATE")
            batch = Batch(connection, source)
            yield batch
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        finally:
            connection.close()

    def pending(self, limit: int = 1000) -> list[QueuedEvent]:
        with self._connect() as connection:
            rows = connection.execute(
                "SELECT seq, event_key, payload FROM events WHERE delivered_at IS NULL ORDER BY seq LIMIT ?", (limit,)
            ).fetchall()
        return [QueuedEvent(*row) for row in rows]

    def events_after(self, seq: int, limit: int = 1000) -> list[QueuedEvent]:
        """Queued events in order, for sinks that keep their own offset (delivered or not)."""
        with self._connect() as connection:
            rows = connection.execute(
                "SELECT seq, event_key, payload FROM events WHERE seq > ? ORDER BY seq LIMIT ?", (seq, limit)
            ).fetchall()
        return [QueuedEvent(*row) for row in rows]

    def sink_offset(self, sink: str) -> int:
        with self._connect() as connection:
            row = connection.execute("SELECT seq FROM sink_offsets WHERE sink = ?", (sink,)).fetchone()
        return row[0] if row else 0

    def set_sink_offset(self, sink: str, seq: int) -> None:
        with self._connect() as connection:
            connection.execute(
                "INSERT INTO sink_offsets (sink, seq) VALUES (?, ?) ON CONFLICT(sink) DO UPDATE SET seq = excluded.seq",
                (sink, seq),
            )

    def merge_job_edges(self, sink: str, urn: str, edges: dict[str, list[str]]) -> dict[str, list[str]]:
        """Union ``edges`` into what ``sink`` already has for job ``urn`` (every run's inputs and outputs)."""
        with self._connect() as connection:
            connection.execute("BEGIN IMMEDIATE")
            row = connection.execute("SELECT edges FROM job_edges WHERE sink = ? AND urn = ?", (sink, urn)).fetchone()
            known = json.loads(row[0]) if row else {}
            merged = {key: sorted(set(known.get(key, [])) | set(values)) for key, values in edges.items()}
            connection.execute(
                "INSERT INTO job_edges (sink, urn, edges) VALUES (?, ?, ?) "
                "ON CONFLICT(sink, urn) DO UPDATE SET edges = excluded.edges",
                (sink, urn, json.dumps(merged)),
            )
            connection.execute("COMMIT")
        return merged

    def mark_delivered(self, seq: int) -> None:
        with self._connect() as connection:
            connection.execute("UPDATE events SET delivered_at = datetime('now') WHERE seq = ?", (seq,))

    def counts(self) -> dict[str, int]:
        with self._connect() as connection:
            total, pending = connection.execute(
                "SELECT count(*), count(*) - count(delivered_at) FROM events"
            ).fetchone()
        return {"queued": total, "pending": pending}


class Batch:
    def __init__(self, connection: sqlite3.Connection, source: str) -> None:
        self.connection, self.source, self.added = connection, source, 0

    def add(self, key: str, payload: str) -> bool:
        """Queue an event; ``False`` when an event with this key is already queued."""
        inserted = self.connection.execute(
            "INSERT OR IGNORE INTO events (event_key, payload) VALUES (?, ?)", (key, payload)
        ).rowcount
        self.added += inserted
        return bool(inserted)

    def set_cursor(self, value: dict) -> None:
        self.connection.execute(
            "INSERT INTO cursors (source, value) VALUES (?, ?) "
            "ON CONFLICT(source) DO UPDATE SET value = excluded.value",
            (self.source, json.dumps(value, sort_keys=True)),
        )
