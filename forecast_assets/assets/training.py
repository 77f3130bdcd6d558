"""The Metaflow-made assets: the forecast model and the forecast table, trained by running the flow."""

import base64

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetSpec,
    Config,
    Failure,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableRecord,
    TableSchema,
    multi_asset,
)
from pydantic import Field

from forecast_assets.assets.table_metadata import COLUMN_SCHEMA, ROW_COUNT, SNAPSHOT_ID, TABLE_NAME, table_key
from taxi_core.names import ACTUALS, FORECAST, MODEL_NAME, RAW_WEATHER
from taxi_core.names import ZONES as ZONE_LOOKUP
from taxi_core.progress import SilenceWatch

FORECAST_MODEL = AssetKey(MODEL_NAME)
FORECAST_TABLE = table_key(FORECAST)
TRAINING_GROUP = "training"
# Forecast-table metadata keys the checks on that table read back.
METAFLOW_RUN_ID = "metaflow_run_id"
FORECAST_START = "forecast_start"
HORIZON_HOURS = "horizon_hours"
ZONES = "zones"


class TrainingConfig(Config):
    use_weather: bool = Field(default=False, description="Train weather-aware candidates on nyc_taxi.raw_weather.")
    as_of: str = Field(default="", description="Forecast origin (default: the hour after the newest actuals).")
    lookback_days: int | None = Field(default=None, gt=0, description="Days of actuals to read (default: the flow's).")
    evaluation_weeks: int | None = Field(
        default=None,
        gt=0,
        description="Held-out weeks, each scored on a champion chosen before it (default: the flow's).",
    )
    selection_weeks: int | None = Field(
        default=None,
        gt=0,
        description="Weeks before each held-out week that choose its champion (default: the flow's).",
    )
    horizon_hours: int = Field(default=24, gt=0, le=168, description="Hours ahead to forecast.")

    def flow_parameters(self) -> dict:
        parameters = {"use_weather": self.use_weather, "horizon_hours": self.horizon_hours}
        chosen = {"lookback_days": self.lookback_days, "evaluation_weeks": self.evaluation_weeks,
                  "selection_weeks": self.selection_weeks, "as_of": self.as_of or None}  # fmt: skip
        return parameters | {name: value for name, value in chosen.items() if value is not None}


@multi_asset(
    name="run_training_flow",
    specs=[
        AssetSpec(
            FORECAST_MODEL,
            deps=[table_key(ACTUALS), table_key(RAW_WEATHER), table_key(ZONE_LOOKUP)],
            group_name=TRAINING_GROUP,
            kinds={"metaflow", "scikitlearn"},
            description="The champion demand model of a TrainForecastModelFlow run; its version is the run pathspec.",
        ),
        AssetSpec(
            FORECAST_TABLE,
            deps=[FORECAST_MODEL],
            group_name=TRAINING_GROUP,
            kinds={"metaflow", "iceberg"},
            description="Forecast rides per zone for the next hours, one set of rows per model version.",
        ),
    ],
)
def run_training_flow(context: AssetExecutionContext, config: TrainingConfig):
    """Runs flows/train.py through Metaflow's Runner, passing this Dagster run as the flow's parent."""
    from flows.launch import FlowEventKind, FlowFailed, run_training  # Metaflow loads only when training runs

    running = ["Starting the Metaflow flow"]  # what the silence watch names: the flow's start, then each step

    def log_flow_event(event) -> None:
        watch.heard()
        if event.kind is FlowEventKind.TASK_STARTED:
            running[0] = event.step
        (context.log.error if event.kind is FlowEventKind.TASK_FAILED else context.log.info)(str(event))

    watch = SilenceWatch(context.log.info, lambda: running[0])
    try:
        with watch.watching():
            run = run_training(
                config.flow_parameters(),
                dagster_run_id=context.run.run_id,
                dagster_job=context.job_name,
                dagster_step=str(context.op_execution_context.op_handle),
                show_output=False,
                on_event=log_flow_event,
            )
    except FlowFailed as err:
        metadata = {"metaflow_run": err.pathspec or "", "failed_step": err.step or ""}
        raise Failure(description=str(err), metadata=metadata, allow_retries=False) from err
    data = run.data
    context.log.info(f"Metaflow run {run.pathspec}: champion {data.champion}")
    yield MaterializeResult(asset_key=FORECAST_MODEL, metadata=model_metadata(run))
    yield MaterializeResult(asset_key=FORECAST_TABLE, metadata=forecast_table_metadata(run))


def training_run_metadata(pathspec: str) -> tuple[dict, dict]:
    """The metadata of ``forecast_model`` and the forecast table for the flow run ``pathspec``."""
    from metaflow import Run, namespace  # Metaflow loads only where a flow run is read

    namespace(None)
    run = Run(pathspec)
    return model_metadata(run), forecast_table_metadata(run)


def training_run_checks(pathspec: str) -> list[tuple[str, bool, dict]]:
    """The forecast table's checks as the flow run ``pathspec`` evaluated them on the rows it wrote."""
    from metaflow import Run, namespace  # Metaflow loads only where a flow run is read

    namespace(None)
    data = Run(pathspec).data
    outcomes = data.forecast_checks if "forecast_checks" in data else []
    return [(outcome["name"], bool(outcome["passed"]), dict(outcome["metadata"])) for outcome in outcomes]


def model_metadata(run) -> dict:
    from flows.forecasting.backtest import ranked  # the flow's modules load with the flow, not with the definitions

    data = run.data
    metrics = data.metrics.set_index("candidate")
    metadata = {
        "model_version": data.model_version,
        "metaflow_run": run.pathspec,
        "champion": data.champion,
        "backtest_mae": MetadataValue.float(float(metrics.loc[data.champion, "mae"])),
        "uses_weather": data.settings.use_weather,
        # What the champion knew of the weather (older runs kept no such parameter).
        "champion_weather": data.model_parameters.get("weather", "") if "model_parameters" in data else "",
        "training_window": f"{data.training_window['start']} .. {data.training_window['end']}",
        "features": ", ".join(data.features),
        "backtest": MetadataValue.table(
            records=[TableRecord(record) for record in ranked(data.metrics).round(4).to_dict(orient="records")]
        ),
        "actuals_snapshot_id": data.actuals_snapshot_id,
        "backtest_plot_path": MetadataValue.path(data.backtest_plot_path),
    }
    # Runs made before the flow kept its plots as artifacts (the bridge reports them too) show the path only.
    if "backtest_png" in data:
        metadata["backtest_plot"] = png_markdown(data.backtest_png, "backtest error per candidate")
    if data.weather_snapshot_id is not None:
        metadata["weather_snapshot_id"] = data.weather_snapshot_id
    if "zone_lookup_snapshot_id" in data:  # runs before the forecast named its zones read no lookup
        metadata["zone_lookup_snapshot_id"] = data.zone_lookup_snapshot_id
    if data.noise_floor:
        metadata["noise_floor_mae"] = MetadataValue.float(float(data.noise_floor["mae"]))
    if "held_out_summary" in data:  # runs before the held-out selection scored the champion on one week
        metadata.update(_held_out_metadata(data))
    if "scenarios" in data and data.scenarios:
        metadata["scenarios_never_champion"] = ", ".join(data.scenarios)
    return metadata


def _held_out_metadata(data) -> dict:
    """What the version is known by: the weeks that chose it, its held-out score and its intervals' coverage."""
    summary = data.held_out_summary
    return {
        "selection_weeks": ", ".join(data.selection_weeks_used),
        "held_out_weeks": MetadataValue.table(
            records=[
                TableRecord({key: value for key, value in row.items()}) for row in data.held_out.to_dict("records")
            ]
        ),
        **{key: MetadataValue.float(float(value)) for key, value in summary.items() if key != "held_out_weeks"},
        "training_seconds": MetadataValue.json(data.training_seconds),
        "held_out_plot": png_markdown(data.held_out_png, "held-out weeks: champion MAE / seasonal naive MAE"),
    }


def png_markdown(png: bytes, title: str) -> MetadataValue:
    """An image the Dagster UI draws inline: markdown with the PNG as a data URI."""
    return MetadataValue.md(f"![{title}](data:image/png;base64,{base64.b64encode(png).decode('ascii')})")


def forecast_table_metadata(run) -> dict:
    # The flow's table module imports Metaflow, which reads its configuration when imported.
    from flows.forecasting.tables import FORECAST, FORECAST_COLUMNS

    data = run.data
    metadata = {
        TABLE_NAME: FORECAST,
        SNAPSHOT_ID: MetadataValue.int(data.forecast_snapshot_id),
        ROW_COUNT: MetadataValue.int(len(data.forecast)),
        COLUMN_SCHEMA: TableSchema(columns=[TableColumn(*column) for column in FORECAST_COLUMNS]),
        "model_version": data.model_version,
        METAFLOW_RUN_ID: run.id,
        FORECAST_START: str(data.settings.as_of),
        HORIZON_HOURS: MetadataValue.int(data.settings.horizon_hours),
        ZONES: MetadataValue.int(len(data.zone_ids)),
        "plot_path": MetadataValue.path(data.plot_path),
    }
    if "held_out_summary" in data:
        summary = data.held_out_summary
        metadata["interval_coverage_80"] = MetadataValue.float(summary["held_out_coverage_80"])
        metadata["interval_coverage_95"] = MetadataValue.float(summary["held_out_coverage_95"])
    if "forecast_png" in data:
        metadata["plot"] = png_markdown(data.forecast_png, "forecast of the busiest zones")
    return metadata
