"""An idle pass answered from files: nothing new in Dagster, Metaflow or the outbox, without loading any of them.

A pass from the shell pays for importing Dagster, the OpenLineage client and Metaflow (about two
seconds) before it can learn that nothing happened. :func:`idle_pass` answers first, from what the
last full pass left in the outbox and from the sources' own files, and answers "nothing new" only
when every one of these holds:

- a full pass ran with this configuration (a digest of the bridge's sinks and their options, flows and
  folders, the OpenLineage, Metaflow and Dagster settings in the environment and in their files, and
  the working folder) and found nothing damaged;
- each configured sink, as that pass named it, has every queued event: none held out of line, no dead
  letter queued again, its target not failing, and the sink itself says it is caught up from its own
  state (:meth:`bridge.sinks.contract.Sink.caught_up`: its place in the outbox, or in its own file);
- Dagster's event log, in the same SQLite file the full pass read (its ``dagster.yaml`` says where),
  holds no run started past the cursor and no new record of a run still open;
- each followed flow's run folders in Metaflow's local metadata are those the last pass found settled
  (every run finished, translated and reported).

Anything it cannot tell (another storage, a metadata service, a changed setting, a cursor it cannot
read) is a "maybe", and the full pass runs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, SecretStr

from bridge.config import LineageBridge, SinkSpec
from bridge.outbox.health import LAST_PASS, Status, record_pass, status
from bridge.outbox.outbox import Outbox
from bridge.sinks.contract import SinkContext, SinkDamaged, SinkMisconfigured
from bridge.sinks.registry import config_of, sink_class
from bridge.sources.metaflow_folders import folder_digest

REPORTS_CURSOR = "dagster-reports"  # where the reports of Metaflow runs to Dagster keep their place
CONFIGURATION = "idle-check:"  # an outbox note per configuration: each sink's name in the last full pass with it
ENVIRONMENT = ("OPENLINEAGE", "METAFLOW", "DAGSTER_HOME", "HOME")
CLIENT_DERIVED = "OPENLINEAGE__TRANSPORT__TRANSPORTS__DEFAULT_HTTP__"
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


@dataclass(frozen=True)
class IdleAnswer:
    """Nothing new: lineage as the last pass left it, and how long it took to tell."""

    status: Status
    sinks: list[str]
    seconds: float


def configuration(bridge: LineageBridge) -> str:
    """A digest of everything that decides what a pass reads and where it delivers (never the values themselves)."""
    files = [Path(os.environ["OPENLINEAGE_CONFIG"])] if os.environ.get("OPENLINEAGE_CONFIG") else []
    metaflow_home = Path(os.environ.get("METAFLOW_HOME") or Path.home() / ".metaflowconfig")
    files += [
        Path.cwd() / "openlineage.yml",
        Path.home() / ".openlineage" / "openlineage.yml",
        metaflow_home / "config.json",
        metaflow_home / f"config_{os.environ.get('METAFLOW_PROFILE', '')}.json",
    ]
    described = {
        "bridge": [
            str(bridge.lineage_dir),
            bridge.flows,
            bridge.code_location,
            str(bridge.workspace_file),
            [_described(spec) for spec in bridge.sinks],
            str(bridge.dagster_home),
            bridge.launcher_kinds,
        ],
        "environment": sorted((k, v) for k, v in os.environ.items() if k.startswith(ENVIRONMENT) and not _derived(k)),
        "folder": os.getcwd(),
        "files": {str(path): hashlib.sha256(path.read_bytes()).hexdigest() for path in files if path.is_file()},
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True, default=str).encode()).hexdigest()


def _derived(name: str) -> bool:
    """A variable the OpenLineage client itself sets, from ``OPENLINEAGE_URL``, once it is made in a process."""
    return bool(os.environ.get("OPENLINEAGE_URL")) and name.startswith(CLIENT_DERIVED)


def _described(spec: SinkSpec) -> list[object]:
    """A sink's configuration for the digest: secrets as their digest, objects (a ready client) as their type."""
    options = spec.options.model_dump() if isinstance(spec.options, BaseModel) else dict(spec.options)

    def plain(value: object) -> object:
        if isinstance(value, SecretStr):
            return hashlib.sha256(value.get_secret_value().encode()).hexdigest()
        if value is None or isinstance(value, str | int | float | bool | Path):
            return str(value)
        return type(value).__qualname__

    return [spec.kind, spec.key, sorted((str(key), plain(value)) for key, value in options.items())]


def remember_configuration(outbox: Outbox, digest: str, sinks: dict[str, str]) -> None:
    """Note, after a full pass with the configuration of ``digest``, each sink's name (by its key) in that pass."""
    outbox.remember(CONFIGURATION + digest, json.dumps(sinks))


def idle_pass(bridge: LineageBridge) -> IdleAnswer | None:
    """``None`` unless nothing is new (see the module's docstring); then lineage's status, recorded as a pass."""
    started = time.monotonic()
    if not bridge.outbox_path.is_file():
        return None
    outbox = Outbox(bridge.outbox_path)
    try:
        noted = outbox.recall(CONFIGURATION + configuration(bridge))
        if noted is None:
            return None
        named: dict[str, str] = json.loads(noted) if noted.startswith("{") else {}
        sinks = list(named.values())
        if not (
            _sinks_idle(outbox, bridge, named)
            and _dagster_idle(outbox.queue.cursor("dagster"), bridge)
            and _metaflow_idle(outbox, bridge.flows)
        ):
            return None
        record_pass(outbox, sinks, [])
        found = status(outbox)
    finally:
        outbox.close()
    return IdleAnswer(found, sinks, time.monotonic() - started)


def _sinks_idle(outbox: Outbox, bridge: LineageBridge, named: dict[str, str]) -> bool:
    last: dict[str, Any] = json.loads(outbox.recall(LAST_PASS) or '{"problems": ["no pass yet"]}')
    if last.get("problems") or outbox.letters.dead_letters(requeued=True):
        return False
    last_seq = outbox.queue.last_seq()
    states = {state.sink: state for state in outbox.places.states()}
    for spec in bridge.sinks:
        name = named.get(spec.key)
        state = states.get(name) if name else None
        if name is None or state is None or state.failures or outbox.letters.failing(name):
            return False
        try:
            kind = sink_class(spec.kind)
            if not kind.caught_up(config_of(spec, kind), SinkContext(bridge, outbox, spec.key), name, last_seq):
                return False
        except (SinkDamaged, SinkMisconfigured, sqlite3.DatabaseError):
            return False  # the full pass says what is wrong, and how to repair it
    return True


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
    except ValueError:
        return None
    if not isinstance(parsed, dict) or parsed.get("type") != "STORAGE_ID" or not isinstance(parsed.get("value"), int):
        return None
    return int(parsed["value"])


def _dagster_idle(cursor: dict[str, Any], bridge: LineageBridge) -> bool:
    home = bridge.dagster_home or (Path(os.environ["DAGSTER_HOME"]) if os.environ.get("DAGSTER_HOME") else None)
    files = dagster_event_log(home) if home else None
    after = _storage_id(cursor.get("run_starts"))
    if files is None or after is None or cursor.get("event_log") != str(files[0]) or not files[0].is_file():
        return False
    index, shards = files
    kinds = ",".join("?" * len(READ_TYPES))
    with _read_only(index) as connection:
        started = "SELECT 1 FROM event_logs WHERE dagster_event_type = ? AND id > ? LIMIT 1"
        if connection.execute(started, (RUN_START, after)).fetchone():
            return False
        for run_id, last_seen in cursor.get("open_runs", {}).items():
            query = f"SELECT 1 FROM event_logs WHERE id > ? AND dagster_event_type IN ({kinds})"
            if shards is None:
                found = connection.execute(
                    query + " AND run_id = ? LIMIT 1", (last_seen, *READ_TYPES, run_id)
                ).fetchall()
            else:
                shard = shards / f"{run_id}.db"
                if not shard.is_file():
                    return False
                with _read_only(shard) as run_shard:
                    found = run_shard.execute(query + " LIMIT 1", (last_seen, *READ_TYPES)).fetchall()
            if list(found):
                return False
    return True


def _read_only(path: Path) -> closing[sqlite3.Connection]:
    """A read-only SQLite connection, closed on leaving the block."""
    return closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30))


def _metaflow_idle(outbox: Outbox, flows: tuple[str, ...]) -> bool:
    read, reported = outbox.queue.cursor("metaflow"), outbox.queue.cursor(REPORTS_CURSOR)
    for flow in flows:
        entry = read.get(flow, {})
        if not entry.get("folder") or not entry.get("settled"):
            return False
        digest = folder_digest(Path(entry["folder"]))
        if digest != entry["settled"] or reported.get(flow, {}).get("settled") != digest:
            return False
    return True
