"""Source file assets: each month's TLC trip file and NOAA weather files, verified and staged."""

import re
from pathlib import Path
from urllib.parse import urlsplit

from dagster import (
    AssetExecutionContext,
    AssetsDefinition,
    DataVersion,
    Failure,
    MaterializeResult,
    MetadataValue,
    PartitionsDefinition,
    asset,
)

from forecast_assets.resources import SourceResource, StagingResource
from forecast_assets.sources.download import SourceInvalid, SourceMissing, SourceUnavailable
from forecast_assets.sources.noaa_format import ELEMENTS, weather_file_path
from forecast_assets.sources.stage import StagedFile, combined_fingerprint, stage_file
from forecast_assets.sources.tlc_format import trip_file_name
from forecast_assets.sources.verify import verify_trip_file, verify_weather_file
from taxi_core.months import MonthWindow
from taxi_core.names import ACTUALS, RAW_WEATHER, RAW_YELLOW, TRIP_FILES, TRIP_FOLDER, WEATHER_FILES, WEATHER_FOLDER

TRIP_PREFIX, WEATHER_PREFIX = TRIP_FOLDER, WEATHER_FOLDER
SOURCES_GROUP = "sources"
TABLES_FED_BY = {
    TRIP_PREFIX: f"{RAW_YELLOW} or {ACTUALS}",
    WEATHER_PREFIX: RAW_WEATHER,
}


def trip_staging_name(month: str) -> str:
    return f"{TRIP_PREFIX}/{trip_file_name(month)}"


def weather_staging_name(element: str, month: str) -> str:
    return f"{WEATHER_PREFIX}/{weather_file_path(element, month)}"


def _stage(
    context: AssetExecutionContext, url: str, name: str, source: SourceResource, staging: StagingResource, verify
) -> StagedFile:
    # Each source publishes its own tables; a bad file leaves exactly those as they were.
    kept = TABLES_FED_BY[name.split("/", 1)[0]]
    try:
        return stage_file(
            url, name, staging.store(), verify, Path(source.download_dir), context.log.info, source.retry_policy()
        )
    except SourceMissing as err:
        raise Failure(description=_missing(err, url, context.partition_key), allow_retries=False) from err
    except (SourceInvalid, SourceUnavailable) as err:
        # A bad or missing download never reaches staging: whatever a past run staged stays as it was.
        msg = f"{str(err).rstrip('.')}. Any copy staged before is kept, and this run does not write {kept}."
        raise Failure(description=msg, allow_retries=False) from err


MONTH_IN_NAME = re.compile(r"(\d{4}-?\d{2})\D")


def _missing(err: SourceMissing, url: str, partition_key: str) -> str:
    """Why a month has no file, and the fix, for where the files come from: the sample source or TLC and NOAA."""
    month = partition_key[:7]
    if url.startswith("file:"):
        folder = Path(urlsplit(url).path).parent
        has = sorted({found[0] for path in folder.glob("*") if (found := MONTH_IN_NAME.findall(path.name))})
        months = ", ".join(f"{m[:4]}-{m[-2:]}" for m in has) or "none yet"
        return (
            f"{err}. The sample source has no files for {month}: write them (and run the month) with "
            f"`./run demo --months {month}`, or materialize a month it has ({months})."
        )
    return (
        f"{err}. Partition {partition_key} has no source file yet: TLC and NOAA publish a month some weeks "
        "after it ends. Materialize an earlier month, or check the base URL (TAXI_TRIP_BASE_URL / "
        "TAXI_WEATHER_BASE_URL)."
    )


def taxi_trip_files(
    context: AssetExecutionContext, source: SourceResource, staging: StagingResource
) -> MaterializeResult:
    """The month's TLC yellow-taxi trip file, downloaded, checked to be TLC Parquet, and fingerprinted."""
    month = MonthWindow.from_partition_key(context.partition_key).month
    url = source.trip_url(month)
    staged = _stage(context, url, trip_staging_name(month), source, staging, lambda path: verify_trip_file(path, url))
    metadata = _file_metadata(context.partition_key, staged, url, staging)
    if staged.facts is not None and staged.facts.unmapped_columns:
        unmapped = ", ".join(staged.facts.unmapped_columns)
        context.log.warning(f"{trip_file_name(month)} has columns the raw table does not keep: {unmapped}")
        metadata["unmapped_columns"] = unmapped
    return MaterializeResult(metadata=metadata, data_version=DataVersion(staged.record.fingerprint))


def weather_files(
    context: AssetExecutionContext, source: SourceResource, staging: StagingResource
) -> MaterializeResult:
    """The month's NOAA nClimGrid-Daily county files (prcp, tavg, tmin, tmax), checked and fingerprinted."""
    month = MonthWindow.from_partition_key(context.partition_key).month
    staged_files = []
    for element in ELEMENTS:
        url = source.weather_url(element, month)
        verify = lambda path, url=url, element=element: verify_weather_file(path, url, element, month)  # noqa: E731
        staged_files.append(_stage(context, url, weather_staging_name(element, month), source, staging, verify))
    combined = combined_fingerprint([s.record.fingerprint for s in staged_files])
    metadata = {
        "partition": context.partition_key,
        "source_fingerprint": combined,
        "dagster/row_count": sum(s.record.rows or 0 for s in staged_files),
        "downloaded_files": sum(s.downloaded for s in staged_files),
    }
    for element, staged in zip(ELEMENTS, staged_files, strict=True):
        metadata[f"{element}_url"] = MetadataValue.url(staged.record.url)
        metadata[f"{element}_fingerprint"] = staged.record.fingerprint
    return MaterializeResult(metadata=metadata, data_version=DataVersion(combined))


def source_file_assets(months: PartitionsDefinition) -> list[AssetsDefinition]:
    """The file assets, partitioned by ``months``."""
    return [
        asset(taxi_trip_files, name=TRIP_FILES, partitions_def=months, group_name=SOURCES_GROUP, kinds={"parquet"}),
        asset(weather_files, name=WEATHER_FILES, partitions_def=months, group_name=SOURCES_GROUP, kinds={"csv"}),
    ]


def _file_metadata(partition_key: str, staged: StagedFile, url: str, staging: StagingResource) -> dict:
    record = staged.record
    return {
        "partition": partition_key,
        "source_url": MetadataValue.url(url),
        "staged_path": MetadataValue.path(staging.store().spark_path(staged.name)),
        "source_file": staged.name.rsplit("/", 1)[-1],
        "source_fingerprint": record.fingerprint,
        "size_bytes": record.size,
        "dagster/row_count": record.rows or 0,
        "downloaded": staged.downloaded,
        "content_changed": staged.content_changed,
        "fetched_at": record.fetched_at,
    }
