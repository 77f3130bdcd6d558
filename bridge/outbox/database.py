"""The outbox's SQLite file: its connection, transactions, the lease fence and a few notes about it.

Each of the outbox's jobs keeps its own tables and SQL in its own module (:mod:`bridge.outbox.queue`,
:mod:`bridge.outbox.places`, :mod:`bridge.outbox.letters`, :mod:`bridge.outbox.lease`); this one is
what they share.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bridge.errors import BridgeError

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS lease (name TEXT PRIMARY KEY, holder TEXT NOT NULL, token INTEGER NOT NULL,
                                  expires_at REAL NOT NULL);
"""


class OutboxDamaged(RuntimeError, BridgeError):
    """The outbox file cannot be read as SQLite."""


class OutboxReadOnly(RuntimeError, BridgeError):
    """The outbox cannot be written where it is: its folder or file is read-only (nothing in it is damaged)."""


class LeaseLost(RuntimeError, BridgeError):
    """Another pass took the lease: this pass may not move any sink."""


def read_only(path: Path) -> bool:
    """Whether the file at ``path`` (or the folder it would be made in) cannot be written: permissions, or a
    file system mounted read-only."""
    folder = next((each for each in (path.parent, *path.parent.parents) if each.exists()), path.parent)
    for each in (path, path.with_name(path.name + "-wal"), folder):
        if each.exists() and not os.access(each, os.W_OK):
            return True
    return False


def connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode, WAL journal, that waits up to 30 s for a writer.

    ``synchronous=NORMAL``: in WAL mode a commit then survives a crashed or killed process (not a
    power cut), at microseconds instead of an fsync per commit.
    """
    connection = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.DatabaseError:
        connection.close()  # not left open for the garbage collector: the file may be on its way out
        raise
    return connection


class Database:
    """One connection to the outbox file, with the schema of each job created on opening."""

    def __init__(self, path: Path, schemas: tuple[str, ...]) -> None:
        self.path = path
        self.fence: int | None = None  # the lease token this connection writes under, while it holds one
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.connection = connect(path)
            self.connection.executescript(SCHEMA + "".join(schemas))
            self.id = self._outbox_id()
        except (sqlite3.DatabaseError, OSError) as err:
            if hasattr(self, "connection"):
                self.connection.close()
            if read_only(path):
                msg = (
                    f"The lineage folder {path.parent} is read-only: the outbox {path.name} cannot be written there "
                    f"(nothing in it is damaged). Make the folder and its files writable, or point the state folder "
                    f"(TAXI_STATE_DIR) at one you can write to"
                )
                raise OutboxReadOnly(msg) from err
            if isinstance(err, OSError):
                raise
            msg = f"The lineage outbox {path} is damaged ({err})"
            raise OutboxDamaged(msg) from err

    def close(self) -> None:
        self.connection.close()

    def _outbox_id(self) -> str:
        """This outbox's identity: a sink that keeps its own place keeps it per outbox."""
        self.connection.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('id', ?)", (uuid.uuid4().hex,))
        outbox_id: str = self.connection.execute("SELECT value FROM meta WHERE key = 'id'").fetchone()[0]
        return outbox_id

    def remember(self, key: str, value: str) -> None:
        """Keep a note about this outbox (what the latest pass did, for ``status``)."""
        self.connection.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def recall(self, key: str) -> str | None:
        row = self.connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.connection.execute("BEGIN IMMEDIATE")
        try:
            yield self.connection
            self.connection.execute("COMMIT")
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise

    @contextmanager
    def fenced(self) -> Iterator[sqlite3.Connection]:
        """A transaction that commits only while this connection's lease is still the pass's (:class:`LeaseLost`)."""
        with self.transaction() as connection:
            if self.fence is not None:
                row = connection.execute("SELECT token FROM lease WHERE name = 'pass'").fetchone()
                if row is None or row[0] != self.fence:
                    raise LeaseLost("another lineage pass took over; this one stops moving sinks")
            yield connection
