"""How the month is published now, and whether from the same inputs, so that nothing need be written: decided from
the table's metadata with pyiceberg when it holds everything the step reports (no Spark starts), else in Spark."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from dagster import AssetExecutionContext, TableSchema
from pyspark.sql import DataFrame

from forecast_assets.assets.month_checks import judged_on, reused
from forecast_assets.assets.month_results import Unchanged
from forecast_assets.assets.month_write import MonthWrite
from forecast_assets.assets.table_metadata import metadata_schema
from forecast_assets.lakehouse.metadata_reading import read_metadata
from forecast_assets.lakehouse.publication import Publication
from forecast_assets.lakehouse.snapshots import PublishedMonth, published_month, recorded_audits
from forecast_assets.lakehouse.spark_progress import reporting_progress
from forecast_assets.lakehouse.tables import month_rows, needs_upkeep
from forecast_assets.resources import SparkResource

FROM_METADATA, IN_SPARK = "decided from the table's metadata; Spark was not started", "read in Spark"


@dataclass(frozen=True)
class Opened:
    """A month to be written: its table opened for the write, and the month with the table's state its audits' facts
    are read from."""

    publication: Publication
    month: MonthWrite


def looked_up(
    context: AssetExecutionContext, spark: SparkResource, month: MonthWrite, rewrite: bool
) -> Unchanged | Opened:
    """The month as published, when it was built from the same inputs and ``rewrite`` is not asked for: from the
    metadata when it keeps every selected audit's result and nothing is to be brought up to date, else in Spark
    (counted, and audited when its results were not kept). Otherwise the table, opened for the month's write."""
    spec, selected = month.spec, {audit.name for audit in month.audits}
    reading = None if rewrite else read_metadata(spark.catalog.load(), spec.identifier)
    main = reading.ref("main") if reading is not None else None
    published: PublishedMonth | None = None
    record: dict[str, dict[str, Any]] | None = None
    told: tuple[int, TableSchema] | None = None  # the month's rows and schema, when the metadata tells all
    if reading is not None and main is not None and not needs_upkeep(reading, spec):
        published = published_month(reading, month.partition)
        if published is not None and published.built_from(month.identity):
            record = recorded_audits(reading, month.partition, published.snapshot_id)
            rows = reading.rows_in_month(spec, month.window, main)
            schema = metadata_schema(reading, spec.descriptions)
            if record is not None and selected <= set(record) and rows is not None and schema is not None:
                told = (rows, schema)
    frame: DataFrame | None = None
    if told is None:
        session = spark.session
        what = f"Reading how {spec.identifier} {month.label} is published"
        with reporting_progress(session.sparkContext, context.log.info, what, ends=False):
            publication = Publication.open(session, spec, month.window, month.partition)
        month = replace(month, state=publication.state)
        published, record = publication.published, publication.published_audits
        if rewrite or published is None or not published.built_from(month.identity):
            return Opened(publication, month)
        frame = month_rows(session, spec, month.window)
    if published is None:  # an invariant: both ways above end with the month published
        raise RuntimeError(f"{spec.identifier} {month.label}: no published month after looking it up")
    kept = reused(context, month, record, published)
    if told is not None and kept is not None:
        return Unchanged(published, kept, *told, FROM_METADATA, True)
    if frame is None:  # an invariant: the metadata told all only with every selected audit's result kept
        raise RuntimeError(f"{spec.identifier} {month.label}: audit results missing from the metadata read")
    judged = (
        kept if kept is not None else judged_on(context, frame, month, f"published snapshot {published.snapshot_id}")
    )
    return Unchanged(published, judged, frame.count(), frame.schema, IN_SPARK, kept is not None)
