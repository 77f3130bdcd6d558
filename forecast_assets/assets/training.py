"""The Metaflow-made assets: the forecast model and the forecast table, trained by running the flow."""

import base64
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from dagster import (
    AssetCheckEvaluation,
    AssetExecutionContext,
    AssetKey,
    AssetSpec,
    Config,
    DagsterEventType,
    Failure,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableRecord,
    TableSchema,
    multi_asset,
)
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from pydantic import Field

from forecast_assets.assets.table_metadata import (
    COLUMN_SCHEMA,
    ROW_COUNT,
    SNAPSHOT_ID,
    TABLE_NAME,
    snapshot_text,
    table_key,
)
from taxi_core.figures import percent, ratio, rides, seconds
from taxi_core.names import ACTUALS, FORECAST, MODEL_NAME, RAW_WEATHER
from taxi_core.names import ZONES as ZONE_LOOKUP
from taxi_core.progress import SilenceWatch

if TYPE_CHECKING:
    from dagster._core.definitions.metadata import RawMetadataValue
    from metaflow import Run
    from metaflow.client.core import MetaflowData

FORECAST_MODEL = AssetKey(MODEL_NAME)
FORECAST_TABLE = table_key(FORECAST)
TRAINING_GROUP = "training"
# Forecast-table metadata keys the checks on that table read back.
METAFLOW_RUN_ID = "metaflow_run_id"
FORECAST_START = "forecast_start"
HORIZON_HOURS = "horizon_hours"
ZONES = "zones"

# An asset's metadata as its code writes it: Dagster wraps each plain value in a MetadataValue.
Metadata: TypeAlias = dict[str, "RawMetadataValue"]
# A check the flow evaluated on the rows it wrote: its name, whether it passed, and its metadata.
FlowCheck: TypeAlias = tuple[str, bool, Metadata]


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
    candidates: str = Field(
        default="",
        description="Comma-separated candidate models, e.g. glm_weather (default: every one the run can train; "
        "seasonal_naive, the baseline, always trains).",
    )

    def flow_parameters(self) -> dict[str, bool | int | str]:
        parameters: dict[str, bool | int | str] = {"use_weather": self.use_weather, "horizon_hours": self.horizon_hours}
        chosen = {"lookback_days": self.lookback_days, "evaluation_weeks": self.evaluation_weeks,
                  "selection_weeks": self.selection_weeks, "as_of": self.as_of or None,
                  "candidates": self.candidates or None}  # fmt: skip
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
def run_training_flow(context: AssetExecutionContext, config: TrainingConfig) -> Iterator[MaterializeResult[Any]]:
    """Runs flows/train.py through Metaflow's Runner, passing this Dagster run as the flow's parent."""
    # Metaflow loads only when training runs.
    from flows.launch import FlowEvent, FlowEventKind, FlowFailed, run_training

    running = ["Starting the Metaflow flow"]  # what the silence watch names: the flow's start, then each step

    def log_flow_event(event: FlowEvent) -> None:
        watch.heard()
        if event.kind is FlowEventKind.TASK_STARTED and event.step is not None:
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
    context.log.info(f"Metaflow run {run.pathspec}: champion {_finished(run).champion}")
    yield MaterializeResult(asset_key=FORECAST_MODEL, metadata=model_metadata(run))
    yield MaterializeResult(asset_key=FORECAST_TABLE, metadata=forecast_table_metadata(run))
    # Logged once the table's materialization is stored, so each evaluation comes after the version it checked.
    for evaluation in _flow_check_evaluations(context, run.pathspec, _checks_of(run)):
        context.log_event(evaluation)


def _flow_check_evaluations(
    context: AssetExecutionContext, pathspec: str, outcomes: Sequence[FlowCheck]
) -> list[AssetCheckEvaluation]:
    """The flow's evaluations of the forecast table's checks, on the materialization this run just recorded.

    The training job leaves the checks to the flow, which ran them on the rows it wrote. A check Dagster planned
    in this run (a materialization launched from the asset's page with its checks) runs itself and is left out:
    Dagster dates a planned check by the run's start, an evaluation logged here by when it is logged.
    """
    instance, run_id = context.instance, context.run.run_id
    planned = {
        entry.dagster_event.event_specific_data.check_name
        for entry in instance.all_logs(run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED)
        if entry.dagster_event is not None and entry.dagster_event.event_specific_data.asset_key == FORECAST_TABLE
    }
    recorded = instance.fetch_materializations(FORECAST_TABLE, limit=5).records
    written = next((record for record in recorded if record.run_id == run_id), None)
    if written is None:
        return []
    target = AssetCheckEvaluationTargetMaterializationData(
        storage_id=written.storage_id, run_id=run_id, timestamp=written.timestamp
    )
    return [
        AssetCheckEvaluation(
            asset_key=FORECAST_TABLE,
            check_name=name,
            passed=passed,
            metadata={**metadata, "metaflow_run": pathspec},
            target_materialization_data=target,
            description=f"Evaluated by {pathspec} on the rows it wrote",
        )
        for name, passed, metadata in outcomes
        if name not in planned
    ]


def training_run_metadata(pathspec: str) -> tuple[Metadata, Metadata]:
    """The metadata of ``forecast_model`` and the forecast table for the flow run ``pathspec``."""
    from metaflow import Run, namespace  # Metaflow loads only where a flow run is read

    namespace(None)
    run = Run(pathspec)
    return model_metadata(run), forecast_table_metadata(run)


def training_run_checks(pathspec: str) -> list[FlowCheck]:
    """The forecast table's checks as the flow run ``pathspec`` evaluated them on the rows it wrote."""
    from metaflow import Run, namespace  # Metaflow loads only where a flow run is read

    namespace(None)
    return _checks_of(Run(pathspec))


def _finished(run: "Run") -> "MetaflowData":
    """The artifacts of a finished run: its end step's."""
    data = run.data
    if data is None:  # an invariant: the runs read here succeeded (the Runner's, and those the bridge reports)
        raise RuntimeError(f"Metaflow run {run.pathspec} has no artifacts: its end step has not run")
    return data


def _checks_of(run: "Run") -> list[FlowCheck]:
    """Each check the run evaluated: its name, outcome and metadata, with the table version it checked."""
    data = _finished(run)
    outcomes = data.forecast_checks if "forecast_checks" in data else []
    checked: Metadata = {SNAPSHOT_ID: snapshot_text(data.forecast_snapshot_id)} if outcomes else {}
    return [
        (outcome["name"], bool(outcome["passed"]), {**_rounded(outcome["metadata"]), **checked}) for outcome in outcomes
    ]


def _rounded(metadata: Mapping[str, "RawMetadataValue"]) -> Metadata:
    """The checks' figures in rides (older runs kept them unrounded)."""
    return {key: rides(value) if isinstance(value, float) else value for key, value in metadata.items()}


# `card get` writes a card of the run's step to a file a browser opens (docs/forecasting.md lists the cards).
CARD_COMMAND = "./run python flows/train.py card get {run}/{step} .state/cards/{step}.html"


def model_metadata(run: "Run") -> Metadata:
    from flows.forecasting.backtest import ranked  # the flow's modules load with the flow, not with the definitions

    data = _finished(run)
    metrics = data.metrics.set_index("candidate")
    naive = metrics.mae.get("seasonal_naive")
    spent: dict[str, float] = data.training_seconds if "training_seconds" in data else {}
    metadata: Metadata = {
        "model_version": data.model_version,
        "metaflow_run": run.pathspec,
        "champion": data.champion,
        "backtest_mae": MetadataValue.float(rides(metrics.loc[data.champion, "mae"])),
        "uses_weather": data.settings.use_weather,
        # What the champion knew of the weather (older runs kept no such parameter).
        "champion_weather": data.model_parameters.get("weather", "") if "model_parameters" in data else "",
        "training_window": f"{data.training_window['start']} .. {data.training_window['end']}",
        "features": ", ".join(data.features),
        # Five short columns fit the page; every column is in backtest_plot and the evaluate card.
        "backtest": _table(
            [
                {
                    "candidate": row["candidate"],
                    "MAE": rides(row["mae"]),
                    "RMSE": rides(row["rmse"]),
                    "MAE / naive": ratio(row["mae"] / naive) if naive else "",
                    "seconds": seconds(spent[row["candidate"]]) if row["candidate"] in spent else "",
                }
                for row in ranked(data.metrics).to_dict("records")
            ]
        ),
        "actuals_snapshot_id": snapshot_text(data.actuals_snapshot_id),
        "backtest_plot_path": MetadataValue.path(data.backtest_plot_path),
    }
    # Runs made before the flow kept its plots as artifacts (the bridge reports them too) show the path only.
    if "backtest_png" in data:
        metadata["backtest_plot"] = _chart_and_table(
            data.backtest_png, "backtest error per candidate", "Every candidate over every backtest week",
            *_backtest_rows(data, spent),
        )  # fmt: skip
    if data.weather_snapshot_id is not None:
        metadata["weather_snapshot_id"] = snapshot_text(data.weather_snapshot_id)
    if "zone_lookup_snapshot_id" in data:  # runs before the forecast named its zones read no lookup
        metadata["zone_lookup_snapshot_id"] = snapshot_text(data.zone_lookup_snapshot_id)
    if data.noise_floor:
        metadata["noise_floor_mae"] = MetadataValue.float(rides(data.noise_floor["mae"]))
    if "held_out_summary" in data:  # runs before the held-out selection scored the champion on one week
        metadata.update(_held_out_metadata(data))
    if "scenarios" in data and data.scenarios:
        metadata["scenarios_never_champion"] = ", ".join(data.scenarios)
    if "decision" in data:  # runs before champion and challenger served whatever they trained
        decision = data.decision
        metadata["serving"] = decision.now_serving
        metadata["promoted"] = decision.promoted
        metadata["promotion"] = decision.reason
        if decision.ratio is not None:
            metadata["mae_vs_serving"] = MetadataValue.float(ratio(decision.ratio))
    metadata["metaflow_cards"] = MetadataValue.md(_cards_markdown(run.id))
    return metadata


def _backtest_rows(data: "MetaflowData", spent: Mapping[str, float]) -> tuple[list[str], list[list[str | float]]]:
    from flows.forecasting.report import metrics_table  # the flow's modules load with the flow

    headers, rows = metrics_table(data.metrics, data.noise_floor, tuple(data.scenarios) if "scenarios" in data else ())
    # Each row starts with its candidate's name.
    timed = [[*row, seconds(spent[str(row[0])]) if str(row[0]) in spent else ""] for row in rows]
    return [*headers, "seconds"], timed


def _held_out_metadata(data: "MetaflowData") -> Metadata:
    """What the version is known by: the weeks that chose it, its held-out score and its intervals' coverage."""
    from flows.forecasting.selection import RANGE_COLUMN  # the flow's modules load with the flow

    summary, weeks = data.held_out_summary, data.held_out
    compact = [
        {"held-out week": row["held-out week"], "champion": row["champion"], "MAE / naive": ratio(row["MAE / naive"]),
         "90% range": row[RANGE_COLUMN], "80% coverage": f"{percent(row['80% coverage'])}%"}
        for row in weeks.to_dict("records")
    ]  # fmt: skip
    return {
        "selection_weeks": ", ".join(data.selection_weeks_used),
        # Five short columns fit the page; every column is in held_out_plot and the evaluate card.
        "held_out_weeks": _table(compact),
        "held_out_plot": _chart_and_table(
            data.held_out_png,
            "held-out weeks: champion MAE / seasonal naive MAE",
            "Every column of the held-out weeks",
            list(weeks.columns),
            weeks.values.tolist(),
        ),
        "held_out_mae": MetadataValue.float(rides(summary["held_out_mae"])),
        "held_out_mae_vs_naive_median": MetadataValue.float(ratio(summary["held_out_mae_vs_naive_median"])),
        "held_out_mae_vs_naive_worst": MetadataValue.float(ratio(summary["held_out_mae_vs_naive_worst"])),
        **{
            f"held_out_coverage_{level}_pct": MetadataValue.float(percent(summary[f"held_out_coverage_{level}"]))
            for level in (80, 95)
        },
    }


def _table(rows: Sequence[Mapping[str, str | int | float | bool | None]]) -> MetadataValue:
    return MetadataValue.table(records=[TableRecord(row) for row in rows])


def png_markdown(png: bytes, title: str) -> MetadataValue:
    """An image the Dagster UI draws inline: markdown with the PNG as a data URI."""
    return MetadataValue.md(_png_image(png, title))


def _png_image(png: bytes, title: str) -> str:
    return f"![{title}](data:image/png;base64,{base64.b64encode(png).decode('ascii')})"


def _chart_and_table(
    png: bytes, title: str, heading: str, headers: Sequence[str], rows: Sequence[Sequence[object]]
) -> MetadataValue:
    """The chart, then the table with every column (Markdown; the image keeps it behind *Show Markdown*)."""
    lines = [f"| {' | '.join(headers)} |", f"|{'---|' * len(headers)}"]
    lines += [f"| {' | '.join(map(str, row))} |" for row in rows]
    return MetadataValue.md("\n".join([_png_image(png, title), "", f"**{heading}**", "", *lines]))


def _cards_markdown(run_id: str) -> str:
    """The run's cards, named, and the command that writes one (the held-out weeks with every column are in
    ``evaluate``)."""
    return (
        "Cards: `load` (the tables read), `evaluate` (held-out weeks, every candidate, per zone), `write` "
        f"(forecast plot). Write one to open in a browser: `{CARD_COMMAND.format(run=run_id, step='evaluate')}`"
    )


def forecast_table_metadata(run: "Run") -> Metadata:
    # The flow's table module imports Metaflow, which reads its configuration when imported.
    from flows.forecasting.tables import FORECAST_COLUMNS

    data = _finished(run)
    metadata: Metadata = {
        TABLE_NAME: FORECAST,
        SNAPSHOT_ID: snapshot_text(data.forecast_snapshot_id),
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
        for level in (80, 95):
            metadata[f"interval_coverage_{level}_pct"] = MetadataValue.float(
                percent(summary[f"held_out_coverage_{level}"])
            )
    if "forecast_png" in data:
        metadata["plot"] = png_markdown(data.forecast_png, "forecast of the busiest zones")
    return metadata
