"""A new user's first hour: the README's pipeline command, typed into a clean login shell on a fresh
copy of the project, runs everything; the flow runs by hand; nothing lands outside the state folder;
Dagster knows which code location every run came from; and, in a real browser on `./run dagster dev`,
the runs list, the launch dialog, the lineage sensor's tick log and an asset's way to its lineage."""

from __future__ import annotations

import base64
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.end_to_end import CLEAN_PATH, FreshCopyDemo, git

pytestmark = pytest.mark.integration

ALLOWED_OUTSIDE_STATE = {"!! .state/", "!! .venv/", "!! .env"}
# A month of taxi files staged by a run dagster dev launches; the sensor ticks every 30 s.
LAUNCHED_RUN_SECONDS = 600
TICK_SECONDS = 120


@pytest.fixture(scope="module")
def fresh_copy_demo(end_to_end) -> FreshCopyDemo:
    """The README's pipeline command in a clean login shell on a fresh copy (run in the background lane)."""
    outcome: FreshCopyDemo = end_to_end.outcome("readme-demo")
    return outcome


@pytest.fixture(scope="module")
def fresh_copy(fresh_copy_demo) -> Path:
    return fresh_copy_demo.copy


@pytest.fixture(scope="module")
def demo(fresh_copy_demo) -> subprocess.CompletedProcess:
    return fresh_copy_demo.demo


@pytest.fixture(scope="module")
def flow_by_hand(end_to_end, demo) -> subprocess.CompletedProcess:
    outcome: subprocess.CompletedProcess = end_to_end.outcome("flow-by-hand")
    return outcome


def test_the_readme_pipeline_command_runs_everything(demo):
    assert demo.returncode == 0, demo.stdout[-4000:] + demo.stderr[-4000:]
    assert "Demo finished" in demo.stdout
    # The months before the loop's are one run (a single-run backfill): one Spark session for both.
    stages = ("Ingesting 2024-12 to 2025-01 (2 months, one run)", "Training", "Forecasting every day of 2025-02",
              "Ingesting 2025-02", "Scoring 2025-02's forecasts", "Lineage")  # fmt: skip
    for stage in stages:
        assert stage in demo.stdout, stage
    # Training read the months before the one its forecasts are scored on: the version could not have seen it.
    assert demo.stdout.index("Training") < demo.stdout.index("Ingesting 2025-02")


def test_the_demo_s_output_has_no_framework_warnings_nor_colour_codes(demo):
    """Its output captured (not a terminal), as in a log: the previews the project relies on (Dagster's Beta and
    Preview warnings, 30 lines a demo) and the code server's own lines say nothing to the reader."""
    printed = demo.stdout + demo.stderr
    noise = [
        line for line in printed.splitlines() if re.search(r"BetaWarning|PreviewWarning|dagster\.code_server", line)
    ]
    assert noise == []
    assert "\x1b[" not in printed


def test_the_flow_runs_by_hand_from_the_project_root(flow_by_hand):
    assert flow_by_hand.returncode == 0, flow_by_hand.stdout[-4000:] + flow_by_hand.stderr[-4000:]
    assert "Task finished successfully" in flow_by_hand.stdout + flow_by_hand.stderr


def test_a_training_from_the_shell_ends_with_its_lineage_delivered(fresh_copy, flow_by_hand):
    """No pass by hand: the flow's exit hook ran one, so the lineage names the new model version at once."""
    import json

    printed = flow_by_hand.stdout + flow_by_hand.stderr
    # Metaflow's own record of the run just made: the newest run folder in its local metadata.
    runs = fresh_copy / ".state" / "metaflow" / ".metaflow" / "TrainForecastModelFlow"
    newest = "TrainForecastModelFlow/" + max((run.name for run in runs.iterdir() if run.name.isdigit()), key=int)
    assert f"Lineage of {newest}, one pass of `./run taxi-lineage`:" in printed, printed[-3000:]
    environment = {"HOME": str(Path.home()), "LANG": "C.UTF-8", "PATH": CLEAN_PATH}
    read = subprocess.run(
        ["./run", "taxi-lineage", "model", "--json"], cwd=fresh_copy, env=environment, capture_output=True, text=True
    )
    assert read.returncode == 0, read.stderr
    assert newest in {version["version"] for version in json.loads(read.stdout)}
    assert "Not in the lineage yet" not in read.stderr


def test_nothing_is_written_outside_the_state_folder(fresh_copy, demo, flow_by_hand):
    status = set(git("status", "--porcelain", "--ignored", cwd=fresh_copy).splitlines())
    assert status <= ALLOWED_OUTSIDE_STATE, sorted(status - ALLOWED_OUTSIDE_STATE)


def test_dagster_knows_the_code_location_of_every_demo_run(fresh_copy, demo, monkeypatch):
    """The job pages and the Overview timeline list runs by the code location's label."""
    from dagster import DagsterInstance, RunsFilter

    monkeypatch.setenv("DAGSTER_HOME", str(fresh_copy / ".state" / "dagster"))
    with DagsterInstance.get() as instance:
        runs = instance.get_runs()
        demo_runs = {"reference_data": 1, "monthly_ingestion": 2, "train_forecast_model": 1, "daily_forecast": 1,
                     "score_forecasts": 1}  # fmt: skip
        assert sorted(run.job_name for run in runs) == sorted(job for job, n in demo_runs.items() for _ in range(n))
        for run in runs:
            assert run.remote_job_origin is not None, run.run_id
            assert run.remote_job_origin.location_name == "taxi_demand"
        for job_name, count in demo_runs.items():
            job_page = RunsFilter(job_name=job_name, tags={".dagster/repository": "__repository__@taxi_demand"})
            assert len(instance.get_runs(job_page)) == count


@pytest.fixture(scope="module")
def dagster_ui(fresh_copy, demo, tmp_path_factory):
    """``./run dagster dev`` on the demo's state, as the README tells a user to start it, and a browser page."""
    from tests.dagster_ui import browser_page, dagster_dev

    assert demo.returncode == 0, demo.stdout[-4000:] + demo.stderr[-4000:]
    log = tmp_path_factory.mktemp("dagster-dev") / "dagster_dev.log"
    with dagster_dev(fresh_copy, log) as url, browser_page() as page:
        yield url, page


def _open(page, url: str) -> None:
    page.goto(url)
    page.wait_for_load_state("networkidle")


def _finished(instance, run_id: str, seconds: float = 60):
    """The run once Dagster has stored its end (success, failure or cancellation)."""
    from dagster._core.storage.dagster_run import FINISHED_STATUSES

    deadline = time.monotonic() + seconds
    while (run := instance.get_run_by_id(run_id)).status not in FINISHED_STATUSES and time.monotonic() < deadline:
        time.sleep(0.2)  # polling the run's stored status, the condition waited for
    return run


def _instance(fresh_copy: Path, monkeypatch):
    from dagster import DagsterInstance

    monkeypatch.setenv("DAGSTER_HOME", str(fresh_copy / ".state" / "dagster"))
    return DagsterInstance.get()


def test_the_runs_page_lists_every_demo_run(fresh_copy, dagster_ui, monkeypatch):
    from playwright.sync_api import expect

    url, page = dagster_ui
    with _instance(fresh_copy, monkeypatch) as instance:
        demo_runs = {run.run_id: run.job_name for run in instance.get_runs()}
    _open(page, f"{url}/runs")
    for run_id, job_name in demo_runs.items():
        # The innermost box holding both the run's link and its job's name is its row (the table is virtualized).
        row = page.locator("div").filter(has=page.locator(f'a[href="/runs/{run_id}"]')).filter(has_text=job_name).last
        expect(row).to_contain_text(run_id[:8])
        expect(row).to_contain_text("Success")


def test_a_month_launched_from_the_launch_dialog_succeeds(fresh_copy, dagster_ui, monkeypatch):
    """The dialog lists the months the sample source has (no 'last 90 days' hiding them), and one of them runs."""
    from dagster import DagsterRunStatus
    from playwright.sync_api import expect

    url, page = dagster_ui
    _open(page, f"{url}/assets/taxi_trip_files")
    page.get_by_role("button", name="Materialize").first.click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("2024-12-01")
    expect(dialog).not_to_contain_text("Showing the last")  # Dagster's 90-day window would hide the months
    dialog.get_by_role("button", name="All", exact=True).click()
    expect(page.get_by_text("3 partitions", exact=True)).to_be_visible()  # the sample source's months, no more
    partitions = page.get_by_placeholder("ex: 2024-12-01, 2025-01-01")
    partitions.fill("2025-01-01")
    partitions.press("Enter")
    expect(page.get_by_text("1 partition", exact=True)).to_be_visible()
    dialog.get_by_role("button", name=re.compile(r"^Launch (1 )?run$")).click()
    toast = page.get_by_text(re.compile(r"Launched run [0-9a-f]{8}"))
    expect(toast).to_be_visible()
    short_id = toast.inner_text().split()[-1]

    with _instance(fresh_copy, monkeypatch) as instance:
        (run,) = [run for run in instance.get_runs() if run.run_id.startswith(short_id)]
        assert run.tags.get("dagster/partition") == "2025-01-01"
    _open(page, f"{url}/runs/{run.run_id}")
    expect(page.get_by_text("Success").first).to_be_visible(timeout=LAUNCHED_RUN_SECONDS * 1000)
    # The page can show a step's success a moment before the run's own end is stored.
    with _instance(fresh_copy, monkeypatch) as instance:
        assert _finished(instance, run.run_id).status == DagsterRunStatus.SUCCESS


def test_a_month_the_source_lacks_is_refused_before_a_run_starts(fresh_copy, dagster_ui, monkeypatch):
    """The partitions are the months the demo ingested: the month after them is refused in the dialog itself."""
    from playwright.sync_api import expect

    url, page = dagster_ui
    with _instance(fresh_copy, monkeypatch) as instance:
        runs_before = len(instance.get_runs())
        # The sample source's own months, read from its folder: the one after its newest is one it lacks.
        newest = max(path.stem.rsplit("_", 1)[-1] for path in (fresh_copy / ".state").glob("sample_source/**/yellow_*"))
    year, month = map(int, newest.split("-"))
    lacking = f"{year + month // 12}-{month % 12 + 1:02d}-01"
    _open(page, f"{url}/assets/taxi_trip_files")
    page.get_by_role("button", name="Materialize").first.click()
    launch = page.get_by_role("dialog").filter(has_text="Launch runs to materialize")
    partitions = page.get_by_placeholder("ex: 2024-12-01, 2025-01-01")
    partitions.fill(lacking)
    partitions.press("Enter")
    expect(page.get_by_role("dialog").filter(has_text="Could not find partition")).to_contain_text(lacking)
    page.get_by_role("button", name="OK").click()
    expect(launch.get_by_text("0 partitions", exact=True)).to_be_visible()
    expect(launch.get_by_role("button", name=re.compile(r"^Launch"))).to_be_disabled()
    launch.get_by_role("button", name="Cancel", exact=True).click()
    with _instance(fresh_copy, monkeypatch) as instance:
        assert len(instance.get_runs()) == runs_before


def test_the_lineage_sensor_tick_log_says_what_lineage_did(dagster_ui):
    from playwright.sync_api import expect

    url, page = dagster_ui
    _open(page, f"{url}/locations/taxi_demand/sensors/openlineage_bridge")
    page.get_by_text("View logs").first.click(timeout=TICK_SECONDS * 1000)
    log = page.get_by_role("dialog")
    expect(log).to_contain_text(re.compile(r"This tick's pass: |holds the lease|another lineage pass is running"))
    expect(log).to_contain_text(re.compile(r"Lineage: healthy \(exit 0\); \d+ events in the outbox"))
    expect(log).to_contain_text("openlineage_events.jsonl")


def test_an_asset_page_opens_its_lineage(fresh_copy, dagster_ui):
    from playwright.sync_api import expect

    url, page = dagster_ui
    _open(page, f"{url}/assets/nyc_taxi/raw_yellow")
    page.get_by_placeholder("Filter metadata keys").fill("lineage")
    row = page.locator("tr").filter(has=page.get_by_text("lineage", exact=True))
    row.get_by_text("Show Markdown").click()
    shown = page.get_by_role("dialog")
    expect(shown).to_contain_text("./run taxi-lineage show nyc_taxi.raw_yellow")
    picture = shown.locator("img")
    expect(picture).to_be_visible()
    drawn = (fresh_copy / ".state" / "lineage" / "pictures" / "nyc_taxi.raw_yellow.svg").read_bytes()
    source = picture.get_attribute("src")
    assert base64.b64decode(source.removeprefix("data:image/svg+xml;base64,")) == drawn
    assert picture.evaluate("image => image.naturalWidth") > 0  # the browser decoded and drew it


def test_an_asset_s_own_lineage_picture_is_outlined_and_fits_a_1400_px_window(fresh_copy, dagster_ui):
    """In a 1,400 px window the Markdown dialog shows the asset's own picture whole, the asset's box outlined."""
    from playwright.sync_api import expect

    from tests.dagster_ui import laptop_screen

    url, page = dagster_ui
    with laptop_screen(page):
        _open(page, f"{url}/assets/nyc_taxi/yellow_rides_hourly_actuals")
        page.get_by_placeholder("Filter metadata keys").fill("lineage")
        page.locator("tr").filter(has=page.get_by_text("lineage", exact=True)).get_by_text("Show Markdown").click()
        shown = page.get_by_role("dialog")
        picture = shown.locator("img")
        expect(picture).to_be_visible()
        svg = base64.b64decode(picture.get_attribute("src").removeprefix("data:image/svg+xml;base64,")).decode()
        outlined = r'class="node dataset focus">\s*<title>\w+</title>\s*<g id="\w+"><a xlink:title="([^"]+)"'
        assert re.findall(outlined, svg) == ["nyc_taxi.yellow_rides_hourly_actuals"]
        assert 0 < picture.evaluate("image => image.naturalWidth") <= 1400
        box, dialog = picture.bounding_box(), shown.bounding_box()
        assert dialog["x"] <= box["x"] and box["x"] + box["width"] <= min(dialog["x"] + dialog["width"], 1400)


def test_the_model_s_page_fits_a_laptop_screen(dagster_ui):
    """At 1,400 px the held-out table shows every column and each chart is whole in its dialog."""
    from tests.dagster_ui import chart_in_its_dialog, laptop_screen, open_latest_materialization, table_columns_shown

    url, page = dagster_ui
    with laptop_screen(page):
        open_latest_materialization(page, url, "forecast_model")
        shown, columns = table_columns_shown(page, "held_out_weeks")
        charts = {key: chart_in_its_dialog(page, key) for key in ("held_out_plot", "backtest_plot")}
        open_latest_materialization(page, url, "nyc_taxi/yellow_rides_hourly_forecast")
        charts["plot"] = chart_in_its_dialog(page, "plot")
    assert shown == columns
    # Whole in its dialog, and drawn near its own width: the dialog's width moves with its content (a scrollbar),
    # so a chart may be drawn a few percent narrower, never shrunk to a thumbnail.
    drawn_whole = [chart["whole"] and chart["drawn_width"] >= 0.9 * chart["natural_width"] for chart in charts.values()]
    assert all(drawn_whole), charts
