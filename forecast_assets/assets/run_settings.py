"""A run's settings for its table steps, checked at each of its first steps: a refusal costs seconds, not the
downloads and Spark steps that would run before the table step that reads them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dagster import AssetExecutionContext, Failure

from forecast_assets.assets.publishing import acceptance
from forecast_assets.audits import ACTUALS_AUDITS, Audit
from forecast_assets.config import TableWriteConfig
from forecast_assets.lakehouse.tables import HOURLY_ACTUALS, TableSpec
from forecast_assets.source_specs.registry import registered_sources
from taxi_core.names import NAMESPACE


def table_steps() -> dict[str, tuple[TableSpec, Sequence[Audit]]]:
    """Each table step's op name, with its table and the audits ``accept`` may name."""
    steps = {f"{NAMESPACE}__{source.table.name}": (source.table, source.audits) for source in registered_sources()}
    return steps | {f"{NAMESPACE}__{HOURLY_ACTUALS.name}": (HOURLY_ACTUALS, ACTUALS_AUDITS)}


def refuse_bad_acceptance(run_config: Mapping[str, Any]) -> None:
    """Each table step's ``accept`` and ``reason`` in the run's config, checked as that step checks them."""
    ops = run_config.get("ops") or {}
    for op_name, (spec, audits) in table_steps().items():
        config = (ops.get(op_name) or {}).get("config") or {}
        if not config.get("accept"):
            continue
        try:
            acceptance(spec, audits, TableWriteConfig(accept=config["accept"], reason=config.get("reason", "")))
        except Failure as refused:
            msg = f"{refused.description} (ops: {op_name}). Nothing was downloaded or written: fix the run's config."
            raise Failure(description=msg, allow_retries=False) from None


def check_run_settings(context: AssetExecutionContext) -> None:
    refuse_bad_acceptance(context.run.run_config or {})
