"""Write-audit-publish one month of a table from inside its Dagster asset.

The month is written to an Iceberg branch, the asset's checks run on exactly those rows, and
``main`` moves only when every blocking check passes. A month whose inputs equal those the
published month was built from is not written again. When the user executes the checks alone,
they run on the published month.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
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
from pyspark.sql import DataFrame

from bridge.translate.column_lineage import ColumnLineage
from bridge.translate.dagster_columns import derived_column_lineage
from bridge.translate.spark_plan import column_lineage
from forecast_assets.assets.code_ran import code_ran
from forecast_assets.assets.table_metadata import (
    COLUMN_SCHEMA,
    ROW_COUNT,
    SNAPSHOT_ID,
    TABLE_NAME,
    metadata_schema,
    snapshot_text,
    table_metadata,
    table_schema,
)
from forecast_assets.audit_run import AggregatePass, judge_measured, measure
from forecast_assets.audits import ERROR, WARN, Audit, AuditResult, Measured, MonthFacts
from forecast_assets.config import TableWriteConfig
from forecast_assets.lakehouse.metadata_reading import read_metadata
from forecast_assets.lakehouse.publication import Publication
from forecast_assets.lakehouse.snapshots import PublishedMonth, StagedMonth, published_month, recorded_audits
from forecast_assets.lakehouse.spark_progress import reporting_progress
from forecast_assets.lakehouse.table_reading import TableReading
from forecast_assets.lakehouse.tables import TableSpec, month_rows, needs_upkeep
from forecast_assets.month_summary import Summarise
from forecast_assets.resources import SparkResource
from taxi_core.months import MonthWindow

PUBLICATION = "publication"
# What a table's step yields: the month's materialization, or its checks alone.
TableEvent = MaterializeResult[Any] | AssetCheckResult
PUBLISHED, UNCHANGED, HELD_BACK = "published", "unchanged", "held back"
CODE_VERSION_PROPERTY = "dagster.code-version"


@dataclass(frozen=True)
class MonthWrite:
    """One month of one table, as its asset hands it to write-audit-publish."""

    spec: TableSpec
    audits: list[Audit]
    window: MonthWindow | None
    # What the audits hold the month to (its published neighbours, the zone lookup): read from the table's state once
    # it is open (see ``opened``), and only when the month is audited.
    read_facts: Callable[[TableReading | None], MonthFacts]
    # What the month is built from (source fingerprints, inputs, settings, code version), recorded
    # on the snapshot; the month is unchanged when the published one was built from the same.
    identity: dict[str, str]
    build_rows: Callable[[], MonthRows]
    metadata: dict[str, Any] = field(default_factory=dict)
    # The source files as a user finds them again (name, address, sha256), for a held-back month's message.
    files: str = ""
    # What the published month keeps of itself for its neighbours' audits (None: nothing).
    summarise: Summarise | None = None
    # The table's state as write-audit-publish loaded it (None until the table is open).
    state: TableReading | None = None

    def opened(self, state: TableReading) -> MonthWrite:
        """The month with the table's state loaded, which its facts are read from: no second load."""
        return replace(self, state=state)

    @cached_property
    def facts(self) -> MonthFacts:
        return self.read_facts(self.state)


@dataclass(frozen=True)
class MonthRows:
    """A month's rows, and the DataFrames they are read from by asset key (for column lineage)."""

    rows: DataFrame
    inputs: Mapping[AssetKey, DataFrame]

    def column_lineage(self) -> ColumnLineage:
        """Derived from the rows' plan once per shape (the inputs' and the rows' schemas) in a process: the months of
        a range share it, and a plan walk costs some 80 ms of calls into the JVM."""
        labelled = {key.to_user_string(): frame for key, frame in self.inputs.items()}
        shape = (
            self.rows.schema.json(),
            *(f"{label}={frame.schema.json()}" for label, frame in sorted(labelled.items())),
        )
        if shape not in _LINEAGE_BY_SHAPE:
            _LINEAGE_BY_SHAPE[shape] = column_lineage(self.rows, labelled)
        return _LINEAGE_BY_SHAPE[shape]


# The code is the process's: the same schemas in and out give the same column lineage.
_LINEAGE_BY_SHAPE: dict[tuple[str, ...], ColumnLineage] = {}


WHOLE_TABLE = "whole table"
# A check's metadata: true when its result is the one recorded when the unchanged month was published.
REUSED = "reused_from_publication"
STAGING_ONLY = ("staged_branch", "read_staged_with")  # the branch is dropped once the month is published


ACCEPTED = "accepted"
ACCEPTED_PROPERTY, REASON_PROPERTY = "audit.accepted", "audit.accepted-reason"


def _blocked(audit: Audit, result: AuditResult) -> bool:
    return audit.blocking and not result.passed and result.severity == ERROR


def _reason(audit: Audit, result: AuditResult) -> str:
    """What failed, in figures: the audit's own sentence, or its measurements where it has none."""
    if result.description:
        return result.description
    measured = ", ".join(f"{key} {value}" for key, value in result.metadata.items() if key not in STAGING_ONLY)
    return f"{audit.description} Measured: {measured}."


def acceptance(spec: TableSpec, audits: Sequence[Audit], config: TableWriteConfig) -> set[str]:
    """The audits this run accepts, checked before anything is read: each must be one of the table's, with a
    reason."""
    accepted = set(config.accept)
    if not accepted:
        return accepted
    names = {audit.name for audit in audits}
    unknown = sorted(accepted - names)
    if unknown:
        msg = (
            f"accept names {', '.join(unknown)}, which {'is' if len(unknown) == 1 else 'are'} not an audit of "
            f"{spec.identifier}; its audits are {', '.join(sorted(names))}."
        )
        raise Failure(description=msg, allow_retries=False)
    if not config.reason.strip():
        msg = (
            f"accept lists {', '.join(sorted(accepted))} but gives no reason: add reason: '<why this month is "
            "right though its audits fail>', which is recorded with the published month and in the lineage."
        )
        raise Failure(description=msg, allow_retries=False)
    return accepted


def _accepted(
    judged: list[tuple[Audit, AuditResult]], accepted: set[str], reason: str, run_id: str
) -> list[tuple[Audit, AuditResult]]:
    """Accepted audits that would hold the month back, turned into warnings that say who accepted them and why."""
    turned = []
    for audit, result in judged:
        if audit.name in accepted and _blocked(audit, result):
            result = replace(
                result,
                severity=WARN,
                description=f"Accepted by run {run_id[:8]}: {reason}. {_reason(audit, result)}",
                metadata={**result.metadata, ACCEPTED: reason},
            )
        turned.append((audit, result))
    return turned


def _partition(month: MonthWrite) -> str:
    """The month's partition key; a table written whole has one slice, recorded as ``whole table``."""
    return month.window.partition_key if month.window else WHOLE_TABLE


def _label(month: MonthWrite) -> str:
    window = month.window
    return window.month if window else "(whole table)"


def _selected_audits(context: AssetExecutionContext, month: MonthWrite) -> list[Audit]:
    selected = {key.name for key in context.selected_asset_check_keys}
    return [audit for audit in month.audits if audit.name in selected]


def _run_audits(
    context: AssetExecutionContext,
    rows: DataFrame,
    month: MonthWrite,
    audited: str,
    extra: dict[str, Any] | None = None,
    measured: Measured | None = None,
) -> list[tuple[Audit, AuditResult]]:
    """The selected audits judged on ``rows``, each result's metadata saying what was audited; ``measured``, what
    was measured of the rows already (measured here if None)."""
    audits = _selected_audits(context, month)
    found = measure(rows, audits, month.facts) if measured is None else measured
    return [
        (audit, replace(result, metadata={**result.metadata, "audited": audited, **(extra or {})}))
        for audit, result in judge_measured(found, audits, month.facts)
    ]


def _check_results(context: AssetExecutionContext, judged: list[tuple[Audit, AuditResult]]) -> list[AssetCheckResult]:
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


def _as_record(judged: list[tuple[Audit, AuditResult]]) -> dict[str, dict[str, Any]]:
    return {audit.name: asdict(result) for audit, result in judged}


def _recorded(
    context: AssetExecutionContext,
    month: MonthWrite,
    record: dict[str, dict[str, Any]] | None,
    published: PublishedMonth,
) -> list[tuple[Audit, AuditResult]] | None:
    """The selected audits' results the unchanged month was published with, marked as reused; None if any is
    missing (the month was published before results were kept, or by other audits)."""
    audits = _selected_audits(context, month)
    if record is None or any(audit.name not in record for audit in audits):
        return None
    by = published.properties.get("dagster.run-id", "")[:8]
    judged = []
    for audit in audits:
        result = AuditResult(**record[audit.name])
        kept = _without_staging(result.metadata)
        audited = (
            f"at publication, the {kept.get('audited', 'month')} (run {by}); the month is unchanged since "
            f"(snapshot {published.snapshot_id}), so it is not audited again"
        )
        judged.append((audit, replace(result, metadata={**kept, "audited": audited, REUSED: True})))
    return judged


def audit_published(context: AssetExecutionContext, spark: SparkResource, month: MonthWrite) -> Iterator[TableEvent]:
    """The checks alone, on the month as ``main`` holds it (the UI's "Execute checks")."""
    publication = Publication.open(spark.session, month.spec, month.window, _partition(month))
    month = month.opened(publication.state)
    # The version checked is the month's: the snapshot that last wrote it (the table's head for a table written whole).
    written = publication.published if month.window else None
    version = written.snapshot_id if written is not None else publication.main
    rows = month_rows(spark.session, month.spec, month.window)
    checked = {SNAPSHOT_ID: snapshot_text(version)} if version is not None else {}
    audited = f"published snapshot {publication.main}"
    yield from _check_results(context, _run_audits(context, rows, month, audited, checked))


def write_audit_publish(
    context: AssetExecutionContext, spark: SparkResource, month: MonthWrite, config: TableWriteConfig
) -> Iterator[TableEvent]:
    """Open the table, stage the month, audit it, publish it: one straight path over the table's state."""
    if not context.selected_asset_keys:
        yield from audit_published(context, spark, month)
        return
    accepted = acceptance(month.spec, month.audits, config)
    if not config.rewrite_unchanged:
        known = _unchanged_from_metadata(context, spark, month)
        if known is not None:
            yield known
            return
    session, spec = spark.session, month.spec
    reading = f"Reading how {spec.identifier} {_label(month)} is published"
    with reporting_progress(session.sparkContext, context.log.info, reading, ends=False):
        publication = Publication.open(session, spec, month.window, _partition(month))
    month = month.opened(publication.state)
    published = publication.published
    if published is not None and published.built_from(month.identity) and not config.rewrite_unchanged:
        yield _unchanged_in_spark(context, spark, month, published, publication.published_audits)
        return
    properties = {"dagster.run-id": context.run.run_id, "dagster.partition": _partition(month), **month.identity}
    if accepted:
        properties |= {ACCEPTED_PROPERTY: ", ".join(sorted(accepted)), REASON_PROPERTY: config.reason}
    what = f"Writing {spec.identifier} {_label(month)} to a staging branch (Spark reads and transforms the source)"
    # The audits' aggregate pass is computed while the month is written, so the staged rows are not read for it.
    aggregate_pass = AggregatePass.of(_selected_audits(context, month), month.facts)
    with reporting_progress(session.sparkContext, context.log.info, what):
        built = month.build_rows()
        staged = publication.stage(built.rows, context.run.run_id, properties, observe=aggregate_pass.column())
    staged_rows = staged.rows(session)
    observed = aggregate_pass.values(staged.observed)
    measured = measure(staged_rows, _selected_audits(context, month), month.facts, observed)
    judged = _run_audits(
        context,
        staged_rows,
        month,
        f"staged snapshot {staged.write.snapshot_id} on branch {staged.branch}",
        {"staged_branch": staged.branch, "read_staged_with": staged.how_to_read},
        measured,
    )
    judged = _accepted(judged, accepted, config.reason, context.run.run_id)
    for audit, result in judged:
        if not result.passed and not _blocked(audit, result):
            context.log.warning(f"{spec.identifier} {_label(month)}: {audit.name}: {_reason(audit, result)}")
    blocked = [(audit, result) for audit, result in judged if _blocked(audit, result)]
    if blocked:
        checks = _check_results(context, judged)
        held_back, message = _held_back(context, month, staged, published, publication.main, blocked, checks)
        yield held_back
        # The step fails with what happened and what to do, rather than Dagster's bare check failure.
        raise Failure(description=message, allow_retries=False)
    summary = month.summarise(staged_rows, measured) if month.summarise is not None else None
    outcome = publication.publish(
        staged, lambda snapshot_id: _as_record(_as_published(judged, staged, snapshot_id)), summary
    )
    write = outcome.write
    judged = _as_published(judged, staged, write.snapshot_id)
    for left in outcome.dropped:
        context.log.info(f"Dropped {left.branch}, {_left_by(context, spec, left.run_id)}")
    context.log.info(
        f"Published {spec.identifier} {_label(month)}: {write.rows_written} rows, snapshot {write.snapshot_id}"
    )
    columns = derived_column_lineage(built.column_lineage, spec.identifier, context.log.warning)
    overridden = [audit.name for audit, result in judged if ACCEPTED in result.metadata]
    accepted_with = {"accepted_audits": ", ".join(overridden), "acceptance_reason": config.reason} if overridden else {}
    yield MaterializeResult(
        metadata=table_metadata(
            spec, write, built.rows.schema, _partition(month), **{PUBLICATION: PUBLISHED}, **columns, **month.metadata
        )
        | accepted_with
        | code_ran(context),
        data_version=DataVersion(str(write.snapshot_id)),
        check_results=_check_results(context, judged),
    )


def _as_published(
    judged: list[tuple[Audit, AuditResult]], staged: StagedMonth, snapshot_id: int
) -> list[tuple[Audit, AuditResult]]:
    """The results as they stand once the month is published: its staging branch is dropped, so they name the
    snapshot published rather than the branch and how to read it."""
    staged_id = staged.write.snapshot_id
    # A fast-forward publishes the staged snapshot itself; a cherry-pick (another month published meanwhile), a copy.
    audited = (
        f"snapshot {staged_id}, staged then published"
        if staged_id == snapshot_id
        else f"staged snapshot {staged_id}, published as {snapshot_id}"
    )
    return [
        (audit, replace(result, metadata={**_without_staging(result.metadata), "audited": audited}))
        for audit, result in judged
    ]


def _without_staging(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in metadata.items() if key not in STAGING_ONLY}


def _left_by(context: AssetExecutionContext, spec: TableSpec, run_id: str | None) -> str:
    """What became of the earlier run that left ``branch``, as its Dagster record says: held back by its audit, or
    ended (killed, lost, canceled) before it was audited."""
    if run_id is None:
        return "a branch an earlier run cut and ended before writing to (nothing was staged on it)"
    run = context.instance.get_run_by_id(run_id)
    status = run.status.value.lower() if run is not None else "no longer in this Dagster instance"
    key = AssetKey(spec.identifier.split("."))
    for entry in context.instance.all_logs(run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION):
        made = entry.asset_materialization
        if made is not None and made.asset_key == key and _value(made.metadata.get(PUBLICATION)) == HELD_BACK:
            failed = _value(made.metadata.get("failed_checks")) or "its blocking checks"
            return f"the staged month of run {run_id[:8]}, held back because {failed} failed on it"
    return f"the staged month of run {run_id[:8]} (status: {status}), which ended before its audit: never published"


def _value(entry: Any) -> Any:
    return None if entry is None else entry.value


def _unchanged(
    context: AssetExecutionContext,
    month: MonthWrite,
    published: PublishedMonth,
    judged: list[tuple[Audit, AuditResult]],
    rows: int,
    schema: TableSchema,
    how: str,
) -> MaterializeResult[Any]:
    """The month as published, with ``judged`` (its audits' results) and ``how`` this run found it unchanged."""
    spec = month.spec
    context.log.info(
        f"{spec.identifier} {_label(month)} is unchanged: it was published at snapshot {published.snapshot_id} "
        f"from the same source, so nothing is written ({how}; set rewrite_unchanged to write it again)"
    )
    return MaterializeResult(
        metadata={
            TABLE_NAME: spec.identifier,
            PUBLICATION: UNCHANGED,
            SNAPSHOT_ID: snapshot_text(published.snapshot_id),
            ROW_COUNT: MV.int(rows),
            COLUMN_SCHEMA: schema,
            "partition": _partition(month),
            "published_by_run": published.properties.get("dagster.run-id", ""),
            **month.metadata,
            **code_ran(context),
        },
        data_version=DataVersion(str(published.snapshot_id)),
        check_results=_check_results(context, judged),
    )


def _unchanged_in_spark(
    context: AssetExecutionContext,
    spark: SparkResource,
    month: MonthWrite,
    published: PublishedMonth,
    record: dict[str, dict[str, Any]] | None,
) -> MaterializeResult[Any]:
    """An unchanged month whose audit results were not kept (``record`` None), or which the metadata alone could not
    describe: it is counted, and audited when need be, in Spark."""
    rows = month_rows(spark.session, month.spec, month.window)
    judged = _recorded(context, month, record, published)
    if judged is None:
        judged = _run_audits(context, rows, month, f"published snapshot {published.snapshot_id}")
    schema = table_schema(rows.schema, month.spec.descriptions)
    return _unchanged(context, month, published, judged, rows.count(), schema, "read in Spark")


def _unchanged_from_metadata(
    context: AssetExecutionContext, spark: SparkResource, month: MonthWrite
) -> MaterializeResult[Any] | None:
    """The month's materialization when its table's metadata shows it published from the same inputs, with every
    selected audit's result kept, and nothing to bring up to date: read with pyiceberg, so no Spark starts. None
    when the step has work for Spark."""
    spec, partition = month.spec, _partition(month)
    reading = read_metadata(spark.catalog.load(), spec.identifier)
    main = reading.ref("main") if reading is not None else None
    if reading is None or main is None or needs_upkeep(reading, spec):
        return None
    published = published_month(reading, partition)
    if published is None or not published.built_from(month.identity):
        return None
    judged = _recorded(context, month, recorded_audits(reading, partition, published.snapshot_id), published)
    rows = reading.month_rows(spec, month.window, main)
    schema = metadata_schema(reading, spec.descriptions)
    if judged is None or rows is None or schema is None:
        return None
    how = "decided from the table's metadata; Spark was not started"
    return _unchanged(context, month, published, judged, rows, schema, how)


def _held_back(
    context: AssetExecutionContext,
    month: MonthWrite,
    staged: StagedMonth,
    published: PublishedMonth | None,
    current: int | None,
    blocked: list[tuple[Audit, AuditResult]],
    checks: list[AssetCheckResult],
) -> tuple[MaterializeResult[Any], str]:
    """``current``: the snapshot ``main`` holds, as it was when the month was staged."""
    spec = month.spec
    names = [audit.name for audit, _ in blocked]
    kept = f"still holds snapshot {current}" if current is not None else "is still empty"
    reasons = "\n".join(f"- {audit.name}: {_reason(audit, result)}" for audit, result in blocked)
    files = f"\nFile: {month.files}." if month.files else ""
    accept = "\n".join(f"          - {name}" for name in names)
    message = (
        f"{spec.identifier} {_label(month)} was NOT published: {', '.join(sorted(names))} failed on the staged "
        f"{'month' if month.window else 'table'}.\n"
        f"{reasons}{files}\n"
        f"The published table {kept}. The staged month stays on {staged.location} for inspection: "
        f"{staged.how_to_read}.\n"
        "Fix the source and materialize the partition again. If the month is right as it is (a real change), "
        f"publish it by accepting the audits with a reason, in the launchpad's config:\n"
        f"  ops:\n    {context.op_def.name}:\n      config:\n        accept:\n{accept}\n"
        "        reason: <why this month is right>"
    )
    metadata = {
        TABLE_NAME: spec.identifier,
        PUBLICATION: HELD_BACK,
        "failed_checks": ", ".join(names),
        "staged_branch": staged.branch,
        "staged_snapshot_id": snapshot_text(staged.write.snapshot_id),
        "staged_rows": MV.int(staged.write.rows_written),
        "read_staged_with": staged.how_to_read,
        "partition": _partition(month),
        **month.metadata,
        **code_ran(context),
    }
    if current is not None:
        metadata[SNAPSHOT_ID] = snapshot_text(current)
    result: MaterializeResult[Any] = MaterializeResult(
        metadata=metadata,
        data_version=None if published is None else DataVersion(str(published.snapshot_id)),
        check_results=checks,
    )
    return result, message
