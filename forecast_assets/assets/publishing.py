"""Write-audit-publish one month of a table from inside its Dagster asset, top to bottom.

The month is written to an Iceberg branch, the asset's checks run on exactly those rows, and ``main`` moves only
when every blocking check passes. A month whose inputs equal those the published month was built from is not
written again. When the user executes the checks alone, they run on the published month (:func:`audit_published`).
Each step's results go out as one materialization with the month's ingestion report
(:mod:`forecast_assets.assets.month_results`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from time import perf_counter

from dagster import AssetExecutionContext

from forecast_assets.assets.month_checks import ACCEPTED_PROPERTY, REASON_PROPERTY, judged_on, staged_verdict
from forecast_assets.assets.month_results import (
    HeldBack,
    Outcome,
    Publishing,
    TableEvent,
    Unchanged,
    check_results,
    month_events,
)
from forecast_assets.assets.month_write import MonthWrite
from forecast_assets.assets.table_metadata import SNAPSHOT_ID, snapshot_text
from forecast_assets.assets.unchanged_month import looked_up
from forecast_assets.audit_run import AggregatePass, measure
from forecast_assets.config import TableWriteConfig
from forecast_assets.lakehouse.publication import Publication
from forecast_assets.lakehouse.spark_progress import reporting_progress
from forecast_assets.lakehouse.tables import month_rows
from forecast_assets.resources import SparkResource

CODE_VERSION_PROPERTY = "dagster.code-version"


def write_audit_publish(
    context: AssetExecutionContext, spark: SparkResource, month: MonthWrite, config: TableWriteConfig
) -> Iterator[TableEvent]:
    """Look the month up, stage it, audit it, publish it or hold it back; then say what became of it. The run's
    acceptance (``config.accept``) was checked by the asset before any month."""
    began = perf_counter()
    found = looked_up(context, spark, month, config.rewrite_unchanged)
    seconds = {"look_up": perf_counter() - began}
    outcome: Outcome
    if isinstance(found, Unchanged):
        outcome = found
    else:
        month, publication = found.month, found.publication
        session, spec, accepted = spark.session, month.spec, set(config.accept)
        properties = {"dagster.run-id": context.run.run_id, "dagster.partition": month.partition, **month.identity}
        if accepted:
            properties |= {ACCEPTED_PROPERTY: ", ".join(sorted(accepted)), REASON_PROPERTY: config.reason}
        what = f"Writing {spec.identifier} {month.label} to a staging branch (Spark reads and transforms the source)"
        # The audits' aggregate pass is computed while the month is written, so the staged rows are not read for it.
        aggregate_pass = AggregatePass.of(month.audits, month.facts)
        began = perf_counter()
        with reporting_progress(session.sparkContext, context.log.info, what):
            built = month.build_rows()
            staged = publication.stage(built.rows, context.run.run_id, properties, observe=aggregate_pass.column())
        seconds["write"], began = perf_counter() - began, perf_counter()
        staged_rows = staged.rows(session)
        measured = measure(staged_rows, month.audits, month.facts, aggregate_pass.values(staged.observed))
        verdict = staged_verdict(context, month, staged, staged_rows, measured, accepted, config.reason)
        seconds["audit"], began = perf_counter() - began, perf_counter()
        if verdict.blocking:
            outcome = HeldBack(verdict, publication.published, publication.main)
        else:
            summary = month.summarise(staged_rows, measured) if month.summarise is not None else None
            done = publication.publish(staged, verdict.record, summary)
            judged = verdict.published_as(done.write.snapshot_id)
            outcome = Publishing(verdict, done, built, config.reason, judged)
            seconds["publish"] = perf_counter() - began
    yield from month_events(context, month, outcome, seconds)


def audit_published(context: AssetExecutionContext, spark: SparkResource, month: MonthWrite) -> Iterator[TableEvent]:
    """The checks alone, on the month as ``main`` holds it (the UI's "Execute checks")."""
    publication = Publication.open(spark.session, month.spec, month.window, month.partition)
    month = replace(month, state=publication.state)
    # The version checked is the month's: the snapshot that last wrote it (the table's head for a table written whole).
    written = publication.published if month.window else None
    version = written.snapshot_id if written is not None else publication.main
    rows = month_rows(spark.session, month.spec, month.window)
    checked = {SNAPSHOT_ID: snapshot_text(version)} if version is not None else {}
    audited = f"published snapshot {publication.main}"
    yield from check_results(context, judged_on(context, rows, month, audited, checked))
