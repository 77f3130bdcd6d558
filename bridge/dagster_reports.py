"""Report Metaflow runs made outside Dagster as materializations of the assets they wrote.

A flow launched by Dagster already materialized its assets in its own run; a flow run from the
shell did not, so each such successful run is reported once, as runless materializations of the
datasets it recorded writing, and Dagster's asset graph shows every version.
"""

from __future__ import annotations

import logging

from dagster import AssetKey, AssetMaterialization, DagsterInstance

from bridge.config import LineageBridge
from bridge.metaflow_source import flow_runs, run_folders, run_record
from bridge.outbox import Outbox

log = logging.getLogger(__name__)

CURSOR = "dagster-reports"


def asset_key_of(use: dict) -> AssetKey:
    """The asset of a recorded dataset: a table by its identifier's parts, anything else by its name's."""
    return AssetKey(use["name"].split(".") if use["kind"] == "table" else use["name"].split("/"))


def report_metaflow_outputs(instance: DagsterInstance, outbox: Outbox, bridge: LineageBridge) -> list[str]:
    """Report each new successful run made outside Dagster; returns the run pathspecs reported."""
    cursor = outbox.cursor(CURSOR)
    reported = []
    for flow in bridge.flows:
        # Before the cursor was kept per flow it held one flow's "seen" list.
        seen = set(cursor.get(flow, {}).get("seen", cursor.get("seen", [])))
        # A new or rebuilt outbox knows nothing of earlier reports: Dagster's event log does.
        first_look = flow not in cursor and "seen" not in cursor
        folders = run_folders(flow)
        if folders is not None and cursor.get(flow, {}).get("settled") == folders:
            continue
        unfinished = False
        for run in flow_runs(flow):
            unfinished = unfinished or not run.finished
            if run.id in seen or not run.successful:
                continue
            record = run_record(run, lambda _: None)
            if record.dagster_run_id is None and not (first_look and _reported_before(instance, record)):
                _report(instance, bridge, record)
                reported.append(run.pathspec)
                log.info("Reported %s to Dagster", run.pathspec)
            seen.add(run.id)
            _save(outbox, cursor := _with(cursor, flow, {"seen": sorted(seen)}))
        if not unfinished and folders is not None:  # every run looked at: nothing to do until a new one
            _save(outbox, cursor := _with(cursor, flow, {"seen": sorted(seen), "settled": folders}))
    return reported


def _with(cursor: dict, flow: str, entry: dict) -> dict:
    return {key: value for key, value in cursor.items() if key != "seen"} | {flow: entry}


def _save(outbox: Outbox, cursor: dict) -> None:
    with outbox.batch(CURSOR) as batch:
        batch.set_cursor(cursor)


def _reported_before(instance: DagsterInstance, record) -> bool:
    """True when Dagster already holds a materialization reported for this run (by a pass with another outbox)."""
    keys = [asset_key_of(use) for task in record.tasks for use in task.io.get("writes", [])]
    if not keys:
        return False
    found = instance.fetch_materializations(keys[0], limit=1000).records
    return any(
        (entry := r.asset_materialization) is not None
        and getattr(entry.metadata.get("metaflow_run"), "value", None) == record.pathspec
        for r in found
    )


def _report(instance: DagsterInstance, bridge: LineageBridge, record) -> None:
    extra = bridge.report_metadata(record.pathspec) if bridge.report_metadata else {}
    writes = {}
    for task in record.tasks:
        for use in task.io.get("writes", []):
            writes[asset_key_of(use)] = use
    for key, use in writes.items():
        metadata = {"metaflow_run": record.pathspec, "version": use["version"]}
        if use.get("rows") is not None:
            metadata["dagster/row_count"] = use["rows"]
        instance.report_runless_asset_event(AssetMaterialization(key, metadata={**metadata, **extra.get(key, {})}))
