"""DataHub Lite: opening its file to write or read, and telling a missing or foreign file from a graph."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.errors import BridgeError

if TYPE_CHECKING:
    from datahub.lite.sqlite_lite import SqliteLite

HOW_TO_MAKE_ONE = "run a lineage pass (`taxi-lineage`) after Dagster or Metaflow runs"


class NoLineageGraph(LookupError, BridgeError):
    """There is no DataHub Lite graph to read yet."""


def open_lite(path: Path, read_only: bool = False) -> SqliteLite:
    # DataHub takes a second to import: commands load it only when they open a graph.
    from datahub.lite.lite_util import get_datahub_lite
    from datahub.lite.sqlite_lite import SqliteLite

    config = {"file": str(path), "read_only": read_only, "options": {"journal_mode": "WAL"}}
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    lite = get_datahub_lite({"type": "sqlite", "config": config}, read_only=read_only)
    if not isinstance(lite, SqliteLite):  # an internal invariant: DataHub opens the type asked for
        raise TypeError(f"DataHub Lite of type sqlite opened as {type(lite).__name__}")
    return lite


def open_for_reading(path: Path, how_to_make_one: str = HOW_TO_MAKE_ONE) -> SqliteLite:
    """The graph, read-only; :class:`NoLineageGraph` (saying ``how_to_make_one``) when nothing has written one yet."""
    if not path.is_file() or path.stat().st_size == 0:
        msg = f"No lineage graph at {path}; {how_to_make_one}"
        raise NoLineageGraph(msg)
    lite = None
    try:
        lite = open_lite(path, read_only=True)
        next(iter(lite.list_ids()), None)  # a file that is not a Lite graph fails here, not later
    except sqlite3.DatabaseError as err:
        if lite is not None:
            lite.close()
        msg = f"{path} is not a DataHub Lite graph ({err}); {how_to_make_one}"
        raise NoLineageGraph(msg) from err
    return lite
