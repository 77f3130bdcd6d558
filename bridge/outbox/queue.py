"""The outbox's queue: translated events in order, and each source's cursor, committed together.

A pass inserts its events and moves its cursor in one transaction, so an interrupted pass leaves
neither; a replay inserts nothing new (events are keyed by identity).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from bridge.errors import BridgeError
from bridge.outbox.database import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    event_key TEXT NOT NULL UNIQUE,
    payload TEXT NOT NULL,
    delivered_at TEXT
);
CREATE TABLE IF NOT EXISTS cursors (source TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class UnreadableEvent(BridgeError, ValueError):
    """A queued payload that is not an OpenLineage run event's JSON (its run id and job)."""


@dataclass(frozen=True)
class QueuedEvent:
    seq: int
    key: str
    payload: str


def event_document(payload: str) -> dict[str, Any]:
    """A queued event's JSON, with its run's id and its job's namespace and name; :class:`UnreadableEvent` when it
    has not those (the outbox holds only the translators' events: a payload edited or damaged by hand)."""
    try:
        document: dict[str, Any] = json.loads(payload)
        document["run"]["runId"], document["job"]["namespace"], document["job"]["name"]  # noqa: B018
    except (json.JSONDecodeError, KeyError, TypeError) as err:  # what json and indexing raise for other JSON
        msg = f"not an OpenLineage run event ({type(err).__name__}: {err})"
        raise UnreadableEvent(msg) from err
    return document


class EventQueue:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.connection = database.connection

    def cursor(self, source: str) -> dict[str, Any]:
        row = self.connection.execute("SELECT value FROM cursors WHERE source = ?", (source,)).fetchone()
        return json.loads(row[0]) if row else {}

    @contextmanager
    def batch(self, source: str) -> Iterator[Batch]:
        """Queue events and move ``source``'s cursor atomically: all of it, or none of it."""
        with self.database.transaction() as connection:
            yield Batch(connection, source)

    def after(self, seq: int, limit: int = 1000) -> list[QueuedEvent]:
        """Queued events in order past ``seq``."""
        rows = self.connection.execute(
            "SELECT seq, event_key, payload FROM events WHERE seq > ? ORDER BY seq LIMIT ?", (seq, limit)
        ).fetchall()
        return [QueuedEvent(*row) for row in rows]

    def event(self, seq: int) -> QueuedEvent | None:
        row = self.connection.execute("SELECT seq, event_key, payload FROM events WHERE seq = ?", (seq,)).fetchone()
        return QueuedEvent(*row) if row else None

    def last_seq(self) -> int:
        last: int = self.connection.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0]
        return last

    def count_after(self, seq: int) -> int:
        count: int = self.connection.execute("SELECT count(*) FROM events WHERE seq > ?", (seq,)).fetchone()[0]
        return count

    def event_time(self, seq: int) -> str | None:
        row = self.connection.execute(
            "SELECT json_extract(payload, '$.eventTime') FROM events WHERE seq = ?", (seq,)
        ).fetchone()
        return row[0] if row else None


class Batch:
    def __init__(self, connection: sqlite3.Connection, source: str) -> None:
        self.connection, self.source, self.added = connection, source, 0

    def add(self, key: str, payload: str) -> bool:
        """Queue an event; ``False`` when an event with this key is already queued.

        An event already queued takes no sequence number: ``INSERT OR IGNORE`` would draw one from the
        ``AUTOINCREMENT`` counter for every ignored row, so a source that reads a running run again on every
        pass would leave the sequence running far ahead of the events.
        """
        inserted = self.connection.execute(
            "INSERT INTO events (event_key, payload) SELECT ?, ? WHERE NOT EXISTS "
            "(SELECT 1 FROM events WHERE event_key = ?)",
            (key, payload, key),
        ).rowcount
        self.added += inserted
        return bool(inserted)

    def set_cursor(self, value: dict[str, Any]) -> None:
        self.connection.execute(
            "INSERT INTO cursors (source, value) VALUES (?, ?) "
            "ON CONFLICT(source) DO UPDATE SET value = excluded.value",
            (self.source, json.dumps(value, sort_keys=True)),
        )
