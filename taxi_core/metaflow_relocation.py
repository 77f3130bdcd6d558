"""Metaflow's local records, made to name the datastore they sit in after its state folder was copied or moved.

Every artifact's record names the datastore by absolute path (``"location": ":root:/…/.metaflow"``), as does each
task's ``ds-root``, and Metaflow's client reads an artifact from the datastore its record names: a copied state
folder would load the original's models. The datastore's folder keeps a note of the datastore its records name
(:data:`NOTE`); reading that note is the whole check when nothing moved. When it names another folder (or there
is none yet), every record that names another datastore is rewritten in place to name this one (records are
written where their run ran: one naming another datastore came with a copy), then the note.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from taxi_core.files import write_atomically
from taxi_core.relocation import Move

log = logging.getLogger(__name__)

DATASTORE = ".metaflow"
NOTE = "records_name_datastore"  # beside .metaflow: Metaflow reads every folder inside it as a flow
RECORDS = "_meta"
ROOT_MARK = ":root:"


def relocate_metaflow_records(sysroot: Path) -> int:
    """Point the records of the datastore in ``sysroot`` (Metaflow's local sysroot) at it; how many were rewritten."""
    datastore = sysroot / DATASTORE
    note = sysroot / NOTE
    if note.is_file() and note.read_text().strip() == str(datastore):
        return 0
    started = time.monotonic()
    named = _roots_named(datastore) - {str(datastore)}
    moves = [move for move in (Move(root, str(datastore)) for root in sorted(named)) if not move.is_alias()]
    rewritten = sum(_relocate_record(path, moves) for path in _records(datastore)) if moves else 0
    if rewritten:
        log.warning(
            "The state folder was copied or moved: its Metaflow records now name %s instead of %s "
            "(%d rewritten in %.1f s)",
            datastore,
            ", ".join(move.old for move in moves),
            rewritten,
            time.monotonic() - started,
        )
    sysroot.mkdir(parents=True, exist_ok=True)
    write_atomically(note, f"{datastore}\n")
    return rewritten


def _records(datastore: Path) -> Iterator[Path]:
    """Every record file of the local metadata: ``<flow>/[<run>/[<step>/[<task>/]]]_meta/*.json``."""
    if not datastore.is_dir():
        return
    for folder, subfolders, files in os.walk(datastore):
        if Path(folder).name == RECORDS:
            subfolders.clear()
            yield from (Path(folder) / name for name in files if name.endswith(".json"))


def _roots_named(datastore: Path) -> set[str]:
    """The datastores the records name."""
    roots = set()
    for path in _records(datastore):
        record = json.loads(path.read_bytes())
        location = record.get("location")
        if isinstance(location, str) and location.startswith(ROOT_MARK):
            roots.add(location.removeprefix(ROOT_MARK))
        elif record.get("type") == "ds-root" and isinstance(record.get("value"), str):
            roots.add(record["value"])
    return roots


def _relocate_record(path: Path, moves: list[Move]) -> int:
    raw = path.read_bytes()
    if not any(move.old.encode() in raw for move in moves):
        return 0
    record = json.loads(raw)
    moved = _relocated(record, moves)
    if moved == record:
        return 0
    write_atomically(path, json.dumps(moved))
    return 1


def _relocated(value: Any, moves: list[Move]) -> Any:
    if isinstance(value, str):
        marked = value.startswith(ROOT_MARK)
        path = value.removeprefix(ROOT_MARK)
        for move in moves:
            moved = move.moved(path)
            if moved is not None:
                return ROOT_MARK + moved if marked else moved
        return value
    if isinstance(value, list):
        return [_relocated(item, moves) for item in value]
    if isinstance(value, dict):
        return {key: _relocated(item, moves) for key, item in value.items()}
    return value
