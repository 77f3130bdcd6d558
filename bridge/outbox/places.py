"""Where each sink is in the queue, and how its whole target fares: the places sinks keep in the outbox.

A sink (one per target: a new target starts from the first event) may keep its place here, moved
under the pass lease (a pass that lost its lease cannot move anything). A sink whose whole target is
away notes that once, with its backoff; each pass records every sink's state for ``status``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from bridge.outbox.database import Database, LeaseLost

SCHEMA = """
CREATE TABLE IF NOT EXISTS sink_offsets (sink TEXT PRIMARY KEY, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS sinks (
    sink TEXT PRIMARY KEY, target TEXT NOT NULL DEFAULT '', failures INTEGER NOT NULL DEFAULT 0, error TEXT,
    retry_after REAL NOT NULL DEFAULT 0, checked_at REAL, delivered_at REAL, position INTEGER,
    pending INTEGER, held INTEGER, parked INTEGER
);
"""


@dataclass(frozen=True)
class SinkWait:
    """A whole target failing: how many passes in a row, the last error, and when to try again."""

    failures: int
    error: str
    retry_after: float


@dataclass(frozen=True)
class SinkState:
    """A sink as its last pass left it, for ``status``."""

    sink: str
    target: str
    failures: int
    error: str | None
    retry_after: float
    checked_at: float | None
    delivered_at: float | None
    position: int | None
    pending: int | None
    held: int | None
    parked: int | None


class SinkPlaces:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.connection = database.connection

    def offset(self, sink: str) -> int | None:
        """The place ``sink`` keeps here; ``None`` when it keeps none."""
        row = self.connection.execute("SELECT seq FROM sink_offsets WHERE sink = ?", (sink,)).fetchone()
        return row[0] if row else None

    def move(self, sink: str, seq: int) -> None:
        """Move ``sink``'s place, in one statement that checks the lease (a commit per event stays cheap)."""
        fence = self.database.fence
        moved = self.connection.execute(
            "INSERT INTO sink_offsets (sink, seq) SELECT ?, ? "
            "WHERE ? IS NULL OR ? = (SELECT token FROM lease WHERE name = 'pass') "
            "ON CONFLICT(sink) DO UPDATE SET seq = excluded.seq",
            (sink, seq, fence, fence),
        ).rowcount
        if not moved:
            raise LeaseLost("another lineage pass took over; this one stops moving sinks")

    def forget(self, sink: str) -> None:
        """``sink`` starts again from the first event (set aside or rebuilt)."""
        with self.database.fenced() as connection:
            connection.execute("DELETE FROM sink_offsets WHERE sink = ?", (sink,))
            connection.execute("UPDATE sinks SET failures = 0, error = NULL, retry_after = 0 WHERE sink = ?", (sink,))

    def adopt(self, legacy: str, sink: str) -> None:
        """``sink`` takes over the place ``legacy`` (its name in an older version) kept, once."""
        if self.offset(sink) is not None or self.offset(legacy) is None:
            return
        with self.database.transaction() as connection:
            connection.execute("UPDATE OR IGNORE sink_offsets SET sink = ? WHERE sink = ?", (sink, legacy))
            connection.execute("UPDATE OR IGNORE sinks SET sink = ? WHERE sink = ?", (sink, legacy))

    def wait(self, sink: str) -> SinkWait | None:
        row = self.connection.execute(
            "SELECT failures, error, retry_after FROM sinks WHERE sink = ? AND failures > 0", (sink,)
        ).fetchone()
        return SinkWait(*row) if row else None

    def note_failure(self, sink: str, error: str, backoff: Callable[[int], float], at_least: float = 0.0) -> SinkWait:
        """One more failure of ``sink``'s whole target; it is left alone for ``backoff(failures)`` seconds, or
        ``at_least``."""
        with self.database.fenced() as connection:
            row = connection.execute("SELECT failures FROM sinks WHERE sink = ?", (sink,)).fetchone()
            failures = 1 + (row[0] if row else 0)
            retry_after = time.time() + max(backoff(failures), at_least)
            connection.execute(
                "INSERT INTO sinks (sink, failures, error, retry_after) VALUES (?, ?, ?, ?) ON CONFLICT(sink) DO "
                "UPDATE SET failures = excluded.failures, error = excluded.error, retry_after = excluded.retry_after",
                (sink, failures, error, retry_after),
            )
        return SinkWait(failures, error, retry_after)

    def clear_failure(self, sink: str) -> None:
        self.connection.execute("UPDATE sinks SET failures = 0, error = NULL, retry_after = 0 WHERE sink = ?", (sink,))

    def record(self, sink: str, target: str, counts: dict[str, int], delivered: bool) -> None:
        """What ``sink`` holds after a pass (``position``, ``pending``, ``held``, ``parked``); ``delivered``: it sent
        or confirmed something in this pass."""
        now = time.time()
        self.connection.execute(
            "INSERT INTO sinks (sink, target, checked_at, delivered_at, position, pending, held, parked) "
            "VALUES (:sink, :target, :now, :delivered_at, :position, :pending, :held, :parked) "
            "ON CONFLICT(sink) DO UPDATE SET target = excluded.target, checked_at = excluded.checked_at, "
            "delivered_at = coalesce(excluded.delivered_at, delivered_at), position = excluded.position, "
            "pending = excluded.pending, held = excluded.held, parked = excluded.parked",
            {"sink": sink, "target": target, "now": now, "delivered_at": now if delivered else None, **counts},
        )

    def states(self) -> list[SinkState]:
        rows = self.connection.execute(
            "SELECT sink, target, failures, error, retry_after, checked_at, delivered_at, position, pending, held, "
            "parked FROM sinks ORDER BY checked_at DESC, sink"
        ).fetchall()
        return [SinkState(*row) for row in rows]
