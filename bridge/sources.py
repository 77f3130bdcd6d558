"""The bridge's sources for one Dagster instance: its event log, and the Metaflow runs beside it."""

from __future__ import annotations

from dagster import DagsterInstance

from bridge.dagster_lineage import DagsterSource, run_job_ref
from bridge.metaflow_lineage import MetaflowSource


def sources_for(instance: DagsterInstance) -> dict:
    from forecast_assets.definitions import defs
    from forecast_assets.settings import LOCATION_NAME

    graph = defs.resolve_asset_graph()

    def parents(key):
        return sorted(graph.get(key).parent_keys) if graph.has(key) else []

    # Runs executed in-process (tests, `materialize()`) carry no origin; they run this location's code.
    return {
        "dagster": DagsterSource(instance, parents, default_location=LOCATION_NAME),
        "metaflow": MetaflowSource(dagster_run=lambda run_id, _job: run_job_ref(instance, run_id, LOCATION_NAME)),
    }
