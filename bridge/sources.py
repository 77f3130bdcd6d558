"""The bridge's sources for one Dagster instance: its event log, and the Metaflow runs beside it."""

from __future__ import annotations

from dagster import DagsterInstance

from bridge.dagster_lineage import DagsterSource, run_job_ref
from bridge.metaflow_lineage import MetaflowSource


def sources_for(instance: DagsterInstance) -> dict:
    from forecast_assets.definitions import defs

    graph = defs.resolve_asset_graph()

    def parents(key):
        return sorted(graph.get(key).parent_keys) if graph.has(key) else []

    return {
        "dagster": DagsterSource(instance, parents),
        "metaflow": MetaflowSource(dagster_run=lambda run_id, job: run_job_ref(instance, run_id, job)),
    }
