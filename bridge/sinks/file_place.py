"""A sink's place kept inside its own SQLite file, per outbox, and setting such a file aside for repair.

The place is written in the same transaction as what the sink wrote, so the two move together; a
new, emptied or replaced file holds no place and is filled from the first event. Read with plain
SQLite: the idle check never loads the sink's SDK.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from contextlib import closing
from pathlib import Path

from bridge.sinks.contract import SinkDamaged

PLACE_TABLE = "lineage_bridge_position"
CREATE_PLACE_TABLE = f"CREATE TABLE IF NOT EXISTS {PLACE_TABLE} (outbox TEXT PRIMARY KEY, seq INTEGER NOT NULL)"


def place_in_file(path: Path, outbox_id: str, what: str, damaged: type[SinkDamaged] = SinkDamaged) -> int:
    """The last event of outbox ``outbox_id`` the file at ``path`` holds (0 for a missing, empty or new file);
    ``damaged`` (saying "``what`` is damaged") when it cannot be read as SQLite."""
    if not path.is_file() or path.stat().st_size == 0:
        return 0
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as connection:
            found = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
            if not connection.execute(found, (PLACE_TABLE,)).fetchone():
                return 0
            row = connection.execute(f"SELECT seq FROM {PLACE_TABLE} WHERE outbox = ?", (outbox_id,)).fetchone()
    except sqlite3.DatabaseError as err:
        raise damaged(f"{what} is damaged ({err})") from err
    return row[0] if row else 0


def keep_place(connection: sqlite3.Connection, outbox_id: str, seq: int) -> None:
    """Note ``seq`` as the file's place for outbox ``outbox_id``, in the transaction the caller has open."""
    connection.execute(
        f"INSERT INTO {PLACE_TABLE} (outbox, seq) VALUES (?, ?) ON CONFLICT(outbox) DO UPDATE SET seq = excluded.seq",
        (outbox_id, seq),
    )


def set_aside(path: Path) -> Path | None:
    """Move a SQLite file (and its WAL) out of the way, so the next write starts a new one; where it went."""
    if not path.exists():
        return None
    aside = path.with_name(f"{path.name}.{time.strftime('%Y%m%dT%H%M%S')}.aside")
    for suffix in ("", "-wal", "-shm"):
        part = path.with_name(path.name + suffix)
        if part.exists():
            shutil.move(part, aside.with_name(aside.name + suffix))
    return aside
