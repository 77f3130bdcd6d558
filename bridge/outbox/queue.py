"""The durable outbox: translated events, the source cursors and each sink's place, committed in SQLite.

A pass inserts its events and moves its cursor in one transaction, so an interrupted pass leaves
neither; a replay inserts nothing new (events are keyed by identity). Each sink (one per target:
a new target starts from the first event) reads events in order past its own position; an event
held out of line (it failed on its own, or waits behind one of its run) is noted with its attempts,
error and when to try again; an event given up on is parked as a dead letter. A sink whose whole
target is away notes that once, with its backoff; each pass records every sink's state for ``status``.

Writes that move a sink or park an event are fenced by the pass lease (:mod:`bridge.outbox.lease`):
a pass that lost its lease cannot move anything.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.errors import BridgeError

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    event_key TEXT NOT NULL UNIQUE,
    payload TEXT NOT NULL,
    delivered_at TEXT
);
CREATE TABLE IF NOT EXISTS cursors (source TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sink_offsets (sink TEXT PRIMARY KEY, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS lease (name TEXT PRIMARY KEY, holder TEXT NOT NULL, token INTEGER NOT NULL,
                                  expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS failing (
    sink TEXT NOT NULL, seq INTEGER NOT NULL, attempts INTEGER NOT NULL, error TEXT NOT NULL,
    retry_after REAL NOT NULL, PRIMARY KEY (sink, seq)
);
CREATE TABLE IF NOT EXISTS dead_letters (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sink TEXT NOT NULL, seq INTEGER NOT NULL, job TEXT NOT NULL, run_id TEXT NOT NULL, event_type TEXT NOT NULL,
    error TEXT NOT NULL, attempts INTEGER NOT NULL, parked_at TEXT NOT NULL, requeued INTEGER NOT NULL DEFAULT 0,
    UNIQUE (sink, seq)
);
CREATE TABLE IF NOT EXISTS sinks (
    sink TEXT PRIMARY KEY, target TEXT NOT NULL DEFAULT '', failures INTEGER NOT NULL DEFAULT 0, error TEXT,
    retry_after REAL NOT NULL DEFAULT 0, checked_at REAL, delivered_at REAL, position INTEGER,
    pending INTEGER, held INTEGER, parked INTEGER
);
"""

# The OpenLineage transport's place before places were kept per target; the first target adopts it.
OPENLINEAGE_SINK = "openlineage"
SINK_TABLES = ("sink_offsets", "failing", "dead_letters", "sinks")


class OutboxDamaged(RuntimeError, BridgeError):
    """The outbox file cannot be read as SQLite."""


class LeaseLost(RuntimeError, BridgeError):
    """Another pass took the lease: this pass may not move any sink."""


def connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode, WAL journal, that waits up to 30 s for a writer.

    ``synchronous=NORMAL``: in WAL mode a commit then survives a crashed or killed process (not a
    power cut), at microseconds instead of an fsync per commit.
    """
    connection = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    return connection


@dataclass(frozen=True)
class QueuedEvent:
    seq: int
    key: str
    payload: str


@dataclass(frozen=True)
class Failing:
    seq: int
    attempts: int
    error: str
    retry_after: float


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


@dataclass(frozen=True)
class DeadLetter:
    id: int
    sink: str
    seq: int
    job: str
    run_id: str
    event_type: str
    error: str
    attempts: int
    parked_at: str
    requeued: bool

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> DeadLetter:
        """A row of ``dead_letters``, whose ``requeued`` SQLite keeps as an integer."""
        letter_id, sink, seq, job, run_id, event_type, error, attempts, parked_at, requeued = row[:10]
        return cls(letter_id, sink, seq, job, run_id, event_type, error, attempts, parked_at, bool(requeued))


class Outbox:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.fence: int | None = None
        try:
            self.connection = connect(path)
            self.connection.executescript(SCHEMA)
            self.id = self._outbox_id()
            self._take_over_delivered_marks()
        except sqlite3.DatabaseError as err:
            msg = f"The lineage outbox {path} is damaged ({err})"
            raise OutboxDamaged(msg) from err

    def close(self) -> None:
        self.connection.close()

    def mark_rebuilt(self) -> None:
        """This outbox replaces a lost one: sinks skip what they already had (their ledgers say what)."""
        self.remember("rebuilt", "1")

    def remember(self, key: str, value: str) -> None:
        """Keep a note about this outbox (what the latest pass did, for ``status``)."""
        self.connection.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def recall(self, key: str) -> str | None:
        row = self.connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    @property
    def rebuilt(self) -> bool:
        return self.recall("rebuilt") is not None

    def _outbox_id(self) -> str:
        """This outbox's identity: a sink that keeps its own place keeps it per outbox."""
        self.connection.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('id', ?)", (uuid.uuid4().hex,))
        outbox_id: str = self.connection.execute("SELECT value FROM meta WHERE key = 'id'").fetchone()[0]
        return outbox_id

    def _take_over_delivered_marks(self) -> None:
        """An outbox from before per-sink places marked each delivered event; its place is the first unmarked one."""
        if self.connection.execute("SELECT 1 FROM sink_offsets WHERE sink = ?", (OPENLINEAGE_SINK,)).fetchone():
            return
        first_pending = self.connection.execute("SELECT min(seq) FROM events WHERE delivered_at IS NULL").fetchone()[0]
        last = self.connection.execute("SELECT max(seq) FROM events WHERE delivered_at IS NOT NULL").fetchone()[0]
        if last is not None:
            self._set_offset(OPENLINEAGE_SINK, (first_pending - 1) if first_pending else last)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self.connection.execute("BEGIN IMMEDIATE")
        try:
            yield self.connection
            self.connection.execute("COMMIT")
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise

    def _check_fence(self) -> None:
        if self.fence is None:
            return
        row = self.connection.execute("SELECT token FROM lease WHERE name = 'pass'").fetchone()
        if row is None or row[0] != self.fence:
            raise LeaseLost("another lineage pass took over; this one stops moving sinks")

    # Sources

    def cursor(self, source: str) -> dict[str, Any]:
        row = self.connection.execute("SELECT value FROM cursors WHERE source = ?", (source,)).fetchone()
        return json.loads(row[0]) if row else {}

    @contextmanager
    def batch(self, source: str) -> Iterator[Batch]:
        """Queue events and move ``source``'s cursor atomically: all of it, or none of it."""
        with self._transaction() as connection:
            batch = Batch(connection, source)
            yield batch

    def events_after(self, seq: int, limit: int = 1000) -> list[QueuedEvent]:
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

    # Sinks that keep their place here

    def sink_offset(self, sink: str) -> int:
        row = self.connection.execute("SELECT seq FROM sink_offsets WHERE sink = ?", (sink,)).fetchone()
        return row[0] if row else 0

    def set_sink_offset(self, sink: str, seq: int) -> None:
        """Move ``sink``'s place, in one statement that checks the lease (a commit per event stays cheap)."""
        moved = self.connection.execute(
            "INSERT INTO sink_offsets (sink, seq) SELECT ?, ? "
            "WHERE ? IS NULL OR ? = (SELECT token FROM lease WHERE name = 'pass') "
            "ON CONFLICT(sink) DO UPDATE SET seq = excluded.seq",
            (sink, seq, self.fence, self.fence),
        ).rowcount
        if not moved:
            raise LeaseLost("another lineage pass took over; this one stops moving sinks")

    def _set_offset(self, sink: str, seq: int) -> None:
        self.connection.execute(
            "INSERT INTO sink_offsets (sink, seq) VALUES (?, ?) ON CONFLICT(sink) DO UPDATE SET seq = excluded.seq",
            (sink, seq),
        )

    def pending_count(self, sink: str, position: int | None = None) -> int:
        """Events ``sink`` has not had: those past its place, and those it holds out of line."""
        after = self.sink_offset(sink) if position is None else position
        count: int = self.connection.execute(
            "SELECT (SELECT count(*) FROM events WHERE seq > ?) + "
            "(SELECT count(*) FROM failing WHERE sink = ? AND seq <= ?)",
            (after, sink, after),
        ).fetchone()[0]
        return count

    def oldest_pending_time(self, sink: str, position: int) -> str | None:
        """The event time of the oldest event ``sink`` has not had (held, or first past its place)."""
        row = self.connection.execute(
            "SELECT json_extract(payload, '$.eventTime') FROM events WHERE seq = (SELECT min(seq) FROM "
            "(SELECT seq FROM failing WHERE sink = ? AND seq <= ? UNION SELECT min(seq) FROM events WHERE seq > ?))",
            (sink, position, position),
        ).fetchone()
        return row[0] if row else None

    def adopt(self, legacy: str, sink: str) -> None:
        """``sink`` takes over what ``legacy`` (a name from before places were kept per target) kept, once."""
        held = " UNION ALL ".join(f"SELECT 1 FROM {table} WHERE sink = ?" for table in SINK_TABLES)
        if not self.connection.execute(f"SELECT EXISTS ({held})", (legacy,) * len(SINK_TABLES)).fetchone()[0]:
            return
        with self._transaction():
            if self.connection.execute("SELECT 1 FROM sink_offsets WHERE sink = ?", (sink,)).fetchone():
                return
            for table in SINK_TABLES:
                self.connection.execute(f"UPDATE OR IGNORE {table} SET sink = ? WHERE sink = ?", (sink, legacy))

    # A whole target failing, and each sink's state

    def sink_wait(self, sink: str) -> SinkWait | None:
        row = self.connection.execute(
            "SELECT failures, error, retry_after FROM sinks WHERE sink = ? AND failures > 0", (sink,)
        ).fetchone()
        return SinkWait(*row) if row else None

    def note_sink_failure(
        self, sink: str, error: str, backoff: Callable[[int], float], at_least: float = 0.0
    ) -> SinkWait:
        """One more failure of ``sink``'s whole target; it is left alone for ``backoff(failures)`` seconds, or
        ``at_least``."""
        with self._transaction():
            self._check_fence()
            failures = (
                1
                + (self.connection.execute("SELECT failures FROM sinks WHERE sink = ?", (sink,)).fetchone() or (0,))[0]
            )
            retry_after = time.time() + max(backoff(failures), at_least)
            self.connection.execute(
                "INSERT INTO sinks (sink, failures, error, retry_after) VALUES (?, ?, ?, ?) ON CONFLICT(sink) DO "
                "UPDATE SET failures = excluded.failures, error = excluded.error, retry_after = excluded.retry_after",
                (sink, failures, error, retry_after),
            )
        return SinkWait(failures, error, retry_after)

    def clear_sink_failure(self, sink: str) -> None:
        self.connection.execute("UPDATE sinks SET failures = 0, error = NULL, retry_after = 0 WHERE sink = ?", (sink,))

    def record_sink_state(self, sink: str, target: str, counts: dict[str, int], delivered: bool) -> None:
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

    def sink_states(self) -> list[SinkState]:
        rows = self.connection.execute(
            "SELECT sink, target, failures, error, retry_after, checked_at, delivered_at, position, pending, held, "
            "parked FROM sinks ORDER BY checked_at DESC, sink"
        ).fetchall()
        return [SinkState(*row) for row in rows]

    # Events held out of line, and dead letters

    def failing(self, sink: str, seq: int) -> Failing | None:
        row = self.connection.execute(
            "SELECT seq, attempts, error, retry_after FROM failing WHERE sink = ? AND seq = ?", (sink, seq)
        ).fetchone()
        return Failing(*row) if row else None

    def failing_now(self, sink: str) -> list[Failing]:
        rows = self.connection.execute(
            "SELECT seq, attempts, error, retry_after FROM failing WHERE sink = ? ORDER BY seq", (sink,)
        ).fetchall()
        return [Failing(*row) for row in rows]

    def note_failure(self, sink: str, seq: int, attempts: int, error: str, retry_after: float) -> None:
        with self._transaction():
            self._check_fence()
            self.connection.execute(
                "INSERT INTO failing (sink, seq, attempts, error, retry_after) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(sink, seq) DO UPDATE SET attempts = excluded.attempts, error = excluded.error, "
                "retry_after = excluded.retry_after",
                (sink, seq, attempts, error, retry_after),
            )

    def clear_failure(self, sink: str, seq: int) -> None:
        self.connection.execute("DELETE FROM failing WHERE sink = ? AND seq = ?", (sink, seq))

    def forget_failures(self, sink: str, after: int = 0) -> None:
        """Forget ``sink``'s held events past ``after``: its place went back (a new, emptied or replaced target)."""
        self.connection.execute("DELETE FROM failing WHERE sink = ? AND seq > ?", (sink, after))

    def park(self, sink: str, event: QueuedEvent, error: str, attempts: int, move_offset: bool) -> None:
        """Park ``event`` for ``sink`` with its error; when ``move_offset``, the sink's place moves past it too."""
        described = _described(event.payload)
        with self._transaction():
            self._check_fence()
            self.connection.execute(
                "INSERT INTO dead_letters (sink, seq, job, run_id, event_type, error, attempts, parked_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, datetime('now')) "
                "ON CONFLICT(sink, seq) DO UPDATE SET error = excluded.error, attempts = excluded.attempts, "
                "parked_at = excluded.parked_at, requeued = 0",
                (sink, event.seq, *described, error, attempts),
            )
            self.connection.execute("DELETE FROM failing WHERE sink = ? AND seq = ?", (sink, event.seq))
            if move_offset:
                self._set_offset(sink, event.seq)

    def dead_letters(self, sink: str | None = None, requeued: bool | None = None) -> list[DeadLetter]:
        query = "SELECT * FROM dead_letters WHERE 1 = 1"
        params: list[str | int] = []
        if sink is not None:
            query, params = query + " AND sink = ?", [*params, sink]
        if requeued is not None:
            query, params = query + " AND requeued = ?", [*params, int(requeued)]
        rows = self.connection.execute(query + " ORDER BY id", params).fetchall()
        return [DeadLetter.from_row(row) for row in rows]

    def requeue(self, ids: list[int] | None = None) -> int:
        """Queue dead letters again (all when ``ids`` is None); the next pass sends them before anything new."""
        with self._transaction():
            if ids is None:
                return self.connection.execute("UPDATE dead_letters SET requeued = 1 WHERE requeued = 0").rowcount
            marks = ",".join("?" * len(ids))
            return self.connection.execute(f"UPDATE dead_letters SET requeued = 1 WHERE id IN ({marks})", ids).rowcount

    def discard(self, ids: list[int] | None = None) -> int:
        """Give up on dead letters for good (all when ``ids`` is None): they stay in the outbox, never sent."""
        with self._transaction():
            if ids is None:
                return self.connection.execute("DELETE FROM dead_letters").rowcount
            marks = ",".join("?" * len(ids))
            return self.connection.execute(f"DELETE FROM dead_letters WHERE id IN ({marks})", ids).rowcount

    def resolve(self, letter_id: int) -> None:
        with self._transaction():
            self._check_fence()
            self.connection.execute("DELETE FROM dead_letters WHERE id = ?", (letter_id,))

    def repark(self, letter_id: int, error: str) -> None:
        with self._transaction():
            self._check_fence()
            self.connection.execute(
                "UPDATE dead_letters SET requeued = 0, error = ?, attempts = attempts + 1, parked_at = datetime('now') "
                "WHERE id = ?",
                (error, letter_id),
            )

    def counts(self, sink: str = OPENLINEAGE_SINK) -> dict[str, int]:
        total = self.connection.execute("SELECT count(*) FROM events").fetchone()[0]
        parked = self.connection.execute(
            "SELECT count(*) FROM dead_letters WHERE sink = ? AND requeued = 0", (sink,)
        ).fetchone()[0]
        return {"queued": total, "pending": self.pending_count(sink), "parked": parked}


def _described(payload: str) -> tuple[str, str, str]:
    """The job, run and event type of a queued event, for a person reading the dead letters."""
    try:
        event = json.loads(payload)
        return (
            f"{event['job']['namespace']}/{event['job']['name']}",
            event["run"]["runId"],
            event.get("eventType", "?"),
        )
    except (ValueError, KeyError, TypeError):
        return ("(unreadable event)", "?", "?")


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
