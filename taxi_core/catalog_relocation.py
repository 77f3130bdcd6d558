"""The embedded catalog of a state folder that was copied or moved, made to name its own warehouse's files.

The catalog's rows and each table's metadata name files by absolute path, so a copied state folder would read,
and write, the original's tables. Opening the catalog (Spark's JDBC catalog and pyiceberg's SqlCatalog alike, see
``CatalogConfig.prepare_sqlite``) first runs one query: do the rows name this warehouse? When they name another
one whose files this warehouse holds a copy of, every such table's metadata files are rewritten in place
(:mod:`taxi_core.iceberg_relocation`), then its rows, in one transaction that other processes wait on.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from taxi_core.iceberg_relocation import relocate_metadata_folder
from taxi_core.relocation import Move, find_move, inside, local_path

log = logging.getLogger(__name__)

# Another process relocating a large warehouse holds the catalog's write lock until it is done.
LOCK_WAIT_SECONDS = 600.0
TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?"
ROWS = (
    "SELECT catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location "
    "FROM iceberg_tables WHERE metadata_location IS NOT NULL"
)
MOVE_ROW = (
    "UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? "
    "WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?"
)
PROPERTIES = "SELECT catalog_name, namespace, property_key, property_value FROM iceberg_namespace_properties"
MOVE_PROPERTY = (
    "UPDATE iceberg_namespace_properties SET property_value = ? "
    "WHERE catalog_name = ? AND namespace = ? AND property_key = ?"
)


@dataclass(frozen=True)
class Row:
    catalog: str
    namespace: str
    name: str
    location: str
    previous: str | None

    @property
    def table(self) -> str:
        return f"{self.namespace}.{self.name}"


@dataclass(frozen=True)
class Relocation:
    """What one opening of the catalog moved: from which warehouse, which tables, how many files, in how long."""

    move: Move
    tables: tuple[str, ...]
    files: int
    seconds: float

    def describe(self) -> str:
        return (
            f"The state folder was copied or moved: its Iceberg tables now read and write {self.move.new} instead "
            f"of {self.move.old} ({len(self.tables)}: {', '.join(self.tables)}; {self.files} metadata files "
            f"rewritten in {self.seconds:.1f} s)"
        )


def relocate_catalog(sqlite_path: Path, warehouse: Path) -> list[Relocation]:
    """Point every table whose rows name another warehouse at this one's copy of its files; nothing if none does."""
    if not sqlite_path.is_file():
        return []
    with closing(sqlite3.connect(sqlite_path, timeout=LOCK_WAIT_SECONDS, isolation_level=None)) as connection:
        if not moves_needed(_rows(connection), warehouse):
            return []
        # One relocation at a time: another process waits here, then finds the rows already moved.
        connection.execute("BEGIN IMMEDIATE")
        try:
            done = [_relocate(connection, move) for move in moves_needed(_rows(connection), warehouse)]
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
    for relocation in done:
        log.warning("%s", relocation.describe())
    return done


def moves_needed(rows: list[Row], warehouse: Path) -> list[Move]:
    """The warehouses the rows name, other than this one, whose files this one holds a copy of."""
    moves: list[Move] = []
    for row in rows:
        if inside(row.location, warehouse) or any(move.moved(row.location) for move in moves):
            continue
        move = find_move(row.location, warehouse)
        if move is not None and not move.is_alias():
            moves.append(move)
    return moves


def _has_table(connection: sqlite3.Connection, name: str) -> bool:
    return connection.execute(TABLES, (name,)).fetchone() is not None


def _rows(connection: sqlite3.Connection) -> list[Row]:
    if not _has_table(connection, "iceberg_tables"):  # a catalog no one has written a table to yet
        return []
    return [Row(*values) for values in connection.execute(ROWS)]


def _relocate(connection: sqlite3.Connection, move: Move) -> Relocation:
    started = time.monotonic()
    moved = [row for row in _rows(connection) if move.moved(row.location)]
    files = 0
    for row in moved:
        location = move.relocated(row.location)
        path = local_path(location)
        if path is not None and Path(path).is_file():
            files += relocate_metadata_folder(Path(path).parent, move, row.table)
        connection.execute(MOVE_ROW, (location, move.relocated(row.previous), row.catalog, row.namespace, row.name))
    if _has_table(connection, "iceberg_namespace_properties"):
        for catalog, namespace, key, value in connection.execute(PROPERTIES).fetchall():
            if isinstance(value, str) and move.moved(value):
                connection.execute(MOVE_PROPERTY, (move.moved(value), catalog, namespace, key))
    tables = tuple(sorted(row.table for row in moved))
    return Relocation(move, tables, files, time.monotonic() - started)
