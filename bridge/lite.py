"""The DataHub Lite graph in the state folder: where its file lives, and opening it to write or read."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from forecast_assets.settings import state_path

HOW_TO_MAKE_ONE = "run `taxi demo`, or a lineage pass (`taxi-lineage`) after Dagster or Metaflow runs"


class NoLineageGraph(LookupError):
    """There is no DataHub Lite graph to read yet."""


def lite_path() -> Path:
    return state_path("datahub") / "lite.sqlite"


def open_lite(path: Path | None = None, read_only: bool = False):
    from datahub.lite.lite_util import get_datahub_lite

    config = {"file": str(path or lite_path()), "read_only": read_only, "options": {"journal_mode": "WAL"}}
    return get_datahub_lite({"type": "sqlite", "config": config}, read_only=read_only)


def open_for_reading(path: Path | None = None):
    """The graph, read-only; :class:`NoLineageGraph` when nothing has written one there yet."""
    path = path or lite_path()
    if not path.is_file() or path.stat().st_size == 0:
        msg = f"No lineage graph at {path}; {HOW_TO_MAKE_ONE}"
        raise NoLineageGraph(msg)
    lite = None
    try:
        lite = open_lite(path, read_only=True)
        next(iter(lite.list_ids()), None)  # a file that is not a Lite graph fails here, not later
    except sqlite3.DatabaseError as err:
        if lite is not None:
            lite.close()
        msg = f"{path} is not a DataHub Lite graph ({err}); {HOW_TO_MAKE_ONE}"
        raise NoLineageGraph(msg) from err
    return lite
