"""Events a sink could not deliver: held out of line (with their attempts, error and when to try again),
parked as dead letters for a person, and discarded for good.

Writes that hold or park an event are fenced by the pass lease. What a person discarded is also
written to a file beside the outbox, so a rebuilt outbox does not send it again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bridge.outbox.database import Database
from bridge.outbox.queue import QueuedEvent, UnreadableEvent, event_document

SCHEMA = """
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
"""
DISCARDED_FILE = "sink-state/discarded.jsonl"
EVENT_ATTEMPTS = 8  # tries of an event held on an error of its own before it is parked


@dataclass(frozen=True)
class Failing:
    seq: int
    attempts: int
    error: str
    retry_after: float


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


class Letters:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.connection = database.connection
        self.discarded_file = database.path.parent / DISCARDED_FILE

    # Held out of line

    def failing(self, sink: str) -> list[Failing]:
        rows = self.connection.execute(
            "SELECT seq, attempts, error, retry_after FROM failing WHERE sink = ? ORDER BY seq", (sink,)
        ).fetchall()
        return [Failing(*row) for row in rows]

    def held_up_to(self, sink: str, seq: int) -> int:
        """How many events up to ``seq`` ``sink`` holds out of line."""
        count: int = self.connection.execute(
            "SELECT count(*) FROM failing WHERE sink = ? AND seq <= ?", (sink, seq)
        ).fetchone()[0]
        return count

    def first_held(self, sink: str, seq: int) -> int | None:
        row = self.connection.execute("SELECT min(seq) FROM failing WHERE sink = ? AND seq <= ?", (sink, seq))
        first: int | None = row.fetchone()[0]
        return first

    def hold(self, sink: str, seq: int, attempts: int, error: str, retry_after: float) -> None:
        with self.database.fenced() as connection:
            connection.execute(
                "INSERT INTO failing (sink, seq, attempts, error, retry_after) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(sink, seq) DO UPDATE SET attempts = excluded.attempts, error = excluded.error, "
                "retry_after = excluded.retry_after",
                (sink, seq, attempts, error, retry_after),
            )

    def release(self, sink: str, seq: int) -> None:
        self.connection.execute("DELETE FROM failing WHERE sink = ? AND seq = ?", (sink, seq))

    def forget_held(self, sink: str, after: int = 0) -> None:
        """Forget ``sink``'s held events past ``after``: its place went back (a new, emptied or replaced target)."""
        self.connection.execute("DELETE FROM failing WHERE sink = ? AND seq > ?", (sink, after))

    # Parked

    def park(self, sink: str, event: QueuedEvent, error: str, attempts: int) -> None:
        """Park ``event`` for ``sink`` with its error."""
        described = _described(event.payload)
        with self.database.fenced() as connection:
            connection.execute(
                "INSERT INTO dead_letters (sink, seq, job, run_id, event_type, error, attempts, parked_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, datetime('now')) "
                "ON CONFLICT(sink, seq) DO UPDATE SET error = excluded.error, attempts = excluded.attempts, "
                "parked_at = excluded.parked_at, requeued = 0",
                (sink, event.seq, *described, error, attempts),
            )
            connection.execute("DELETE FROM failing WHERE sink = ? AND seq = ?", (sink, event.seq))

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
        with self.database.transaction() as connection:
            if ids is None:
                return connection.execute("UPDATE dead_letters SET requeued = 1 WHERE requeued = 0").rowcount
            marks = ",".join("?" * len(ids))
            return connection.execute(f"UPDATE dead_letters SET requeued = 1 WHERE id IN ({marks})", ids).rowcount

    def discard(self, ids: list[int] | None = None) -> int:
        """Give up on dead letters for good (all when ``ids`` is None): never sent again, even from a rebuilt outbox."""
        with self.database.transaction() as connection:
            where, params = ("", []) if ids is None else (f" WHERE d.id IN ({','.join('?' * len(ids))})", ids)
            given_up = connection.execute(
                f"SELECT d.sink, e.event_key FROM dead_letters d JOIN events e ON e.seq = d.seq{where}", params
            ).fetchall()
            self.discarded_file.parent.mkdir(parents=True, exist_ok=True)
            with self.discarded_file.open("a") as file:
                file.writelines(json.dumps({"sink": sink, "key": key}) + "\n" for sink, key in given_up)
            return connection.execute(f"DELETE FROM dead_letters{where.replace('d.id', 'id')}", params).rowcount

    def discarded(self, sink: str) -> frozenset[str]:
        """The keys of the events a person gave up on for ``sink``."""
        if not self.discarded_file.is_file():
            return frozenset()
        found = set()
        for line in self.discarded_file.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a crash: the discard did not complete
            if entry.get("sink") == sink:
                found.add(entry.get("key"))
        return frozenset(found)

    def resolve(self, letter_id: int) -> None:
        with self.database.fenced() as connection:
            connection.execute("DELETE FROM dead_letters WHERE id = ?", (letter_id,))

    def repark(self, letter_id: int, error: str) -> None:
        with self.database.fenced() as connection:
            connection.execute(
                "UPDATE dead_letters SET requeued = 0, error = ?, attempts = attempts + 1, parked_at = datetime('now') "
                "WHERE id = ?",
                (error, letter_id),
            )

    def parked_count(self, sink: str) -> int:
        count: int = self.connection.execute(
            "SELECT count(*) FROM dead_letters WHERE sink = ? AND requeued = 0", (sink,)
        ).fetchone()[0]
        return count


def _described(payload: str) -> tuple[str, str, str]:
    """The job, run and event type of a queued event, for a person reading the dead letters."""
    try:
        event = event_document(payload)
    except UnreadableEvent:
        return ("(unreadable event)", "?", "?")
    return f"{event['job']['namespace']}/{event['job']['name']}", event["run"]["runId"], event.get("eventType", "?")


def describe_event(payload: str) -> str:
    """An event for a person: its type, job and run."""
    job, run_id, event_type = _described(payload)
    return f"{event_type} {job} run {run_id}"
