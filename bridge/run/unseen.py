"""Runs the lineage has not seen yet, counted from the sources' own files and the outbox's cursors.

``status`` and the read commands answer from what the last pass delivered; a run made since (a training
from the shell, a Dagster run with no sensor ticking) is in none of it. These counts say so without
loading Dagster or Metaflow: Dagster's SQLite event log past the pass's cursor, and each followed flow's
run folders in Metaflow's local metadata that the pass has not seen finish. Where a count cannot be
told from files (another storage, a metadata service, no pass yet) it is ``None``: unknown, not zero.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bridge.config import LineageBridge
from bridge.outbox.outbox import Outbox

# The event types the Dagster source reads (bridge.translate.dagster_records.READ_TYPES), as Dagster stores them.
READ_TYPES = (
    "PIPELINE_START",
    "PIPELINE_SUCCESS",
    "PIPELINE_FAILURE",
    "PIPELINE_CANCELED",
    "STEP_START",
    "STEP_SUCCESS",
    "STEP_FAILURE",
    "ASSET_MATERIALIZATION",
    "ASSET_MATERIALIZATION_PLANNED",
    "ASSET_CHECK_EVALUATION_PLANNED",
    "ASSET_CHECK_EVALUATION",
    "ASSET_OBSERVATION",
)
RUN_START = "PIPELINE_START"
MICROSECONDS = 1_000_000  # Metaflow's local metadata names a run by its creation time in microseconds


@dataclass(frozen=True)
class Unseen:
    """Runs made since the last pass that the lineage does not show yet (``None``: cannot tell from files)."""

    dagster_runs: int | None
    metaflow_runs: int | None

    @property
    def any(self) -> bool:
        return bool(self.dagster_runs or self.metaflow_runs)

    def as_json(self) -> dict[str, int | None]:
        return {"dagster_runs": self.dagster_runs, "metaflow_runs": self.metaflow_runs}


def unseen_runs(bridge: LineageBridge) -> Unseen:
    """What the last pass's cursors (in ``bridge``'s outbox) have not reached; nothing known without an outbox."""
    if not bridge.outbox_path.is_file():
        return Unseen(None, None)
    outbox = Outbox(bridge.outbox_path)
    try:
        dagster, metaflow = outbox.queue.cursor("dagster"), outbox.queue.cursor("metaflow")
    finally:
        outbox.close()
    flows = [unseen_metaflow_runs(metaflow.get(flow, {})) for flow in bridge.flows]
    return Unseen(
        unseen_dagster_runs(dagster, bridge.dagster_home),
        None if None in flows else sum(count or 0 for count in flows),
    )


def unseen_line(found: Unseen, command: str) -> str | None:
    """One line for a person when runs are missing from the lineage, with the command that brings them in."""
    if not found.any:
        return None
    counts = [
        f"{count} {tool} {'run' if count == 1 else 'runs'}"
        for tool, count in (("Dagster", found.dagster_runs), ("Metaflow", found.metaflow_runs))
        if count
    ]
    have = "has" if sum(count or 0 for count in (found.dagster_runs, found.metaflow_runs)) == 1 else "have"
    return f"Not in the lineage yet: {' and '.join(counts)} {have} happened since the last pass; `{command}` adds them"


def dagster_event_log(home: Path) -> tuple[Path, Path | None] | None:
    """Where the Dagster instance in ``home`` keeps its events in SQLite, as its ``dagster.yaml`` says: the file of
    run-status and asset records, and the folder of run shards (``None`` when that one file holds every run);
    ``None`` for any other storage."""
    file = home / "dagster.yaml"
    settings: dict[str, Any] = (yaml.safe_load(file.read_text()) if file.is_file() else None) or {}
    if "event_log_storage" in settings:
        spec = settings["event_log_storage"] or {}
        if not str(spec.get("module", "")).startswith("dagster._core.storage.event_log"):
            return None
        base = _setting((spec.get("config") or {}).get("base_dir"))
        if base is None:
            return None
        if spec.get("class") == "SqliteEventLogStorage":
            return base / "index.db", base
        if spec.get("class") == "ConsolidatedSqliteEventLogStorage":
            return base / "event_log.db", None
        return None
    if "storage" in settings:
        sqlite_settings = (settings["storage"] or {}).get("sqlite")
        base = _setting((sqlite_settings or {}).get("base_dir")) if isinstance(sqlite_settings, dict) else None
        return (base / "history" / "runs" / "index.db", base / "history" / "runs") if base else None
    return home / "history" / "runs" / "index.db", home / "history" / "runs"


def unseen_dagster_runs(cursor: dict[str, Any], dagster_home: Path | None) -> int | None:
    """Dagster runs with records past the Dagster source's ``cursor``: runs started since, and open runs that moved."""
    home = dagster_home or (Path(os.environ["DAGSTER_HOME"]) if os.environ.get("DAGSTER_HOME") else None)
    files = dagster_event_log(home) if home else None
    after = _storage_id(cursor.get("run_starts"))
    if files is None or after is None or cursor.get("event_log") != str(files[0]) or not files[0].is_file():
        return None
    index, shards = files
    kinds = ",".join("?" * len(READ_TYPES))
    with _read_only(index) as connection:
        started = "SELECT COUNT(DISTINCT run_id) FROM event_logs WHERE dagster_event_type = ? AND id > ?"
        unseen = int(connection.execute(started, (RUN_START, after)).fetchone()[0])
        for run_id, last_seen in cursor.get("open_runs", {}).items():
            query = f"SELECT 1 FROM event_logs WHERE id > ? AND dagster_event_type IN ({kinds})"
            if shards is None:
                found = connection.execute(query + " AND run_id = ? LIMIT 1", (last_seen, *READ_TYPES, run_id))
                unseen += bool(found.fetchall())
                continue
            shard = shards / f"{run_id}.db"
            if not shard.is_file():
                return None
            with _read_only(shard) as run_shard:
                unseen += bool(run_shard.execute(query + " LIMIT 1", (last_seen, *READ_TYPES)).fetchall())
    return unseen


def unseen_metaflow_runs(cursor: dict[str, Any]) -> int | None:
    """A followed flow's runs the Metaflow source has not seen finish, from its ``cursor`` and the flow's folder."""
    if not cursor.get("folder"):
        return None
    folder = Path(cursor["folder"])
    finished, watermark = set(cursor.get("finished", {})), float(cursor.get("watermark", 0.0))
    runs = [entry.name for entry in folder.iterdir() if entry.is_dir()] if folder.is_dir() else []
    return sum(1 for run in runs if run.isdigit() and run not in finished and int(run) / MICROSECONDS >= watermark)


def _setting(value: Any) -> Path | None:
    """A path setting of ``dagster.yaml``: written out, or ``{env: NAME}``."""
    if isinstance(value, dict) and set(value) == {"env"}:
        value = os.environ.get(str(value["env"]))
    return Path(value) if isinstance(value, str) and value else None


def _storage_id(cursor: str | None) -> int | None:
    """The storage id in Dagster's event-log cursor (base64 JSON); ``None`` when it is not one."""
    if cursor is None:
        return 0
    try:
        parsed = json.loads(base64.b64decode(cursor))
    except ValueError:  # base64's and json's own answer (binascii.Error, JSONDecodeError...) to another cursor
        return None
    if not isinstance(parsed, dict) or parsed.get("type") != "STORAGE_ID" or not isinstance(parsed.get("value"), int):
        return None
    return int(parsed["value"])


def _read_only(path: Path) -> closing[sqlite3.Connection]:
    """A read-only SQLite connection, closed on leaving the block."""
    return closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30))
