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

import hashlib
import json
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr

from bridge.config import LineageBridge, SinkSpec
from bridge.outbox.health import LAST_PASS, Status, record_pass, status
from bridge.outbox.outbox import Outbox
from bridge.run.unseen import unseen_dagster_runs
from bridge.sinks.contract import SinkContext, SinkDamaged, SinkMisconfigured
from bridge.sinks.registry import config_of, sink_class
from bridge.sources.metaflow_folders import folder_digest

REPORTS_CURSOR = "dagster-reports"  # where the reports of Metaflow runs to Dagster keep their place
CONFIGURATION = "idle-check:"  # an outbox note per configuration: each sink's name in the last full pass with it
ENVIRONMENT = ("OPENLINEAGE", "METAFLOW", "DAGSTER_HOME", "HOME")
CLIENT_DERIVED = "OPENLINEAGE__TRANSPORT__TRANSPORTS__DEFAULT_HTTP__"


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


def _dagster_idle(cursor: dict[str, Any], bridge: LineageBridge) -> bool:
    return unseen_dagster_runs(cursor, bridge.dagster_home) == 0


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
