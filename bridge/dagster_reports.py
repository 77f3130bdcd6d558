"""Report Metaflow runs started outside Dagster as materializations of the Metaflow-made assets.

A flow launched by Dagster already materialized ``forecast_model`` and the forecast table in its
own run; a flow run from the shell did not, so each such successful run is reported once as a
runless materialization, and Dagster's asset graph shows every model version.
"""

from __future__ import annotations

import logging

from dagster import AssetMaterialization, DagsterInstance

import flows  # noqa: F401  (points Metaflow at the state folder before Metaflow is imported)
from bridge.metaflow_lineage import FLOW_NAME
from bridge.outbox import Outbox

log = logging.getLogger(__name__)

CURSOR = "dagster-reports"


def report_metaflow_outputs(instance: DagsterInstance, outbox: Outbox) -> list[str]:
    """Report each new successful shell-run version; returns the run pathspecs reported."""
    from metaflow import Flow, namespace
    from metaflow.exception import MetaflowNotFound

    from forecast_assets.assets.training import FORECAST_MODEL, FORECAST_TABLE, forecast_table_metadata, model_metadata

    namespace(None)
    seen = set(outbox.cursor(CURSOR).get("seen", []))
    try:
        runs = [run for run in Flow(FLOW_NAME) if run.id not in seen and run.successful]
    except MetaflowNotFound:
        return []
    reported = []
    for run in sorted(runs, key=lambda r: r.created_at):
        if run["start"].task.data.lineage_parent is None:
            instance.report_runless_asset_event(AssetMaterialization(FORECAST_MODEL, metadata=model_metadata(run)))
            instance.report_runless_asset_event(
                AssetMaterialization(FORECAST_TABLE, metadata=forecast_table_metadata(run))
            )
            reported.append(run.pathspec)
            log.info("Reported %s to Dagster", run.pathspec)
        seen.add(run.id)
        with outbox.batch(CURSOR) as batch:
            batch.set_cursor({"seen": sorted(seen)})
    return reported
