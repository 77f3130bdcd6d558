"""Source file assets, one per declared source: each partition's files downloaded, verified, staged, fingerprinted."""

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    BackfillPolicy,
    DataVersion,
    Failure,
    MaterializeResult,
    MetadataValue,
    PartitionsDefinition,
    asset,
)

from forecast_assets.assets.code_ran import code_ran
from forecast_assets.assets.month_range import RangeEvent, over_months
from forecast_assets.assets.run_settings import check_run_settings
from forecast_assets.resources import SourceResource, StagingResource
from forecast_assets.source_specs.spec import FileFacts, SourceFile, SourceSpec
from forecast_assets.sources.download import SourceInvalid, SourceMissing, SourceUnavailable
from forecast_assets.sources.stage import StagedFile, combined_fingerprint, stage_file
from taxi_core.months import MonthWindow

SOURCES_GROUP = "sources"
MONTH_IN_NAME = re.compile(r"(\d{4}-?\d{2})\D")


def partition_window(key: str | None, source: SourceSpec) -> MonthWindow | None:
    """The month ``key`` names for a monthly source; None for a source published once for all time."""
    return MonthWindow.from_partition_key(key) if source.monthly and key is not None else None


def _stage(
    context: AssetExecutionContext,
    spec: SourceSpec,
    file: SourceFile,
    window: MonthWindow | None,
    source: SourceResource,
    staging: StagingResource,
) -> StagedFile:
    url = source.url(spec, file)

    def verify(path: Path) -> FileFacts:
        return spec.verify(path, url, file, window)

    try:
        return stage_file(
            url,
            spec.staged_name(file),
            staging.store(),
            verify,
            Path(source.download_dir),
            context.log.info,
            source.retry_policy(),
            spec.base_url_variable,
        )
    except SourceMissing as err:
        raise Failure(description=_missing(err, url, spec, window), allow_retries=False) from err
    except (SourceInvalid, SourceUnavailable) as err:
        # A bad or missing download never reaches staging: whatever a past run staged stays as it was, and
        # the source's table (with everything built from it) is not written.
        msg = (
            f"{str(err).rstrip('.')}. Any copy staged before is kept, and this run does not write "
            f"{spec.table.identifier} or anything built from it."
        )
        raise Failure(description=msg, allow_retries=False) from err


def _missing(err: SourceMissing, url: str, spec: SourceSpec, window: MonthWindow | None) -> str:
    """Why a file is missing, and the fix, for where the files come from: the sample source or the publisher."""
    if url.startswith("file:"):
        if window is None:
            return f"{err}. The sample source has no such file: `./run demo` writes it."
        folder = Path(urlsplit(url).path).parent
        has = sorted({found[0] for path in folder.glob("*") if (found := MONTH_IN_NAME.findall(path.name))})
        months = ", ".join(f"{m[:4]}-{m[-2:]}" for m in has) or "none yet"
        return (
            f"{err}. The sample source has no files for {window.month}: write them (and run the month) with "
            f"`./run demo --months {window.month}`, or materialize a month it has ({months})."
        )
    if window is None:
        return f"{err}. {spec.publisher} publishes this file at one address: check {spec.base_url_variable}."
    when = f"{spec.publishing_delay}. " if spec.publishing_delay else ""
    return (
        f"{err}. Partition {window.month} has no {spec.publisher} file yet: {when}Materialize an earlier month, "
        f"or check {spec.base_url_variable}."
    )


def _refuse_unknown_month(partition_key: str, months: PartitionsDefinition, spec: SourceSpec) -> None:
    """Before any download: a partition outside the months (a launch by tag, a month still to come) is refused."""
    if months.has_partition_key(partition_key):
        return
    first, last = months.get_first_partition_key(), months.get_last_partition_key()
    span = f"{first} to {last}" if first and last else "none yet"
    msg = (
        f"Partition {partition_key} is not one of {spec.file_asset}'s months ({span}): nothing was downloaded. "
        f"Pick a month in that range, or move TAXI_FIRST_MONTH / TAXI_LAST_MONTH (the settings file "
        f"`./run demo` writes, or the environment) to a month {spec.publisher} has published"
        f"{f' ({spec.publishing_delay})' if spec.publishing_delay else ''}."
    )
    raise Failure(description=msg, allow_retries=False)


def _one_file_metadata(staged: StagedFile, url: str, staging: StagingResource) -> dict[str, Any]:
    record = staged.record
    return {
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


def _files_metadata(files: tuple[SourceFile, ...], staged_files: list[StagedFile]) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "source_fingerprint": combined_fingerprint([s.record.fingerprint for s in staged_files]),
        "dagster/row_count": sum(s.record.rows or 0 for s in staged_files),
        "downloaded_files": sum(s.downloaded for s in staged_files),
    }
    for file, staged in zip(files, staged_files, strict=True):
        metadata[f"{file.label}_url"] = MetadataValue.url(staged.record.url)
        metadata[f"{file.label}_fingerprint"] = staged.record.fingerprint
    return metadata


def source_file_asset(spec: SourceSpec, months: PartitionsDefinition) -> AssetsDefinition:
    """The asset of ``spec``'s files: partitioned by ``months`` when the source publishes monthly."""

    def one_month(
        context: AssetExecutionContext, key: str | None, source: SourceResource, staging: StagingResource
    ) -> Iterator[MaterializeResult[Any]]:
        if key is not None:
            _refuse_unknown_month(key, months, spec)
        window = MonthWindow.from_partition_key(key) if key is not None else None
        files = spec.files_for(window)
        staged_files = [_stage(context, spec, file, window, source, staging) for file in files]
        if len(files) == 1:
            metadata = _one_file_metadata(staged_files[0], source.url(spec, files[0]), staging)
        else:
            metadata = _files_metadata(files, staged_files)
        for staged in staged_files:
            facts: FileFacts | None = staged.facts
            if facts is not None:
                for warning in facts.warnings:
                    context.log.warning(warning)
                metadata.update(facts.metadata)
        if key is not None:
            metadata = {"partition": key, **metadata}
        metadata.update(code_ran(context))
        version = metadata["source_fingerprint"]
        yield MaterializeResult(metadata=metadata, data_version=DataVersion(version))

    def materialize(
        context: AssetExecutionContext, source: SourceResource, staging: StagingResource
    ) -> Iterator[RangeEvent]:
        # The run's first steps: a table step's settings are refused here, before anything is downloaded.
        check_run_settings(context)
        if not spec.monthly:
            yield from one_month(context, None, source, staging)
            return
        yield from over_months(context, AssetKey(spec.file_asset), lambda key: one_month(context, key, source, staging))

    return asset(
        materialize,
        name=spec.file_asset,
        description=spec.file_description,
        partitions_def=months if spec.monthly else None,
        group_name=SOURCES_GROUP,
        kinds={spec.file_kind},
        # A range of months is one run: each month downloaded and staged in turn (see month_range.py).
        backfill_policy=BackfillPolicy.single_run() if spec.monthly else None,
    )
