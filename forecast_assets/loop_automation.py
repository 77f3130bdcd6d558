"""The loop's jobs: a day's forecast every day (and backfills over past days), and a month's forecast days scored
once its actuals are published."""

from __future__ import annotations

import json
from collections.abc import Iterator

from dagster import (
    AssetRecordsFilter,
    AssetSelection,
    DailyPartitionsDefinition,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SkipReason,
    build_schedule_from_partitioned_job,
    define_asset_job,
    sensor,
)

from forecast_assets.assets.forecast_loop import ACCURACY_KEY, ACTUALS_KEY, DAILY_FORECAST_KEY

DAILY_FORECAST_JOB, ACCURACY_JOB = "daily_forecast", "score_forecasts"
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
# 05:30 UTC, half past midnight in New York in winter (01:30 in summer): the day's forecast is made at its start,
# from what was published before it.
FORECAST_HOUR, FORECAST_MINUTE = 5, 30

daily_forecast_job = define_asset_job(
    DAILY_FORECAST_JOB,
    selection=AssetSelection.assets(DAILY_FORECAST_KEY),
    description="Forecast a day (or, as a backfill, a range of days in one run) with the serving model version.",
)
# The scoring step evaluates the alarms per day it scores (forecast_assets/assets/forecast_loop.py).
accuracy_job = define_asset_job(
    ACCURACY_JOB,
    selection=AssetSelection.assets(ACCURACY_KEY).without_checks(),
    description="Score forecast days against their published actuals, and evaluate the alarms on each day.",
)


def daily_forecast_schedule():
    return build_schedule_from_partitioned_job(
        daily_forecast_job,
        hour_of_day=FORECAST_HOUR,
        minute_of_hour=FORECAST_MINUTE,
        default_status=DefaultScheduleStatus.RUNNING,
        description="Forecasts each day at its start (05:30 UTC, 00:30 in New York in winter) with the serving model "
        "version.",
    )


def _materialized_since(context: SensorEvaluationContext, key, after: int) -> tuple[set[str], int]:
    """The partitions of ``key`` materialized after storage id ``after``, and the newest storage id seen."""
    records = context.instance.fetch_materializations(
        AssetRecordsFilter(key, after_storage_id=after or None), limit=10_000
    ).records
    partitions = {record.partition_key for record in records if record.partition_key}
    return partitions, max([after, *(record.storage_id for record in records)])


def days_to_score(published_months: set[str], forecast_days: set[str], new_months: set[str], new_days: set[str]):
    """The forecast days to score anew: every forecast day of a month just published, and every day forecast
    again in a month already published; as ranges of consecutive days (one run each)."""
    wanted = sorted(
        day for day in forecast_days
        if day[:7] in {month[:7] for month in new_months}
        or (day in new_days and day[:7] in {month[:7] for month in published_months})
    )  # fmt: skip
    ranges: list[tuple[str, str]] = []
    for day in wanted:
        if ranges and _next_day(ranges[-1][1]) == day:
            ranges[-1] = (ranges[-1][0], day)
        else:
            ranges.append((day, day))
    return ranges


def _next_day(day: str) -> str:
    from datetime import date, timedelta

    return (date.fromisoformat(day) + timedelta(days=1)).isoformat()


def score_forecasts_sensor(days: DailyPartitionsDefinition):
    @sensor(
        job_name=ACCURACY_JOB,
        minimum_interval_seconds=60,
        default_status=DefaultSensorStatus.RUNNING,
        description="Scores every forecast day of a month once its actuals are published (and a day forecast "
        "again after them), one run per range of days.",
    )
    def score_published_forecasts(context: SensorEvaluationContext) -> Iterator[RunRequest | SkipReason]:
        cursor = json.loads(context.cursor) if context.cursor else {"actuals": 0, "forecasts": 0}
        new_months, actuals_seen = _materialized_since(context, ACTUALS_KEY, cursor["actuals"])
        new_days, forecasts_seen = _materialized_since(context, DAILY_FORECAST_KEY, cursor["forecasts"])
        published = context.instance.get_materialized_partitions(ACTUALS_KEY)
        forecast = context.instance.get_materialized_partitions(DAILY_FORECAST_KEY)
        ranges = days_to_score(published, forecast, new_months, new_days)
        context.update_cursor(json.dumps({"actuals": actuals_seen, "forecasts": forecasts_seen}))
        if not ranges:
            yield SkipReason("No forecast day has newly published actuals")
            return
        for first, last in ranges:
            tags = {RANGE_START: first, RANGE_END: last}
            yield RunRequest(run_key=f"{first}..{last}@{actuals_seen}.{forecasts_seen}", tags=tags)

    return score_published_forecasts
