"""A run's settings for its table steps, checked at each of its first steps: a refusal costs seconds, not the
downloads and Spark steps that would run before the table step that reads them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dagster import AssetExecutionContext, Failure
from pydantic import ValidationError

from forecast_assets.assets.month_checks import acceptance
from forecast_assets.audits import ACTUALS_AUDITS, Audit
from forecast_assets.config import ActualsConfig, TableWriteConfig
from forecast_assets.lakehouse.tables import HOURLY_ACTUALS, TableSpec
from forecast_assets.source_specs.registry import registered_sources
from taxi_core.names import NAMESPACE


def table_steps() -> dict[str, tuple[TableSpec, Sequence[Audit], type[TableWriteConfig]]]:
    """Each table step's op name, with its table, the audits ``accept`` may name and its settings' class."""
    steps = {
        f"{NAMESPACE}__{source.table.name}": (source.table, source.audits, TableWriteConfig)
        for source in registered_sources()
    }
    return steps | {f"{NAMESPACE}__{HOURLY_ACTUALS.name}": (HOURLY_ACTUALS, ACTUALS_AUDITS, ActualsConfig)}


def _refused(problem: str, op_name: str) -> Failure:
    msg = f"{problem} (ops: {op_name}). Nothing was downloaded or written: fix the run's config."
    return Failure(description=msg, allow_retries=False)


def _invalid(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(part) for part in problem['loc'])}: {problem['msg']} (given {problem['input']!r})"
        for problem in error.errors()
    )


def refuse_bad_settings(run_config: Mapping[str, Any]) -> None:
    """Each table step's settings in the run's config (``top_zones``, ``accept`` and ``reason``, every field),
    checked as that step checks them: by its settings' class, then its acceptance against its table's audits."""
    ops = run_config.get("ops") or {}
    for op_name, (spec, audits, settings_class) in table_steps().items():
        config = (ops.get(op_name) or {}).get("config") or {}
        if not config:
            continue
        try:
            settings = settings_class(**config)
        except ValidationError as invalid:
            raise _refused(f"The settings of {spec.identifier} are not valid: {_invalid(invalid)}", op_name) from None
        try:
            acceptance(spec, audits, settings)
        except Failure as refused:
            raise _refused(refused.description or "", op_name) from None


def check_run_settings(context: AssetExecutionContext) -> None:
    refuse_bad_settings(context.run.run_config or {})
