"""Jobs, and the sensors that bring in a source's new files as soon as they are published."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from dagster import (
    AssetKey,
    AssetsDefinition,
    AssetSelection,
    DefaultSensorStatus,
    PartitionsDefinition,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SkipReason,
    define_asset_job,
    sensor,
)

from forecast_assets.assets.lakehouse_tables import LAKEHOUSE_GROUP
from forecast_assets.assets.source_files import SOURCES_GROUP
from forecast_assets.resources import SourceResource, StagingResource
from forecast_assets.source_specs.spec import SourceFile, SourceSpec
from forecast_assets.sources.download import source_version
from taxi_core.months import MonthWindow
from taxi_core.names import NAMESPACE

if TYPE_CHECKING:  # Dagster exports the type of its asset jobs to type checkers only
    from dagster import UnresolvedAssetJobDefinition

MONTHLY_INGESTION, REFERENCE_DATA = "monthly_ingestion", "reference_data"

# The flow checks the forecast rows it wrote; the job records those evaluations after the table's materialization
# (forecast_assets/assets/training.py). Checks Dagster ran in the job would be dated by the run's start.
training_job = define_asset_job(
    "train_forecast_model",
    selection=AssetSelection.groups("training").without_checks(),
    description="Run the Metaflow training flow and record the new model version, its forecasts and their checks.",
)

# Months past the newest ingested one that each tick looks for; older gaps are a backfill's job.
MONTHS_TO_WATCH = 24
NEWEST_WHEN_EMPTY = 2


def _assets_of(sources: Sequence[SourceSpec]) -> AssetSelection:
    keys = [AssetKey(source.file_asset) for source in sources]
    keys += [AssetKey([NAMESPACE, source.table.name]) for source in sources]
    return AssetSelection.assets(*keys)


def ingestion_jobs(sources: Sequence[SourceSpec]) -> list[UnresolvedAssetJobDefinition]:
    """A month of every monthly source (and what is built from it); and, apart, the sources published once.

    A Dagster job runs assets of one partitioning, so the sources that are not monthly have their own job.
    """
    published_once = [source for source in sources if not source.monthly]
    monthly = AssetSelection.groups(SOURCES_GROUP, LAKEHOUSE_GROUP) - _assets_of(published_once)
    jobs = [
        define_asset_job(
            MONTHLY_INGESTION,
            selection=monthly,
            description="Download a month's source files and rebuild its raw and hourly-actuals partitions.",
        )
    ]
    if published_once:
        names = ", ".join(source.file_asset for source in published_once)
        jobs.append(
            define_asset_job(
                REFERENCE_DATA,
                selection=_assets_of(published_once),
                description=f"Download the files published once for all months ({names}) and rebuild their tables.",
            )
        )
    return jobs


def months_to_look_for(all_keys: list[str], ingested: set[str]) -> list[str]:
    """Partition keys after the newest ingested one (the newest few when nothing is ingested)."""
    if not ingested:
        return all_keys[-NEWEST_WHEN_EMPTY:]
    newest = max(ingested)
    return [key for key in all_keys if key > newest][:MONTHS_TO_WATCH]


def _files(specs: Sequence[SourceSpec], window: MonthWindow | None) -> list[tuple[SourceSpec, SourceFile]]:
    """Each source's files for ``window`` (all time when None), with their source."""
    return [(spec, file) for spec in specs for file in spec.files_for(window)]


def _versions(source: SourceResource, specs: Sequence[SourceSpec], window: MonthWindow | None) -> list[str | None]:
    return [
        source_version(source.url(spec, file), setting=spec.base_url_variable) for spec, file in _files(specs, window)
    ]


def source_months_selection(spec: SourceSpec, assets: Sequence[AssetsDefinition]) -> list[AssetKey]:
    """A monthly source's assets and what a month of the lakehouse builds from them: a new month runs these."""
    own = AssetSelection.assets(AssetKey(spec.file_asset), AssetKey([NAMESPACE, spec.table.name]))
    monthly = AssetSelection.groups(SOURCES_GROUP, LAKEHOUSE_GROUP)
    return sorted((own.downstream() & monthly).resolve(assets), key=lambda key: key.to_user_string())


def new_source_months_sensor(
    spec: SourceSpec, months: PartitionsDefinition, assets: Sequence[AssetsDefinition]
) -> SensorDefinition:
    """Starts a month of ``spec``'s assets (and what is built from them) once the month's files are published.

    A source waits on no other: it asks for a month its own files have not brought in yet, by its own files.
    """
    selection = source_months_selection(spec, assets)
    names = ", ".join(key.to_user_string() for key in selection)

    @sensor(
        name=f"new_{spec.name}_months",
        job_name=MONTHLY_INGESTION,
        minimum_interval_seconds=3600,
        default_status=DefaultSensorStatus.RUNNING,
        description=f"Starts monthly_ingestion of {names} for a month once its {spec.publisher} files are published.",
    )
    def new_months(context: SensorEvaluationContext, source: SourceResource) -> Iterator[RunRequest | SkipReason]:
        ingested = context.instance.get_materialized_partitions(AssetKey(spec.file_asset))
        candidates = months_to_look_for(list(months.get_partition_keys()), ingested)
        requested = 0
        for key in candidates:
            versions = _versions(source, [spec], MonthWindow.from_partition_key(key))
            if None in versions:
                continue
            requested += 1
            yield RunRequest(
                partition_key=key, run_key=f"{key}:{'|'.join(map(str, versions))}", asset_selection=selection
            )
        if not candidates:
            last = months.get_last_partition_key()
            yield SkipReason(f"Every month up to {last} is ingested; no later month is a partition yet")
        elif not requested:
            yield SkipReason(f"No new month of {spec.file_asset} published among {', '.join(candidates)}")

    return new_months


def _as_staged(
    source: SourceResource, staging: StagingResource, specs: Sequence[SourceSpec], versions: list[str]
) -> bool:
    """True when each file's version (``source_version``) is the one staged last, from the same address."""
    store = staging.store()
    for (spec, file), version in zip(_files(specs, None), versions, strict=True):
        record = store.record(spec.staged_name(file))
        if record is None or record.url != source.url(spec, file) or version not in (record.etag, record.last_modified):
            return False
    return True


def changed_reference_files_sensor(sources: Sequence[SourceSpec]) -> SensorDefinition:
    published_once = [spec for spec in sources if not spec.monthly]
    names = ", ".join(file.path for _, file in _files(published_once, None))

    @sensor(
        job_name=REFERENCE_DATA,
        minimum_interval_seconds=3600,
        default_status=DefaultSensorStatus.RUNNING,
        description="Starts reference_data when a file published once for all months is new or has changed.",
    )
    def changed_reference_files(
        context: SensorEvaluationContext, source: SourceResource, staging: StagingResource
    ) -> Iterator[RunRequest | SkipReason]:
        versions = _versions(source, published_once, None)
        if None in versions:
            yield SkipReason("A reference file is not published (or not reachable) yet")
            return
        # A file staged by any run (the demo's, one launched from the UI) is not fetched again for its own sake.
        if _as_staged(source, staging, published_once, [str(version) for version in versions]):
            yield SkipReason(f"Published as staged last ({names}): nothing new to fetch")
            return
        # A run key per version of the files: Dagster starts a run once for each new version.
        yield RunRequest(run_key="|".join(map(str, versions)))

    return changed_reference_files


def source_sensors(
    sources: Sequence[SourceSpec], months: PartitionsDefinition, assets: Sequence[AssetsDefinition]
) -> list[SensorDefinition]:
    """A sensor per monthly source, and one for the sources published once; ``assets`` are the code location's."""
    sensors = [new_source_months_sensor(spec, months, assets) for spec in sources if spec.monthly]
    if any(not source.monthly for source in sources):
        sensors.append(changed_reference_files_sensor(sources))
    return sensors
