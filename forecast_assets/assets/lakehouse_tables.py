"""Iceberg table assets written by Spark: each declared source's table, and the hourly actuals.

Each writes its month with write-audit-publish: readers of the published tables, the
downstream assets and the training flow included, never see a month that failed its checks.
"""

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from dagster import (
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    BackfillPolicy,
    Failure,
    PartitionsDefinition,
    multi_asset,
)

from bridge.translate.dagster_inputs import input_versions_metadata
from forecast_assets.assets.month_checks import acceptance
from forecast_assets.assets.month_range import RangeEvent, over_months
from forecast_assets.assets.month_results import TableEvent
from forecast_assets.assets.month_write import MonthRows, MonthWrite, selected_audits
from forecast_assets.assets.publishing import CODE_VERSION_PROPERTY, audit_published, write_audit_publish
from forecast_assets.assets.source_files import partition_window
from forecast_assets.assets.table_metadata import snapshot_text
from forecast_assets.audits import ACTUALS_AUDITS, Audit, MonthFacts
from forecast_assets.config import ActualsConfig, TableWriteConfig
from forecast_assets.dagster_previews import previews_relied_on
from forecast_assets.ingestion_report import SourceRead
from forecast_assets.lakehouse.metadata_reading import read_metadata
from forecast_assets.lakehouse.neighbours import NeighbourMonth, counted_from_table, neighbour_months
from forecast_assets.lakehouse.snapshots import published_month
from forecast_assets.lakehouse.spark_progress import reporting_progress
from forecast_assets.lakehouse.table_reading import TableReading
from forecast_assets.lakehouse.tables import HOURLY_ACTUALS, TableSpec, month_rows
from forecast_assets.month_summary import summarised_by
from forecast_assets.resources import SparkResource, StagingResource
from forecast_assets.source_specs.spec import SourceSpec, StagedFiles
from forecast_assets.source_specs.yellow_trips import RAW_YELLOW
from forecast_assets.sources.download import FetchRecord
from forecast_assets.sources.staging import Staging
from forecast_assets.transforms.hourly_actuals import hourly_actuals
from taxi_core.months import MonthWindow
from taxi_core.names import NAMESPACE
from taxi_core.zones import load_zones

LAKEHOUSE_GROUP = "lakehouse"
UNKNOWN_BOROUGHS = {"Unknown", "N/A"}
# Bump when the transform changes what it writes: a month built by older code is then rewritten.
ACTUALS_CODE_VERSION = "3"


def check_spec(audit: Audit, asset_key: AssetKey, partitions: PartitionsDefinition | None) -> AssetCheckSpec:
    with previews_relied_on():
        return AssetCheckSpec(
            audit.name, asset=asset_key, description=audit.description, blocking=audit.blocking,
            partitions_def=partitions,
        )  # fmt: skip


def _table_asset(
    spec: TableSpec,
    deps: list[AssetKey],
    audits: Sequence[Audit],
    description: str,
    code_version: str,
    partitions: PartitionsDefinition | None,
) -> Callable[[Callable[..., Iterator[RangeEvent]]], AssetsDefinition]:
    key = AssetKey([NAMESPACE, spec.name])
    return multi_asset(
        name=f"{NAMESPACE}__{spec.name}",
        specs=[
            AssetSpec(
                key,
                deps=deps,
                description=description,
                group_name=LAKEHOUSE_GROUP,
                kinds={"spark", "iceberg"},
                code_version=code_version,
            )
        ],
        check_specs=[check_spec(audit, key, partitions) for audit in audits],
        partitions_def=partitions,
        # Subsettable, so a user can execute the checks alone: they then audit the published month.
        can_subset=True,
        # A range of months is one run on one Spark session, each month still published on its own (month_range.py).
        backfill_policy=BackfillPolicy.single_run() if partitions is not None else None,
    )


def _read(versions: dict[AssetKey, str | int | None]) -> dict[str, Any]:
    """What the month is built from, at the versions read, for the lineage bridge (per-run truth)."""
    read = {key.to_user_string(): str(version) for key, version in versions.items() if version is not None}
    return input_versions_metadata(read)


def _staged_or_fail(store: Staging, name: str, upstream: str, key: str | None) -> FetchRecord:
    record = store.record(name)
    if record is None:
        which = f" for partition {key}" if key is not None else ""
        msg = f"{name} is not staged: materialize {upstream}{which} first."
        raise Failure(description=msg, allow_retries=False)
    return record


def source_table_asset(source: SourceSpec, months: PartitionsDefinition) -> AssetsDefinition:
    """The Iceberg table ``source`` feeds, written with write-audit-publish from its staged files."""

    def one_month(
        context: AssetExecutionContext,
        key: str | None,
        config: TableWriteConfig,
        spark: SparkResource,
        staging: StagingResource,
    ) -> Iterator[TableEvent]:
        window = partition_window(key, source)
        files = source.files_for(window)
        names = tuple(source.staged_name(file) for file in files)
        store = staging.store()
        staged = StagedFiles(
            window=window,
            files=files,
            names=names,
            paths=tuple(store.spark_path(name) for name in names),
            records=tuple(_staged_or_fail(store, name, source.file_asset, key) for name in names),
        )

        def build_rows() -> MonthRows:
            read = source.read(spark.session, staged)
            return MonthRows(read.rows, {AssetKey(source.file_asset): read.read_from})

        def read_facts(state: TableReading | None) -> MonthFacts:
            neighbours: tuple[NeighbourMonth, ...] = ()
            month = window.month if window else "(whole table)"
            what = f"Reading what {source.table.identifier} {month} is audited against"
            with reporting_progress(spark.session.sparkContext, context.log.info, what, ends=False):
                if source.neighbours_by and window is not None and state is not None:
                    # From the summaries the months kept, in the table's state already loaded; a month published
                    # before summaries were kept is counted from its rows.
                    count = counted_from_table(
                        spark.session,
                        source.table,
                        source.neighbours_by,
                        source.neighbours_dated_by,
                        source.neighbours_ended_by,
                    )
                    neighbours = neighbour_months(state, window, count)
                zones = source.zone_reference(spark.session) if source.zone_reference else None
            return MonthFacts(window, expected_rows=source.expected_rows(staged), neighbours=neighbours, zones=zones)

        month = MonthWrite(
            spec=source.table,
            audits=selected_audits(context, source.audits),
            window=window,
            read_facts=read_facts,
            identity={"source.fingerprint": staged.fingerprints, CODE_VERSION_PROPERTY: source.code_version},
            build_rows=build_rows,
            files=staged.described,
            read=SourceRead(len(staged.records), sum(record.size for record in staged.records), staged.rows),
            summarise=summarised_by(source.neighbours_by) if source.neighbours_by and window is not None else None,
            metadata={
                "source_file": staged.file_names,
                "source_fingerprint": staged.fingerprints,
                "source_rows": staged.rows,
                **_read({AssetKey(source.file_asset): staged.version}),
            },
        )
        yield from _written_or_checked(context, spark, month, config)

    def build(
        context: AssetExecutionContext, config: TableWriteConfig, spark: SparkResource, staging: StagingResource
    ) -> Iterator[RangeEvent]:
        acceptance(source.table, source.audits, config)
        if not source.monthly:
            yield from one_month(context, None, config, spark, staging)
            return
        key = AssetKey([NAMESPACE, source.table.name])
        yield from over_months(context, key, lambda month: one_month(context, month, config, spark, staging))

    return _table_asset(
        source.table,
        [AssetKey(source.file_asset)],
        source.audits,
        source.table_description,
        source.code_version,
        months if source.monthly else None,
    )(build)


def eligible_zones() -> list[int]:
    return [zone.location_id for zone in load_zones() if zone.borough not in UNKNOWN_BOROUGHS]


def yellow_rides_hourly_actuals(
    context: AssetExecutionContext, config: ActualsConfig, spark: SparkResource
) -> Iterator[RangeEvent]:
    acceptance(HOURLY_ACTUALS, ACTUALS_AUDITS, config)
    key = AssetKey([NAMESPACE, HOURLY_ACTUALS.name])
    yield from over_months(context, key, lambda month: _actuals_month(context, month, config, spark))


def _actuals_month(
    context: AssetExecutionContext, key: str, config: ActualsConfig, spark: SparkResource
) -> Iterator[TableEvent]:
    window = MonthWindow.from_partition_key(key)
    # One load of raw_yellow's metadata gives the month counted (no Spark: an unchanged month of actuals is known
    # without it).
    trips = read_metadata(spark.catalog.load(), RAW_YELLOW.identifier)
    trips_month = published_month(trips, key) if trips is not None else None
    if trips_month is None and context.selected_asset_keys:
        msg = (
            f"{RAW_YELLOW.identifier} has no published rows for {window.month}: materialize "
            f"{NAMESPACE}/{RAW_YELLOW.name} for partition {key} first."
        )
        raise Failure(description=msg, allow_retries=False)
    # The raw month counted (the snapshot that last wrote it), not raw_yellow's head: a month published since is none
    # of these actuals' input, and no change to them.
    counted = trips_month.snapshot_id if trips_month else None

    def build_rows() -> MonthRows:
        session = spark.session
        rows = month_rows(session, RAW_YELLOW, window)
        actuals = hourly_actuals(session, rows, window.start, window.end, eligible_zones(), config.top_zones)
        return MonthRows(actuals, {AssetKey([NAMESPACE, RAW_YELLOW.name]): rows})

    month = MonthWrite(
        spec=HOURLY_ACTUALS,
        audits=selected_audits(context, ACTUALS_AUDITS),
        window=window,
        read_facts=lambda state: MonthFacts(window),
        identity={
            f"input.{RAW_YELLOW.identifier}.month-snapshot-id": str(counted or ""),
            "actuals.top-zones": str(config.top_zones or "every zone with a ride"),
            CODE_VERSION_PROPERTY: ACTUALS_CODE_VERSION,
        },
        build_rows=build_rows,
        metadata={
            "hours": window.hours,
            "zones_kept": config.top_zones or "every zone with a ride",
            "raw_yellow_snapshot_id": snapshot_text(counted) if counted else "",
            "source_fingerprint": (trips_month.properties.get("source.fingerprint", "") if trips_month else ""),
            **_read({AssetKey([NAMESPACE, RAW_YELLOW.name]): counted}),
        },
    )
    yield from _written_or_checked(context, spark, month, config)


def _written_or_checked(
    context: AssetExecutionContext, spark: SparkResource, month: MonthWrite, config: TableWriteConfig
) -> Iterator[TableEvent]:
    """The month written, audited and published; or, when the user executes the checks alone, they run on the month
    as published."""
    if context.selected_asset_keys:
        yield from write_audit_publish(context, spark, month, config)
    else:
        yield from audit_published(context, spark, month)


def actuals_asset(months: PartitionsDefinition) -> AssetsDefinition:
    """The hourly actuals, counted from the published raw trips, partitioned by ``months``."""
    return _table_asset(
        HOURLY_ACTUALS,
        [AssetKey([NAMESPACE, RAW_YELLOW.name])],
        ACTUALS_AUDITS,
        "Rides per pickup hour for every zone with a ride in the month, with a row (zero if need be) for every hour.",
        ACTUALS_CODE_VERSION,
        months,
    )(yellow_rides_hourly_actuals)
