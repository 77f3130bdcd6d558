"""The loop's jobs: a day's forecast every day (and backfills over past days), and a month's forecast days scored
once its actuals are published."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, timedelta
from typing import TYPE_CHECKING

from dagster import (
    AssetKey,
    AssetSelection,
    DagsterEventType,
    DailyPartitionsDefinition,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    RunRequest,
    ScheduleDefinition,
    SensorDefinition,
    SensorEvaluationContext,
    SkipReason,
    build_schedule_from_partitioned_job,
    define_asset_job,
    sensor,
)
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from forecast_assets.assets.forecast_loop import ACCURACY_KEY, ACTUALS_KEY, DAILY_FORECAST_KEY

if TYPE_CHECKING:
    from dagster._core.definitions.partitions.partitioned_schedule import (
        UnresolvedPartitionedAssetScheduleDefinition,
    )

DAILY_FORECAST_JOB, ACCURACY_JOB = "daily_forecast", "score_forecasts"
# 05:30 UTC, half past midnight in New York in winter (01:30 in summer): the day's forecast is made at its start,
# from what was published before it.
FORECAST_HOUR, FORECAST_MINUTE = 5, 30

daily_forecast_job = define_asset_job(
    DAILY_FORECAST_JOB,
    # The forecasting step checks each day's rows before it writes them and records the check per day.
    selection=AssetSelection.assets(DAILY_FORECAST_KEY).without_checks(),
    description="Forecast a day (or, as a backfill, a range of days in one run) with the serving model version.",
)
# The scoring step evaluates the alarms per day it scores (forecast_assets/assets/forecast_loop.py).
accuracy_job = define_asset_job(
    ACCURACY_JOB,
    selection=AssetSelection.assets(ACCURACY_KEY).without_checks(),
    description="Score forecast days against their published actuals, and evaluate the alarms on each day.",
)


def daily_forecast_schedule() -> UnresolvedPartitionedAssetScheduleDefinition | ScheduleDefinition:
    return build_schedule_from_partitioned_job(
        daily_forecast_job,
        hour_of_day=FORECAST_HOUR,
        minute_of_hour=FORECAST_MINUTE,
        default_status=DefaultScheduleStatus.RUNNING,
        description="Forecasts each day at its start (05:30 UTC, 00:30 in New York in winter) with the serving model "
        "version.",
    )


def _newest(context: SensorEvaluationContext, key: AssetKey) -> dict[str, int]:
    """Each partition of ``key`` and the storage id of its newest materialization."""
    storage = context.instance.event_log_storage
    return dict(storage.get_latest_storage_id_by_partition(key, DagsterEventType.ASSET_MATERIALIZATION))


def days_to_score(actuals: dict[str, int], forecasts: dict[str, int], scored: dict[str, int]) -> list[tuple[str, str]]:
    """The forecast days whose month is published and whose newest score is older than their newest forecast or
    their month's newest actuals (each a partition and the storage id of its newest materialization); as ranges
    of consecutive days, one run each."""
    wanted = sorted(
        day for day, forecast in forecasts.items()
        if f"{day[:7]}-01" in actuals and scored.get(day, 0) < max(forecast, actuals[f"{day[:7]}-01"])
    )  # fmt: skip
    ranges: list[tuple[str, str]] = []
    for day in wanted:
        if ranges and (date.fromisoformat(ranges[-1][1]) + timedelta(days=1)).isoformat() == day:
            ranges[-1] = (ranges[-1][0], day)
        else:
            ranges.append((day, day))
    return ranges


def score_forecasts_sensor(days: DailyPartitionsDefinition) -> SensorDefinition:
    @sensor(
        job_name=ACCURACY_JOB,
        minimum_interval_seconds=60,
        default_status=DefaultSensorStatus.RUNNING,
        description="Scores every forecast day of a month once its actuals are published, and again when the day "
        "is forecast again or its month republished; one run per range of days.",
    )
    def score_published_forecasts(context: SensorEvaluationContext) -> Iterator[RunRequest | SkipReason]:
        actuals = _newest(context, ACTUALS_KEY)
        forecasts = _newest(context, DAILY_FORECAST_KEY)
        ranges = days_to_score(actuals, forecasts, _newest(context, ACCURACY_KEY))
        if not ranges:
            yield SkipReason("Every forecast day whose actuals are published is scored")
            return
        newest = max([*actuals.values(), *forecasts.values()])
        for first, last in ranges:
            tags = {ASSET_PARTITION_RANGE_START_TAG: first, ASSET_PARTITION_RANGE_END_TAG: last}
            # Keyed by what it scores: the daemon starts a run once, however often the tick asks.
            yield RunRequest(run_key=f"{first}..{last}@{newest}", tags=tags)

    return score_published_forecasts
