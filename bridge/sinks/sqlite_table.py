"""Lineage events as rows of a table in a SQLite file, for tools that read SQL.

    SinkSpec("sqlite-table", {"path": "lineage.sqlite", "table": "lineage_events"})

Each event is a row (its queue position, key, type, job, run and JSON), written with the sink's place
in one transaction per batch, so a killed pass leaves neither. The place is kept inside the file, per
outbox: a deleted or replaced file is refilled from the first event, a damaged one is named for repair.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from pydantic import field_validator

from bridge.outbox.queue import QueuedEvent
from bridge.sinks.contract import Sink, SinkConfig, SinkContext
from bridge.sinks.file_place import CREATE_PLACE_TABLE, keep_place, place_in_file, set_aside


class SqliteTableConfig(SinkConfig):
    path: Path
    table: str = "lineage_events"

    @field_validator("table")
    @classmethod
    def _a_plain_name(cls, table: str) -> str:
        if not table.isidentifier():
            # A pydantic validator raises ValueError: the sink's options refuse it as SinkMisconfigured, naming it.
            raise ValueError(f"{table!r} is not a plain table name (letters, digits and underscores)")
        return table


class SqliteTableSink(Sink[SqliteTableConfig]):
    Config = SqliteTableConfig
    credentials_setting = "nothing: a SQLite file is local"
    target_setting = "the sink's path option"

    def __init__(self, config: SqliteTableConfig, context: SinkContext) -> None:
        super().__init__(config, context)
        self.path, self.table = config.path, config.table
        self.name = f"sqlite-table {self.path}#{self.table}"
        self.target = f"SQLite table {self.table} in {self.path}"
        self.connection: sqlite3.Connection | None = None
        self._position: int | None = None

    def position(self) -> int:
        if self._position is None:
            self._position = _place(self.path, self.outbox.id)
        return self._position

    def send(self, event: QueuedEvent, seconds_left: float) -> bool:
        document = json.loads(event.payload)
        self._open().execute(
            f"INSERT OR REPLACE INTO {self.table} (outbox, seq, event_key, event_type, job, run_id, payload) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (self.outbox.id, event.seq, event.key, document.get("eventType"),
             f"{document['job']['namespace']}/{document['job']['name']}", document["run"]["runId"], event.payload),
        )  # fmt: skip
        return True

    def advance(self, seq: int) -> None:
        self._position = seq

    def flush(self) -> None:
        if self._position is None:
            return
        connection = self._open()
        keep_place(connection, self.outbox.id, self._position)
        connection.execute("COMMIT")

    def close(self) -> None:
        if self.connection is not None:
            if self.connection.in_transaction:
                self.connection.execute("ROLLBACK")
            self.connection.close()
            self.connection = None

    def _open(self) -> sqlite3.Connection:
        if self.connection is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.connection = sqlite3.connect(self.path, isolation_level=None)
            self.connection.executescript(
                f"CREATE TABLE IF NOT EXISTS {self.table} (outbox TEXT NOT NULL, seq INTEGER NOT NULL, "
                "event_key TEXT NOT NULL, event_type TEXT, job TEXT NOT NULL, run_id TEXT NOT NULL, "
                "payload TEXT NOT NULL, PRIMARY KEY (outbox, seq));"
                f"{CREATE_PLACE_TABLE};"
            )
        if not self.connection.in_transaction:
            self.connection.execute("BEGIN IMMEDIATE")
        return self.connection

    @classmethod
    def caught_up(cls, config: SqliteTableConfig, context: SinkContext, name: str, last_seq: int) -> bool:
        return _place(config.path, context.outbox.id) >= last_seq

    @classmethod
    def set_aside(cls, config: SqliteTableConfig, context: SinkContext, name: str) -> str:
        context.outbox.letters.forget_held(name)
        aside = set_aside(config.path)
        return f"Set {config.path} aside as {aside}" if aside else f"No file at {config.path}: it is written anew"


def _place(path: Path, outbox_id: str) -> int:
    return place_in_file(path, outbox_id, f"The SQLite lineage table's file {path}")
