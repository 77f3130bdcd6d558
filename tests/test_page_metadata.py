"""What every asset and check puts on its Dagster page fits a 1,400 px laptop screen: tables of a few short
columns, images that fit their dialog, rounded figures, identities as text, no long JSON inline; and the flow's
checks of the forecast table are dated with or after the materialization they checked. No JVM, no flow run."""

from __future__ import annotations

import base64
import io
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from dagster import (
    AssetCheckKey,
    MetadataValue,
    TableMetadataValue,
    TableRecord,
    instance_for_test,
    materialize,
)
from pyspark.sql.types import LongType, StringType, StructField, StructType

from bridge.translate.column_lineage import ColumnOrigin, InputColumn, Transformation
from bridge.translate.dagster_columns import column_lineage_from_metadata, column_lineage_metadata
from flows.forecasting import checks, plots
from flows.forecasting.selection import HeldOutWeek
from forecast_assets.assets.source_files import _files_metadata, _one_file_metadata
from forecast_assets.assets.table_metadata import table_metadata
from forecast_assets.assets.training import FORECAST_MODEL, FORECAST_TABLE, forecast_table_metadata, model_metadata
from forecast_assets.audits import Measured, MonthFacts, Rate, counted_warning, rate_audit
from forecast_assets.lakehouse.neighbours import NeighbourMonth
from forecast_assets.lakehouse.snapshots import StagedMonth, WriteResult
from forecast_assets.lakehouse.tables import HOURLY_ACTUALS
from forecast_assets.resources import StagingResource
from forecast_assets.source_specs.spec import SourceFile
from forecast_assets.source_specs.yellow_trips import SOURCE as YELLOW_TRIPS
from forecast_assets.sources.download import FetchRecord
from forecast_assets.sources.stage import StagedFile
from taxi_core.figures import percent_text
from taxi_core.months import MonthWindow
from tests.page_metadata import page_problems, png_width

RUN_ID = "1795745913733783"
PATHSPEC = f"TrainForecastModelFlow/{RUN_ID}"
START = pd.Timestamp("2025-02-01")
ZONES = [161, 237]
CANDIDATES = ["seasonal_naive", "glm", "gbm"]
# The trip audits judged from counts alone (the others need a month's calendar or the zone lookup).
SIMPLE_TRIP_AUDITS = {
    "raw_yellow_pickups_inside_month", "raw_yellow_rows_like_recent_months", "raw_yellow_zones_like_recent_months",
}  # fmt: skip


def _png(width: int) -> bytes:
    from PIL import Image

    drawn = io.BytesIO()
    Image.new("RGB", (width, 10)).save(drawn, format="png")
    return drawn.getvalue()


def test_the_inspection_names_each_kind_of_misfit():
    wide = TableRecord({f"c{number}": 1 for number in range(7)})
    chart = f"![chart](data:image/png;base64,{base64.b64encode(_png(1820)).decode()})"
    found = page_problems(
        {
            "held_out_weeks": MetadataValue.table(records=[wide]),
            "backtest_mae": MetadataValue.float(1.4615349574167005),
            "iceberg/snapshot_id": MetadataValue.int(3993554241455864039),
            "actuals_snapshot_id": 1037005485658352439,
            "plot": MetadataValue.md(chart),
            "lineage/column_transformations": MetadataValue.json({f"c{n}": [{"a": n, "b": [n]}] for n in range(4)}),
            "ranges": '{"prcp": [0, 500]}',
        }
    )
    assert [problem.split(":")[0] for problem in found] == [
        "held_out_weeks", "backtest_mae", "iceberg/snapshot_id", "actuals_snapshot_id", "plot",
        "lineage/column_transformations", "ranges",
    ]  # fmt: skip
    fitting = {
        "rows": 12,
        "ratio": 0.726,
        "iceberg/snapshot_id": "3993554241455864039",
        "median_80_width": 3.6,  # "width" holds "id", but not as a word
        "null_location_id": 0,  # a count of rows
        "plot": MetadataValue.md(f"![chart](data:image/png;base64,{base64.b64encode(_png(1000)).decode()})"),
        "lineage/input_versions": MetadataValue.json({"nyc_taxi/raw_yellow": "6957304220665549508"}),
        "uses_weather": True,
    }
    assert page_problems(fitting) == []


def test_a_share_reads_as_a_percentage_however_small():
    assert [percent_text(share) for share in (0, 1, 0.8013, 0.001, 2.32308e-05, 1 / 3e6)] == [
        "0%", "100%", "80.1%", "0.1%", "0.00232%", "0.0000333%",
    ]  # fmt: skip


class _Artifacts(dict):
    """``run.data`` of a flow run, as a mapping that also answers attribute access and ``in``."""

    __getattr__ = dict.__getitem__


def _held_out() -> pd.DataFrame:
    weeks = [START - pd.Timedelta(weeks=n) for n in (4, 3, 2, 1)]
    rows = [
        HeldOutWeek(
            week=week,
            chosen_on=tuple(weeks[:index] or [week - pd.Timedelta(weeks=1)]),
            champion="glm",
            mae=1.4615349574167005,
            naive_mae=2.0251934,
            ratio_range=(0.70123456, 0.7412345),
            coverage={80: 0.79613, 95: 0.9512},
            floor_mae=1.3619548096587084,
        ).row()
        for index, week in enumerate(weeks)
    ]
    return pd.DataFrame(rows)


def _hours(start: pd.Timestamp, hours: int) -> pd.DataFrame:
    grid = pd.MultiIndex.from_product([pd.date_range(start, periods=hours, freq="h"), ZONES]).to_frame(index=False)
    return grid.set_axis(["pickup_hour", "pulocationid"], axis=1)


def _training_run() -> SimpleNamespace:
    rng = np.random.default_rng(0)
    metrics = pd.DataFrame(
        {
            "candidate": CANDIDATES,
            "mae": [1.9919123, 1.4615349574167005, 1.4868123],
            "rmse": [3.1447, 2.2484, 2.3124],
            "wape": [0.4962, 0.3641, 0.3703],
            "hours": [50400] * 3,
        }
    )
    actuals = _hours(START - pd.Timedelta(days=8), 8 * 24).assign(total_rides=rng.poisson(20, 8 * 24 * len(ZONES)))
    bands = {"lower_95": 5.0, "lower_80": 10.0, "upper_80": 30.0, "upper_95": 40.0}
    tested = _hours(START - pd.Timedelta(days=7), 7 * 24).assign(predicted=20.0, **bands)
    names = {"zone": "Midtown Center", "borough": "Manhattan"}
    forecast = _hours(START, 24).assign(forecasted_total_rides=20.0, **bands, **names)
    held_out = _held_out()
    summary = {
        "held_out_weeks": 4,
        "held_out_mae": 1.4131,
        "held_out_mae_vs_naive_median": 0.7261,
        "held_out_mae_vs_naive_worst": 0.7412,
        "held_out_coverage_80": 0.8013,
        "held_out_coverage_95": 0.9507,
    }
    data = _Artifacts(
        model_version=PATHSPEC, champion="glm", metrics=metrics, scenarios=(), noise_floor={"mae": 1.3619548096587084},
        settings=SimpleNamespace(use_weather=False, as_of=START, horizon_hours=24),
        model_parameters={"weather": "none"}, training_window={"start": "2024-11-30", "end": "2025-02-01"},
        features=["pulocationid", "hour", "lag_168"], actuals_snapshot_id=1037005485658352439,
        weather_snapshot_id=None, zone_lookup_snapshot_id=9024905222230873361, backtest_plot_path="/tmp/b.png",
        training_seconds={"seasonal_naive": 3.5, "glm": 5.2812, "gbm": 13.31}, selection_weeks_used=["2025-01-04"],
        held_out=held_out, held_out_summary=summary, forecast=forecast, zone_ids=ZONES, plot_path="/tmp/f.png",
        forecast_snapshot_id=3993554241455864039,
        held_out_png=plots.png_bytes(plots.held_out_figure(held_out)),
        backtest_png=plots.png_bytes(plots.backtest_figure(metrics, {"mae": 1.36})),
        forecast_png=plots.png_bytes(plots.forecast_figure(actuals, tested, forecast)),
        forecast_checks=[outcome.to_dict() for outcome in checks.forecast_checks(
            forecast, checks.ForecastVersion(RUN_ID, START, 24, len(ZONES))
        )],
    )  # fmt: skip
    return SimpleNamespace(data=data, pathspec=PATHSPEC, id=RUN_ID)


@pytest.fixture(scope="module")
def training_run() -> SimpleNamespace:
    return _training_run()


def test_the_model_and_forecast_pages_fit(training_run):
    model, table = model_metadata(training_run), forecast_table_metadata(training_run)
    assert page_problems(model) == [] and page_problems(table) == []
    assert isinstance(model["held_out_weeks"], TableMetadataValue)
    # The table's other columns are one click away, beside the chart, with the run's cards named.
    for column in training_run.data.held_out.columns:
        assert column in model["held_out_plot"].value
    assert f"{RUN_ID}/evaluate" in model["metaflow_cards"].value
    assert model["held_out_coverage_80_pct"].value == 80.1 and table["interval_coverage_95_pct"].value == 95.1
    assert model["actuals_snapshot_id"].value == "1037005485658352439"


def test_every_chart_is_drawn_for_a_dialog_1000_px_wide_and_a_card_500_px_high(training_run):
    from PIL import Image

    data = training_run.data
    for png in (data.held_out_png, data.backtest_png, data.forecast_png):
        width, height = Image.open(io.BytesIO(png)).size
        assert (png_width(png), width) == (plots.PNG_WIDTH, plots.PNG_WIDTH) and height <= 500


def test_the_forecast_checks_report_rounded_rides_and_the_version_checked(training_run):
    outcomes = training_run.data.forecast_checks
    assert {outcome["name"] for outcome in outcomes} >= {checks.NO_NEGATIVE_RIDES, checks.INTERVALS_HOLD_THE_FORECAST}
    for outcome in outcomes:
        assert page_problems(outcome["metadata"]) == [], outcome["name"]


@pytest.fixture(scope="module")
def trained(training_run):
    """The training step materialized on a real instance, the flow's run replaced by ``training_run``."""
    import flows.launch
    from forecast_assets.assets.training import run_training_flow

    with pytest.MonkeyPatch.context() as patch, instance_for_test() as instance:
        patch.setattr(flows.launch, "run_training", lambda *args, **kwargs: training_run)
        yield instance, materialize([run_training_flow], instance=instance)


def test_the_flow_s_checks_are_dated_after_the_materialization_they_checked(trained, training_run):
    """In the training job the flow's evaluations are logged once the table's materialization is stored."""
    instance, result = trained
    written = instance.fetch_materializations(FORECAST_TABLE, limit=1).records[0]
    evaluations = result.get_asset_check_evaluations()
    assert {e.check_name for e in evaluations} == {o["name"] for o in training_run.data.forecast_checks}
    for evaluation in evaluations:
        assert evaluation.target_materialization_data.storage_id == written.storage_id
        assert evaluation.metadata["iceberg/snapshot_id"].value == "3993554241455864039"
        assert page_problems(evaluation.metadata) == []
        key = AssetCheckKey(FORECAST_TABLE, evaluation.check_name)
        [execution] = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
        # What the check's page shows as its timestamp (SQLite keeps it in whole seconds).
        assert execution.create_timestamp >= int(written.timestamp)
        assert execution.event.timestamp >= written.timestamp
    model = instance.fetch_materializations(FORECAST_MODEL, limit=1).records[0].asset_materialization
    assert page_problems(model.metadata) == []


def test_the_launching_step_names_no_dataset_and_its_checks_are_a_job_of_their_own(trained, training_run):
    from dagster import Definitions

    from bridge.sources.dagster import DagsterSource
    from bridge.translate.dagster import translate_run
    from forecast_assets.assets.training import run_training_flow
    from tests.test_golden import NAMING

    instance, result = trained
    graph = Definitions(assets=[run_training_flow]).resolve_asset_graph()
    source = DagsterSource(instance, graph, NAMING, launcher_kinds=("metaflow",))
    events = [event for _, event in translate_run(source.run_records(result.run_id), NAMING)]
    step = [e for e in events if e.job.name.endswith(".run_training_flow")]
    checks = [e for e in events if e.job.name.endswith(".run_training_flow__checks")]
    assert step and all(not e.inputs and not e.outputs for e in step)
    assert [e.eventType.value for e in checks] == ["START", "COMPLETE"]
    [checked] = checks[1].inputs
    assert checked.name.endswith("yellow_rides_hourly_forecast")
    found = {a.assertion for a in checked.facets["dataQualityAssertions"].assertions}
    assert found == {o["name"] for o in training_run.data.forecast_checks}
    assert checks[1].run.facets["parent"].job.name == step[0].job.name


def test_the_training_job_leaves_the_forecast_checks_to_the_flow():
    from forecast_assets.definitions import defs

    job = defs().resolve_job_def("train_forecast_model")
    assert job.asset_layer.executable_asset_keys == {FORECAST_MODEL, FORECAST_TABLE}
    assert not [key for key in job.asset_layer.asset_graph.asset_check_keys if key.asset_key == FORECAST_TABLE]


def _lineage() -> dict:
    direct, grouped = Transformation("DIRECT", "TRANSFORMATION"), Transformation("INDIRECT", "GROUP_BY")
    return {
        "pickup_hour": (ColumnOrigin(InputColumn("nyc_taxi/raw_yellow", "tpep_pickup_datetime"), (direct, grouped)),),
        "pulocationid": (ColumnOrigin(InputColumn("nyc_taxi/raw_yellow", "pulocationid"), (direct,)),),
        "total_rides": (
            ColumnOrigin(InputColumn("nyc_taxi/raw_yellow", "tpep_pickup_datetime"), (grouped,)),
            ColumnOrigin(InputColumn("nyc_taxi/raw_yellow", "pulocationid"), (grouped,)),
        ),
        "ingested_at": (),
    }


def test_column_lineage_is_a_short_table_that_reads_back_exactly():
    metadata = column_lineage_metadata(_lineage())
    assert page_problems(metadata) == []
    assert "lineage/column_transformations" not in metadata  # the JSON the page showed inline, 60 lines of it
    unwrapped = {key: getattr(value, "value", value) for key, value in metadata.items()}
    assert column_lineage_from_metadata(unwrapped) == _lineage()


def test_a_table_materialization_fits():
    schema = StructType([StructField("pickup_hour", StringType()), StructField("total_rides", LongType())])
    write = WriteResult(snapshot_id=1037005485658352439, rows_written=194184, rows_replaced=0, table_rows=386880)
    extra = {**column_lineage_metadata(_lineage()), "hours": 744, "raw_yellow_snapshot_id": "6957304220665549508"}
    metadata = table_metadata(HOURLY_ACTUALS, write, schema, "2025-01-01", **extra)
    assert page_problems(metadata) == []
    assert metadata["iceberg/snapshot_id"].value == "1037005485658352439"


def test_the_source_file_pages_fit(tmp_path):
    record = FetchRecord(
        url="file:///sample/yellow_tripdata_2025-01.parquet", fingerprint="sha256:" + "e6" * 32, size=4078202,
        etag=None, last_modified=None, fetched_at="2026-11-27T02:17:42+00:00", rows=172185,
    )  # fmt: skip
    staged = StagedFile("taxi/yellow_tripdata_2025-01.parquet", record, downloaded=True, content_changed=True)
    staging = StagingResource(location=str(tmp_path))
    assert page_problems(_one_file_metadata(staged, record.url, staging)) == []
    files = (SourceFile("prcp", "prcp-202501-cty-scaled.csv"), SourceFile("tavg", "tavg-202501-cty-scaled.csv"))
    assert page_problems(_files_metadata(files, [staged, staged])) == []


def test_audits_report_shares_as_percentages_and_rounded_ratios():
    window = MonthWindow.from_partition_key("2025-01-01")
    neighbour = NeighbourMonth("2024-12", 173960, {161: 9000, 237: 8000})
    facts = MonthFacts(window, expected_rows=172185, neighbours=(neighbour,))
    measured = Measured(
        {"rows": 172185, "pickups_outside_month": 4, "negative_fares": 7, "found": 3, "zones_with_pickups": [161, 237]}
    )
    judged = [
        rate_audit("negative", "are negative", lambda: None, "negative_fares", Rate(0.02, "real files")).judge,
        counted_warning("warned", "few", lambda: None, "found", 0.001).judge,
        *(audit.judge for audit in YELLOW_TRIPS.audits if audit.name in SIMPLE_TRIP_AUDITS),
    ]
    results = [judge(measured, facts) for judge in judged]
    assert len(results) == 2 + len(SIMPLE_TRIP_AUDITS)
    for result in results:
        assert page_problems(result.metadata) == [], result.metadata
    assert results[0].metadata["share"] == "0.00407%"


def test_a_published_month_s_checks_name_no_dropped_branch():
    from forecast_assets.assets.month_checks import Verdict
    from forecast_assets.audits import AuditResult
    from forecast_assets.source_specs.yellow_trips import SOURCE as YELLOW_TRIPS

    staged = StagedMonth(
        HOURLY_ACTUALS, MonthWindow.from_partition_key("2025-01-01"), "audit_2025_01_d35ed6b8",
        WriteResult(111, 10, 0, 10),
    )  # fmt: skip
    staging = {"staged_branch": staged.branch, "read_staged_with": f"SELECT ... VERSION AS OF '{staged.branch}'"}
    audited = f"staged snapshot 111 on branch {staged.branch}"
    result = AuditResult(passed=True, metadata={"rows": 10, "audited": audited, **staging})
    [(_, published)] = Verdict([(YELLOW_TRIPS.audits[0], result)], staged).published_as(222)
    assert "audit_2025_01" not in str(published.metadata)
    assert published.metadata["audited"] == "staged snapshot 111, published as 222"
    [(_, fast_forward)] = Verdict([(YELLOW_TRIPS.audits[0], result)], staged).published_as(111)
    assert fast_forward.metadata["audited"] == "snapshot 111, staged then published"
