"""Report Metaflow runs made outside Dagster as materializations of the assets they wrote.

A flow launched by Dagster already materialized its assets in its own run; a flow run from the
shell did not, so each such successful run is reported once, as runless materializations of the
datasets it recorded writing, and Dagster's asset graph shows every version.

They are reported as Dagster would have recorded them had it run the flow: in the order the flow
wrote them, each with its version as data version, and an asset whose parents were all written by
the same run with data provenance pointing at them, so a run's own outputs never make each other
look stale. Checks the run evaluated on what it wrote (``report_checks``) become asset check
evaluations of those materializations; checks it did not evaluate stay "not evaluated".
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from dagster import (
    AssetCheckEvaluation,
    AssetKey,
    AssetMaterialization,
    DagsterInstance,
    DataVersion,
    EventLogRecord,
)
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from dagster._core.definitions.data_version import (
    DATA_VERSION_TAG,
    INPUT_DATA_VERSION_TAG_PREFIX,
    INPUT_EVENT_POINTER_TAG_PREFIX,
)

from bridge.config import LineageBridge
from bridge.outbox.outbox import Outbox
from bridge.run.idle import REPORTS_CURSOR
from bridge.sources.metaflow import flow_runs, run_folders, run_record
from bridge.translate.metaflow import FlowRunRecord

log = logging.getLogger(__name__)

CURSOR = REPORTS_CURSOR
Parents = Callable[[AssetKey], list[AssetKey]]


def asset_key_of(use: dict[str, Any]) -> AssetKey:
    """The asset of a recorded dataset: a table by its identifier's parts, anything else by its name's."""
    return AssetKey(use["name"].split(".") if use["kind"] == "table" else use["name"].split("/"))


def report_metaflow_outputs(
    instance: DagsterInstance, outbox: Outbox, bridge: LineageBridge, parents: Parents | None = None
) -> list[str]:
    """Report each new successful run made outside Dagster; returns the run pathspecs reported.

    ``parents`` are the assets' parents in Dagster's asset graph (for data provenance).
    """
    cursor = outbox.queue.cursor(CURSOR)
    reported: list[str] = []
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
                _report(instance, bridge, record, parents or (lambda _: []))
                reported.append(run.pathspec)
                log.info("Reported %s to Dagster", run.pathspec)
            seen.add(run.id)
            _save(outbox, cursor := _with(cursor, flow, {"seen": sorted(seen)}))
        if not unfinished and folders is not None:  # every run looked at: nothing to do until a new one
            _save(outbox, cursor := _with(cursor, flow, {"seen": sorted(seen), "settled": folders}))
    return reported


def _with(cursor: dict[str, Any], flow: str, entry: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in cursor.items() if key != "seen"} | {flow: entry}


def _save(outbox: Outbox, cursor: dict[str, Any]) -> None:
    with outbox.queue.batch(CURSOR) as batch:
        batch.set_cursor(cursor)


def _reported_before(instance: DagsterInstance, record: FlowRunRecord) -> bool:
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


def _report(instance: DagsterInstance, bridge: LineageBridge, record: FlowRunRecord, parents: Parents) -> None:
    extra = bridge.report_metadata(record.pathspec) if bridge.report_metadata else {}
    checks = bridge.report_checks(record.pathspec) if bridge.report_checks else {}
    writes: dict[AssetKey, dict[str, Any]] = {}
    for task in sorted(record.tasks, key=lambda task: task.created_at):  # in the order the flow wrote them
        for use in task.io.get("writes", []):
            writes[asset_key_of(use)] = use
    reported: dict[AssetKey, tuple[int, str]] = {}  # storage id and data version of each report
    for key, use in writes.items():
        version = str(use["version"])
        metadata = {"metaflow_run": record.pathspec, "version": version}
        if use.get("rows") is not None:
            metadata["dagster/row_count"] = use["rows"]
        tags = {DATA_VERSION_TAG: DataVersion(version).value}
        upstream = parents(key)
        if upstream and all(parent in reported for parent in upstream):
            for parent in upstream:
                pointer, parent_version = reported[parent]
                tags[f"{INPUT_DATA_VERSION_TAG_PREFIX}{parent.to_user_string()}"] = parent_version
                tags[f"{INPUT_EVENT_POINTER_TAG_PREFIX}{parent.to_user_string()}"] = str(pointer)
        instance.report_runless_asset_event(
            AssetMaterialization(key, metadata={**metadata, **extra.get(key, {})}, tags=tags)
        )
        record_of = _reported_record(instance, key, record.pathspec)
        if record_of is None:
            continue
        reported[key] = (record_of.storage_id, version)
        target = AssetCheckEvaluationTargetMaterializationData(
            storage_id=record_of.storage_id, run_id="", timestamp=record_of.timestamp
        )
        for name, passed, check_metadata in checks.get(key, ()):
            instance.report_runless_asset_event(
                AssetCheckEvaluation(
                    asset_key=key,
                    check_name=name,
                    passed=passed,
                    metadata={**check_metadata, "metaflow_run": record.pathspec},
                    target_materialization_data=target,
                    description=f"Evaluated by {record.pathspec} on the rows it wrote",
                )
            )


def _reported_record(instance: DagsterInstance, key: AssetKey, pathspec: str) -> EventLogRecord | None:
    """The materialization just reported for ``key`` by the run ``pathspec``."""
    for candidate in instance.fetch_materializations(key, limit=5).records:
        entry = candidate.asset_materialization
        if entry is not None and getattr(entry.metadata.get("metaflow_run"), "value", None) == pathspec:
            return candidate
    return None
