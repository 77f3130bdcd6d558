"""What a month's write tells Dagster, by what became of the month: published, unchanged or held back. Each is a
materialization with its checks' results and its ingestion report; a month held back fails its step with what
happened and what to do."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetKey,
    DagsterEventType,
    DataVersion,
    Failure,
    MaterializeResult,
    TableSchema,
)
from dagster import MetadataValue as MV
from pyspark.sql.types import StructType

from bridge.translate.dagster_columns import derived_column_lineage
from forecast_assets.assets.code_ran import code_ran
from forecast_assets.assets.month_checks import ACCEPTED, Judged, Verdict, reason
from forecast_assets.assets.month_write import MonthRows, MonthWrite
from forecast_assets.assets.table_metadata import (
    HELD_BACK,
    PUBLICATION,
    PUBLISHED,
    UNCHANGED,
    held_back_metadata,
    table_metadata,
    unchanged_metadata,
)
from forecast_assets.audits import ERROR
from forecast_assets.ingestion_report import REPORT_PREFIX, IngestionReport, reported
from forecast_assets.lakehouse.publication import Published
from forecast_assets.lakehouse.snapshots import PublishedMonth

# What a table's step yields: the month's materialization, or its checks alone.
TableEvent = MaterializeResult[Any] | AssetCheckResult


@dataclass(frozen=True)
class Unchanged:
    """A month published from the same inputs: its results (reused or judged again), rows and schema, and ``how``
    this run found it unchanged."""

    published: PublishedMonth
    judged: Judged
    rows: int
    # As the metadata gives it, or the published rows' Spark schema.
    schema: TableSchema | StructType
    how: str
    reused: bool


@dataclass(frozen=True)
class HeldBack:
    """A staged month a blocking audit failed on; ``current``, the snapshot ``main`` holds (None: empty)."""

    verdict: Verdict
    published: PublishedMonth | None
    current: int | None

    @property
    def judged(self) -> Judged:
        return self.verdict.judged


@dataclass(frozen=True)
class Publishing:
    """A staged month made current on ``main``, with the rows it was built from (for column lineage)."""

    verdict: Verdict
    done: Published
    built: MonthRows
    why: str
    # The results as they stand once published (``Verdict.published_as``).
    judged: Judged


Outcome = Unchanged | HeldBack | Publishing
_OUTCOMES: dict[type, str] = {Unchanged: UNCHANGED, HeldBack: HELD_BACK, Publishing: PUBLISHED}


def month_events(
    context: AssetExecutionContext, month: MonthWrite, outcome: Outcome, seconds: Mapping[str, float]
) -> Iterator[TableEvent]:
    """The month's materialization, with its checks and ingestion report; a month held back then fails the step."""
    spec, checks = month.spec, check_results(context, outcome.judged)
    if isinstance(outcome, Publishing):
        for left in outcome.done.dropped:
            context.log.info(f"Dropped {left.branch}, {_left_by(context, month, left.run_id)}")
    failure = _held_back_message(context, month, outcome) if isinstance(outcome, HeldBack) else ""
    columns = (
        derived_column_lineage(outcome.built.column_lineage, spec.identifier, context.log.warning)
        if isinstance(outcome, Publishing)
        else {}
    )
    written = outcome.done.write.rows_written if isinstance(outcome, Publishing) else 0
    report = reported(
        spec.identifier, month.partition, _OUTCOMES[type(outcome)], outcome.judged, rows_written=written,
        read=month.read, seconds=seconds, reused=isinstance(outcome, Unchanged) and outcome.reused,
    )  # fmt: skip
    made = {**month.metadata, **_report_entries(report), **code_ran(context)}
    if isinstance(outcome, Unchanged):
        published = outcome.published
        context.log.info(
            f"{spec.identifier} {month.label} is unchanged: it was published at snapshot {published.snapshot_id} "
            f"from the same source, so nothing is written ({outcome.how}; set rewrite_unchanged to write it again)"
        )
        metadata = unchanged_metadata(spec, month.partition, published, outcome.rows, outcome.schema)
        yield MaterializeResult(
            metadata=metadata | made, data_version=DataVersion(str(published.snapshot_id)), check_results=checks
        )
    elif isinstance(outcome, HeldBack):
        failed = [audit.name for audit, _ in outcome.verdict.blocking]
        metadata = held_back_metadata(spec, month.partition, failed, outcome.verdict.staged, outcome.current)
        version = None if outcome.published is None else DataVersion(str(outcome.published.snapshot_id))
        yield MaterializeResult(metadata=metadata | made, data_version=version, check_results=checks)
        # The step fails with what happened and what to do, rather than Dagster's bare check failure.
        raise Failure(description=failure, allow_retries=False)
    else:
        write = outcome.done.write
        context.log.info(
            f"Published {spec.identifier} {month.label}: {write.rows_written} rows, snapshot {write.snapshot_id}"
        )
        overridden = [audit.name for audit, result in outcome.judged if ACCEPTED in result.metadata]
        accepted = {"accepted_audits": ", ".join(overridden), "acceptance_reason": outcome.why} if overridden else {}
        rows = outcome.built.rows
        metadata = table_metadata(spec, write, rows.schema, month.partition, **{PUBLICATION: PUBLISHED}, **columns)
        yield MaterializeResult(
            metadata=metadata | made | accepted, data_version=DataVersion(str(write.snapshot_id)), check_results=checks
        )


def _report_entries(report: IngestionReport) -> dict[str, Any]:
    """The report's figures as Dagster shows them: counts and seconds as numbers it plots, the warnings as a list."""
    entries: dict[str, Any] = {}
    for name, value in report.figures().items():
        key = f"{REPORT_PREFIX}{name}"
        if isinstance(value, bool):
            entries[key] = MV.bool(value)
        elif isinstance(value, int):
            entries[key] = MV.int(value)
        elif isinstance(value, float):
            entries[key] = MV.float(value)
        else:
            entries[key] = MV.md(value) if name == "warnings" else MV.text(value)
    return entries


def check_results(context: AssetExecutionContext, judged: Judged) -> list[AssetCheckResult]:
    """The audits' results as the asset's check results."""
    keys = {key.name: key for key in context.selected_asset_check_keys}
    return [
        AssetCheckResult(
            asset_key=keys[audit.name].asset_key,
            check_name=audit.name,
            passed=result.passed,
            severity=AssetCheckSeverity.ERROR if result.severity == ERROR else AssetCheckSeverity.WARN,
            description=result.description,
            metadata=dict(result.metadata),
        )
        for audit, result in judged
    ]


def _held_back_message(context: AssetExecutionContext, month: MonthWrite, held: HeldBack) -> str:
    blocking, staged = held.verdict.blocking, held.verdict.staged
    names = [audit.name for audit, _ in blocking]
    kept = f"still holds snapshot {held.current}" if held.current is not None else "is still empty"
    reasons = "\n".join(f"- {audit.name}: {reason(audit, result)}" for audit, result in blocking)
    files = f"\nFile: {month.files}." if month.files else ""
    accept = "\n".join(f"          - {name}" for name in names)
    return (
        f"{month.spec.identifier} {month.label} was NOT published: {', '.join(sorted(names))} failed on the staged "
        f"{'month' if month.window else 'table'}.\n"
        f"{reasons}{files}\n"
        f"The published table {kept}. The staged month stays on {staged.location} for inspection: "
        f"{staged.how_to_read}.\n"
        "Fix the source and materialize the partition again. If the month is right as it is (a real change), "
        f"publish it by accepting the audits with a reason, in the launchpad's config:\n"
        f"  ops:\n    {context.op_def.name}:\n      config:\n        accept:\n{accept}\n"
        "        reason: <why this month is right>"
    )


def _left_by(context: AssetExecutionContext, month: MonthWrite, run_id: str | None) -> str:
    """What became of the earlier run that left a branch, as its Dagster record says: held back by its audit, or
    ended (killed, lost, canceled) before it was audited."""
    if run_id is None:
        return "a branch an earlier run cut and ended before writing to (nothing was staged on it)"
    run = context.instance.get_run_by_id(run_id)
    status = run.status.value.lower() if run is not None else "no longer in this Dagster instance"
    key = AssetKey(month.spec.identifier.split("."))
    for entry in context.instance.all_logs(run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION):
        made = entry.asset_materialization
        if made is not None and made.asset_key == key and _value(made.metadata.get(PUBLICATION)) == HELD_BACK:
            failed = _value(made.metadata.get("failed_checks")) or "its blocking checks"
            return f"the staged month of run {run_id[:8]}, held back because {failed} failed on it"
    return f"the staged month of run {run_id[:8]} (status: {status}), which ended before its audit: never published"


def _value(entry: Any) -> Any:
    return None if entry is None else entry.value
