"""The forecasting loop: each day forecast by the serving version, and each forecast day scored once its actuals
are published, with the alarms as asset checks.

``daily_forecast`` is partitioned by day: a day's forecast is made from what was published
at its start, whenever it runs, so its schedule (every day, for the day) and a backfill over past days from the
UI write the same rows. ``forecast_accuracy`` scores a day when its month's actuals are published: a sensor sees
the actuals (or a day's forecast) change and asks for the days it can score.
"""

import functools
import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import pandas as pd
from dagster import (
    AllPartitionMapping,
    AssetCheckEvaluation,
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetDep,
    AssetExecutionContext,
    AssetMaterialization,
    AssetRecordsFilter,
    AssetsDefinition,
    BackfillPolicy,
    DailyPartitionsDefinition,
    Failure,
    MetadataValue,
    TableColumn,
    TableRecord,
    TableSchema,
    asset,
    asset_check,
)
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from pyiceberg.catalog import Catalog

from bridge.translate.dagster_inputs import input_versions_metadata
from forecast_assets.assets.table_metadata import (
    COLUMN_SCHEMA,
    ROW_COUNT,
    SNAPSHOT_ID,
    TABLE_NAME,
    snapshot_text,
    table_key,
)
from forecast_assets.assets.training import FORECAST_MODEL, Metadata, png_markdown
from forecast_assets.resources import IcebergCatalogResource
from taxi_core.figures import percent, ratio, rides
from taxi_core.files import write_atomically
from taxi_core.months import MonthWindow
from taxi_core.names import (
    ACTUALS,
    DAILY_FORECAST,
    FORECAST_ACCURACY,
    LIVE_ACCURACY_FILE,
    MODEL_NAME,
    MODEL_PROMOTIONS,
    RAW_WEATHER,
)
from taxi_core.progress import reporting_while
from taxi_core.settings import Settings, load_settings
from taxi_core.training_history import first_forecastable_day

if TYPE_CHECKING:
    from flows.forecasting.alarms import Alarm, HealthyRanges, Outcome
    from flows.forecasting.registry import Serving
    from flows.forecasting.serving import ServedModel

FORECASTING_GROUP = "forecasting"
DAILY_FORECAST_KEY, ACCURACY_KEY = table_key(DAILY_FORECAST), table_key(FORECAST_ACCURACY)
ACTUALS_KEY, WEATHER_KEY = table_key(ACTUALS), table_key(RAW_WEATHER)


def daily_partitions(settings: Settings) -> DailyPartitionsDefinition:
    """Every day from the first the loop can forecast (a version trained with the flow's defaults on the first
    month's actuals onward), to the last month's end when the source has one, else to today: the day in progress is
    a partition, as its forecast is made at its start.

    Keyed as the monthly partitions are (UTC, Dagster's default), so a day maps to its month; a key names a day of
    the data's own New York wall-clock time."""
    start = f"{first_forecastable_day(MonthWindow.from_partition_key(settings.first_month).start.date()):%Y-%m-%d}"
    if not settings.last_month:
        return DailyPartitionsDefinition(start_date=start, end_offset=1)
    end = MonthWindow.from_partition_key(settings.last_month).end
    return DailyPartitionsDefinition(start_date=start, end_date=f"{end:%Y-%m-%d}", end_offset=1)


def _days(context: AssetExecutionContext) -> list[pd.Timestamp]:
    return [pd.Timestamp(key) for key in context.partition_keys]


def _served_by_version(
    catalog: Catalog, days: list[pd.Timestamp]
) -> list[tuple["Serving", "ServedModel", list[pd.Timestamp]]]:
    """Each version serving some of ``days`` (the one serving at the day's start, trained on data that ended before
    it), what it serves with, and its days."""
    from metaflow import Run, namespace  # Metaflow loads only when a forecast is made

    from flows.forecasting import registry  # the flow's modules load with the step, not with the definitions

    by_version: dict[str, tuple[Serving, list[pd.Timestamp]]] = {}
    for day in days:
        serving = registry.serving_version_on(catalog, MODEL_NAME, day)
        if serving is None:
            msg = (
                f"No model version was trained on data that ended before {day:%Y-%m-%d} starts (or the versions in "
                f"{MODEL_PROMOTIONS} predate the training end it records): train one with the flow's "
                f"--as_of {day:%Y-%m-%d} or earlier (job train_forecast_model), or forecast a later day."
            )
            raise Failure(description=msg, allow_retries=False)
        by_version.setdefault(serving.version, (serving, []))[1].append(day)
    namespace(None)
    found = []
    for version, (serving, version_days) in by_version.items():
        data = Run(version).data
        if data is None:  # the registry names a version as its run writes; the run ends a step later
            msg = f"{version} serves but its Metaflow run has not finished: wait for it to end, or train again."
            raise Failure(description=msg, allow_retries=False)
        if "served" not in data or not hasattr(data.served, "trained_through"):
            msg = f"{version} was trained before versions served every level as served: train again to serve one."
            raise Failure(description=msg, allow_retries=False)
        found.append((serving, data.served, version_days))
    return found


def daily_forecast_asset(days: DailyPartitionsDefinition) -> AssetsDefinition:
    @asset(
        key=DAILY_FORECAST_KEY,
        partitions_def=days,
        deps=[
            FORECAST_MODEL,
            AssetDep(ACTUALS_KEY, partition_mapping=AllPartitionMapping()),
            AssetDep(WEATHER_KEY, partition_mapping=AllPartitionMapping()),
        ],
        backfill_policy=BackfillPolicy.single_run(),
        output_required=False,
        group_name=FORECASTING_GROUP,
        kinds={"iceberg", "pandas"},
        description="Each day's forecast by the serving model version, from the data published before the day: "
        "every zone with rides, each borough and the city, reconciled so the totals add up, with 80% and 95% "
        "intervals.",
    )
    def daily_forecast(
        context: AssetExecutionContext, catalog: IcebergCatalogResource
    ) -> Iterator[AssetMaterialization]:

        lakehouse = catalog.load()
        for version, served, wanted in _served_by_version(lakehouse, _days(context)):
            context.log.info(
                f"{_days_text(wanted)}: forecast by {version.version} ({version.champion}), the version serving at "
                f"each day's start, trained on actuals up to {served.trained_through:%Y-%m-%d %H:%M}; a later version "
                "never forecasts an earlier day, so a backfill gives the forecast the day had on time"
            )
            yield from _forecast_days(context, lakehouse, version, served, wanted)

    return daily_forecast


def _days_text(days: list[pd.Timestamp]) -> str:
    return f"{days[0]:%Y-%m-%d}" if len(days) == 1 else f"{len(days)} days, {days[0]:%Y-%m-%d} to {days[-1]:%Y-%m-%d}"


def _forecast_days(
    context: AssetExecutionContext,
    lakehouse: Catalog,
    version: "Serving",
    served: "ServedModel",
    wanted: list[pd.Timestamp],
) -> Iterator[AssetMaterialization]:
    """``wanted`` forecast by ``version`` and written, each day's materialization recorded."""
    from flows.forecasting import checks, loop_tables, serving, tables  # the flow's modules load with the step

    start, end = served.reads_from(wanted)
    actuals, actuals_snapshot = tables.read_actuals(lakehouse, start, end)
    weather, weather_snapshot = None, None
    if served.uses_weather:
        weather, weather_snapshot = tables.read_weather(lakehouse, start, max(wanted))
    context.log.info(
        f"Forecasting {len(wanted)} day(s) with {version.version} ({version.champion}) from actuals before "
        f"{end:%Y-%m-%d} (snapshot {actuals_snapshot}): {len(served.zones)} zones, their boroughs and the city"
    )
    # The days between the data's end and the first day asked, as this version forecast them from these
    # actuals: they stand in for the unpublished actuals instead of being forecast again.
    data_end = served.rule.actuals_through(min(wanted)).floor("D")
    earlier = loop_tables.read_earlier_days(
        lakehouse, data_end.date(), (min(wanted) - pd.Timedelta(days=1)).date(), version.version, actuals_snapshot
    )
    # A month's days take minutes on a busy machine: the step says where it is every 10 s.
    reached = {"now": "starting"}
    with reporting_while(context.log.info, f"Forecasting {_days_text(wanted)}", lambda: reached["now"], ends=False):
        rows = serving.forecast(served, actuals, weather, wanted, earlier, lambda now: reached.update(now=now))
    held = checks.daily_intervals_hold(rows)
    if not held.passed:  # nothing is written: the table keeps the forecasts it had
        raise Failure(description=f"{DAILY_FORECAST}: {held.metadata['failure']}", metadata=held.metadata)
    snapshot_id = loop_tables.write_daily_forecasts(lakehouse, rows, version.version, actuals_snapshot)
    read = {FORECAST_MODEL.to_user_string(): version.version, ACTUALS_KEY.to_user_string(): str(actuals_snapshot)}
    if weather_snapshot is not None:
        read[WEATHER_KEY.to_user_string()] = str(weather_snapshot)
    schema = TableSchema(
        columns=[TableColumn(*column) for column in loop_tables.columns(loop_tables.DAILY_FORECAST_SCHEMA)]
    )
    for day, day_rows in rows.groupby("forecast_day"):
        city = day_rows[day_rows.level == "city"]
        yield AssetMaterialization(
            DAILY_FORECAST_KEY,
            partition=f"{day:%Y-%m-%d}",
            metadata={
                TABLE_NAME: DAILY_FORECAST,
                SNAPSHOT_ID: snapshot_text(snapshot_id),
                ROW_COUNT: MetadataValue.int(len(day_rows)),
                COLUMN_SCHEMA: schema,
                "model_version": version.version,
                "champion": version.champion,
                "actuals_snapshot_id": snapshot_text(actuals_snapshot),
                "data_end": f"{day_rows.data_end.iloc[0]:%Y-%m-%d %H:%M}",
                "zones": MetadataValue.int(int((day_rows.level == "zone").sum() // 24)),
                "city_forecast_rides": MetadataValue.float(rides(city.forecast.sum())),
                **input_versions_metadata(read),
            },
        )
        checked = checks.daily_intervals_hold(day_rows)
        context.log_event(
            AssetCheckEvaluation(
                asset_key=DAILY_FORECAST_KEY, check_name=checks.DAILY_INTERVALS_HOLD, passed=checked.passed,
                metadata={**checked.metadata, SNAPSHOT_ID: snapshot_text(snapshot_id)},
                severity=AssetCheckSeverity.ERROR, partition=f"{day:%Y-%m-%d}",
            )
        )  # fmt: skip


def daily_forecast_checks(days: DailyPartitionsDefinition) -> list[AssetChecksDefinition]:
    """The daily forecast table's blocking check, on a day's rows as the table holds them: at every level, every
    row's forecast lies inside its 80% interval, the 80% inside the 95%, none below zero. The forecasting step
    checks the same before it writes, so a day that fails is never published."""
    from flows.forecasting.checks import DAILY_INTERVALS_HOLD  # the flow's modules load with the step

    @asset_check(
        asset=DAILY_FORECAST_KEY, name=DAILY_INTERVALS_HOLD, blocking=True, partitions_def=days,
        description="Every row of the day, at every level (zone, borough, city): lower_95 <= lower_80 <= forecast <= "
        "upper_80 <= upper_95, none below zero.",
    )  # fmt: skip
    def intervals_hold(context: AssetCheckExecutionContext, catalog: IcebergCatalogResource) -> AssetCheckResult:
        from flows.forecasting import checks, loop_tables  # the flow's modules load with the step

        rows, snapshot_id = loop_tables.read_daily_forecast(catalog.load(), pd.Timestamp(context.partition_key).date())
        outcome = checks.daily_intervals_hold(rows)
        return AssetCheckResult(
            passed=outcome.passed, metadata={**outcome.metadata, SNAPSHOT_ID: snapshot_text(snapshot_id)}
        )

    return [intervals_hold]


@functools.cache
def _healthy_ranges(version: str) -> "HealthyRanges":
    """The ranges of a healthy day the version's held-out days set (the fixed defaults for a version trained before
    it kept them, or whose run is gone)."""
    from metaflow import Run, namespace  # Metaflow loads only when a day is scored
    from metaflow.exception import MetaflowNotFound

    from flows.forecasting.alarms import HealthyRanges  # the flow's modules load with the step

    namespace(None)
    try:
        data = Run(version).data
    except MetaflowNotFound:
        return HealthyRanges()
    served = data.served if data is not None and "served" in data else None
    return HealthyRanges(getattr(served, "bias_band", None), getattr(served, "coverage_band", None))


def _score_metadata(scores: pd.DataFrame) -> dict[str, MetadataValue]:
    from flows.forecasting.accuracy import pooled  # the flow's modules load with the step, not with the definitions

    city, zones, totals = pooled(scores, "city"), pooled(scores), pooled(scores, "borough")
    boroughs = scores[scores.level == "borough"].sort_values("series")
    table = [
        TableRecord({"borough": row["borough"], "rides": rides(row["rides"]), "MAE": rides(row["mae"]),
                     "bias %": percent(row["bias"]), "MAE / naive": ratio(row["ratio_to_naive"]),
                     "80% coverage %": percent(row["coverage_80"])})
        for row in boroughs.to_dict("records")
    ]  # fmt: skip
    return {
        "city_mae": MetadataValue.float(rides(city["mae"])),
        "city_bias_pct": MetadataValue.float(percent(city["bias"])),
        "city_ratio_to_naive": MetadataValue.float(ratio(city["ratio_to_naive"])),
        "zone_mae": MetadataValue.float(rides(zones["mae"])),
        "zone_ratio_to_naive": MetadataValue.float(ratio(zones["ratio_to_naive"])),
        "zone_coverage_80_pct": MetadataValue.float(percent(zones["coverage_80"])),
        "zone_coverage_95_pct": MetadataValue.float(percent(zones["coverage_95"])),
        "borough_totals_coverage_80_pct": MetadataValue.float(percent(totals["coverage_80"])),
        "city_coverage_80_pct": MetadataValue.float(percent(city["coverage_80"])),
        # Each borough total's own, so the asset's plots (by partition) show every level the checks judge.
        **{f"coverage_80_pct_{_snake(row['borough'])}_total": MetadataValue.float(percent(row["coverage_80"]))
           for row in boroughs.to_dict("records")},
        "boroughs": MetadataValue.table(table),
    }  # fmt: skip


def _snake(name: str) -> str:
    return "_".join(name.lower().split())


def _severity(alarm: "Alarm") -> AssetCheckSeverity:
    return AssetCheckSeverity.ERROR if alarm.severity == "ERROR" else AssetCheckSeverity.WARN


def _score_day(lakehouse: Catalog, day: pd.Timestamp) -> tuple[pd.DataFrame, int, int, str]:
    """A day's forecast scored against the actuals published now; the scores and the versions compared."""
    # The flow's modules load with the step, not with the definitions.
    from flows.forecasting import accuracy, loop_tables, tables

    forecast, forecast_snapshot = loop_tables.read_daily_forecast(lakehouse, day.date())
    data_end = pd.Timestamp(forecast.data_end.iloc[0])
    actuals, actuals_snapshot = tables.read_actuals(lakehouse, data_end - accuracy.WEEK, day + pd.Timedelta(days=1))
    scores = accuracy.score_forecast(forecast, actuals)
    scores = scores.assign(forecast_snapshot_id=forecast_snapshot, actuals_snapshot_id=actuals_snapshot)
    return scores, forecast_snapshot, actuals_snapshot, str(forecast.model_version.iloc[0])


def forecast_accuracy_asset(days: DailyPartitionsDefinition) -> AssetsDefinition:
    @asset(
        key=ACCURACY_KEY,
        partitions_def=days,
        deps=[DAILY_FORECAST_KEY, ACTUALS_KEY],
        backfill_policy=BackfillPolicy.single_run(),
        output_required=False,
        group_name=FORECASTING_GROUP,
        kinds={"iceberg", "pandas"},
        description="How each day's published forecast did once the day's actuals are published: MAE, bias, MAE "
        "against seasonal naive and interval coverage, per zone, borough and the city.",
    )
    def forecast_accuracy(
        context: AssetExecutionContext, catalog: IcebergCatalogResource
    ) -> Iterator[AssetMaterialization]:
        # The flow's modules load with the step, not with the definitions.
        from flows.forecasting import alarms, loop_tables

        lakehouse = catalog.load()
        scored: list[tuple[str, Metadata, list[Outcome]]] = []
        for day in _days(context):
            scores, forecast_snapshot, actuals_snapshot, version = _score_day(lakehouse, day)
            if scores.hours.sum() == 0:
                context.log.warning(f"{day:%Y-%m-%d}: its actuals are not published yet; nothing scored")
                continue
            snapshot_id = loop_tables.write_accuracy(lakehouse, scores)
            recent = loop_tables.read_accuracy(
                lakehouse, [(day - pd.Timedelta(days=back)).date() for back in range(1, alarms.ROLLING_DAYS)]
            )
            read = {DAILY_FORECAST_KEY.to_user_string(): str(forecast_snapshot),
                    ACTUALS_KEY.to_user_string(): str(actuals_snapshot)}  # fmt: skip
            schema = TableSchema(columns=[TableColumn(*c) for c in loop_tables.columns(loop_tables.ACCURACY_SCHEMA)])
            metadata: Metadata = {
                TABLE_NAME: FORECAST_ACCURACY, SNAPSHOT_ID: snapshot_text(snapshot_id),
                ROW_COUNT: MetadataValue.int(len(scores)), COLUMN_SCHEMA: schema,
                "model_version": version, "forecast_snapshot_id": snapshot_text(forecast_snapshot),
                "actuals_snapshot_id": snapshot_text(actuals_snapshot),
                **_score_metadata(scores), **input_versions_metadata(read),
            }  # fmt: skip
            scored.append((f"{day:%Y-%m-%d}", metadata, alarms.evaluate(scores, recent, _healthy_ranges(version))))
        if scored:
            # The month's days in one picture, on the newest day scored: what Dagster's partition plots would show.
            scored[-1][1]["accuracy_by_day"] = _accuracy_chart(lakehouse, [key for key, _, _ in scored])
            _write_live_accuracy(lakehouse)
        for key, metadata, outcomes in scored:
            yield AssetMaterialization(ACCURACY_KEY, partition=key, metadata=metadata)
            # A check Dagster planned in this run (Materialize with its checks, from the UI) runs itself, on the
            # scores written; the scoring job leaves the checks to this step, per day.
            if not context.op_execution_context.selected_asset_check_keys:
                for evaluation in _evaluations(context, key, outcomes):
                    context.log_event(evaluation)

    return forecast_accuracy


def _accuracy_chart(lakehouse: Catalog, keys: list[str]) -> MetadataValue:
    """Every scored day of the months of ``keys``, drawn: the zones' MAE against naive's, the city's bias, the
    zones' 80% coverage."""
    # The flow's modules load with the step; matplotlib only where a chart is drawn.
    from flows.forecasting import accuracy, loop_tables, plots

    months = {key[:7] for key in keys}
    scores = loop_tables.read_all_accuracy(lakehouse)
    scores = scores[scores.day.astype(str).str[:7].isin(months)]
    days: list[dict[str, object]] = []
    for day, rows in scores.groupby(scores.day.astype(str)):
        zones, totals, city = (accuracy.pooled(rows, level) for level in ("zone", "borough", "city"))
        days.append({"day": day, "zone_ratio_to_naive": zones["ratio_to_naive"], "city_bias_pct": 100 * city["bias"],
                     "zone_coverage_80_pct": 100 * zones["coverage_80"],
                     "borough_totals_coverage_80_pct": 100 * totals["coverage_80"],
                     "city_coverage_80_pct": 100 * city["coverage_80"]})  # fmt: skip
    newest = scores[scores.day.astype(str) == max(keys)].model_version
    healthy = _healthy_ranges(str(newest.iloc[0])) if len(newest) else None
    figure = plots.accuracy_figure(pd.DataFrame(days), healthy)
    return png_markdown(plots.png_bytes(figure), f"forecast accuracy per day, {', '.join(sorted(months))}")


def _write_live_accuracy(lakehouse: Catalog) -> None:
    """Each version's figures over every day scored, where ``taxi-lineage model`` reads them without a table
    format's library (forecast_assets/lineage.py)."""
    # The flow's modules load with the step, not with the definitions.
    from flows.forecasting import accuracy, loop_tables

    live = accuracy.by_version(loop_tables.read_all_accuracy(lakehouse))
    write_atomically(load_settings().state_dir / LIVE_ACCURACY_FILE, json.dumps(live, indent=1, sort_keys=True))


def _evaluations(
    context: AssetExecutionContext, partition: str, outcomes: Sequence["Outcome"]
) -> list[AssetCheckEvaluation]:
    """Each alarm's outcome on ``partition``, aimed at the materialization this run just recorded for it."""
    records = context.instance.fetch_materializations(
        AssetRecordsFilter(ACCURACY_KEY, asset_partitions=[partition]), limit=1
    ).records
    if not records or records[0].run_id != context.run.run_id:
        return []
    record = records[0]
    target = AssetCheckEvaluationTargetMaterializationData(
        storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
    )
    return [
        AssetCheckEvaluation(
            asset_key=ACCURACY_KEY,
            check_name=outcome.alarm.name,
            passed=outcome.passed,
            metadata=outcome.metadata,
            target_materialization_data=target,
            severity=_severity(outcome.alarm),
            description=outcome.alarm.description,
            partition=partition,
        )  # fmt: skip
        for outcome in outcomes
    ]


def accuracy_checks(days: DailyPartitionsDefinition) -> list[AssetChecksDefinition]:
    """The alarms as checks a user runs on a scored day from the UI: each reads the day's scores back."""
    from flows.forecasting.alarms import ALARMS  # the flow's modules load with the step, not with the definitions

    def build(alarm: "Alarm") -> AssetChecksDefinition:
        @asset_check(
            asset=ACCURACY_KEY, name=alarm.name, description=alarm.description, blocking=alarm.blocking,
            partitions_def=days,
        )  # fmt: skip
        def check(context: AssetCheckExecutionContext, catalog: IcebergCatalogResource) -> AssetCheckResult:
            # The flow's modules load with the step, not with the definitions.
            from flows.forecasting import alarms, loop_tables

            day = pd.Timestamp(context.partition_key)
            lakehouse = catalog.load()
            scores = loop_tables.read_accuracy(lakehouse, [day.date()])
            recent = loop_tables.read_accuracy(
                lakehouse, [(day - pd.Timedelta(days=back)).date() for back in range(1, alarms.ROLLING_DAYS)]
            )
            healthy = _healthy_ranges(str(scores.model_version.iloc[0])) if len(scores) else None
            outcome = next(o for o in alarms.evaluate(scores, recent, healthy) if o.alarm.name == alarm.name)
            return AssetCheckResult(passed=outcome.passed, metadata=outcome.metadata, severity=_severity(alarm))

        return check

    return [build(alarm) for alarm in ALARMS]
