"""Shared fixtures: an isolated state folder, a sample source served from loopback, one SparkSession."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

# The state folder must be chosen before any project module reads it.
_INHERITED_STATE = os.environ.get("TAXI_STATE_DIR")
_STATE = Path(tempfile.mkdtemp(prefix="taxi-tests-"))
os.environ["TAXI_STATE_DIR"] = str(_STATE)
# As `./run demo` sets it: the sample source below writes the true rates there, the flow's noise floor.
os.environ["TAXI_TRUE_RATES"] = str(_STATE / "sample_source" / "truth")
os.environ.setdefault("TAXI_SPARK_DRIVER_MEMORY", "2g")
# Each session's state folder is new, so a class archive would be recorded (a slower JVM) and never used: the
# archive's own tests, and the README's commands run in a clean login shell, use it.
os.environ.setdefault("TAXI_SPARK_CLASS_ARCHIVE", "false")
# The tests run their lineage passes themselves, at the moment they check; the hook's own tests turn it on.
os.environ.setdefault("TAXI_LINEAGE_AFTER_TRAINING", "false")

from taxi_core.settings import Settings, load_settings  # noqa: E402
from taxi_core.tool_env import apply_tool_environment, tool_environment  # noqa: E402

# An xdist worker inherits its controller's environment, and with it the tool folders (Metaflow's store, its
# cards) the controller put in its own state folder: each process keeps to its own.
for _key in tool_environment(load_settings()):
    if _INHERITED_STATE and os.environ.get(_key, "").startswith(_INHERITED_STATE):
        del os.environ[_key]
# As every entry point does: the tools read their configuration when first imported.
apply_tool_environment(load_settings())

from tests.loopback import serve_folder  # noqa: E402
from tests.pipeline import Pipeline  # noqa: E402
from tests.sample_months import TEST_MONTHS, TEST_TRIPS_PER_MONTH, WEATHER_VERSION_CANDIDATES  # noqa: E402


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_STATE, ignore_errors=True)


def _in_xdist_worker() -> bool:
    return "PYTEST_XDIST_WORKER" in os.environ


def pytest_collection_modifyitems(session, config, items):
    """The modules that read the background lane's runs go last, in the lane's order (:mod:`tests.background`)."""
    from tests.background import lane_order
    from tests.end_to_end import RUNS

    if _in_xdist_worker():  # a worker cannot know which tests it will be given: each run is done when asked
        return
    order = lane_order(RUNS, items)
    items.sort(key=lambda item: order[item.path])  # stable: every other order is kept


_LANE = pytest.StashKey["Lane"]()


@pytest.fixture(scope="session", autouse=True)
def end_to_end(request, tmp_path_factory):
    """The background lane (:mod:`tests.background`), working from the first test on through the whole-pipeline
    runs the collected tests need; stopped (the run in flight interrupted) when the session ends."""
    from tests.background import Lane, needed_by
    from tests.end_to_end import RUNS

    lane = Lane(RUNS, tmp_path_factory.mktemp)
    if not _in_xdist_worker():
        lane.start(needed_by(RUNS, request.session.items))
    request.config.stash[_LANE] = lane
    yield lane
    lane.stop()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from tests.background import report

    lane = config.stash.get(_LANE, None)
    if lane is not None and lane.seconds:
        terminalreporter.section(f"whole-pipeline runs (tests/end_to_end.py), session pid {os.getpid()}")
        for line in report(lane):
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def state_dir() -> Path:
    return _STATE


@pytest.fixture(scope="session")
def settings() -> Settings:
    """The tests' settings: the environment above, read once."""
    return load_settings()


@pytest.fixture(scope="session")
def sample_source(tmp_path_factory):
    from taxi_demo.sample_source import SampleSource

    # Where `taxi init` puts it: the flow finds the true rates (its noise floor) there.
    source = SampleSource(load_settings().path("sample_source"), trips_per_month=TEST_TRIPS_PER_MONTH)
    source.write_months(TEST_MONTHS)
    return source


@pytest.fixture(scope="session")
def sample_server(sample_source):
    """The sample source over real HTTP on 127.0.0.1, as the TLC and NOAA servers would serve it."""
    with serve_folder(sample_source.root) as base_url:
        yield base_url


@pytest.fixture(scope="session")
def pipeline(sample_server):
    """A Dagster instance on which both sample months were ingested by the real job."""
    from dagster import instance_for_test

    with instance_for_test() as instance:
        pipeline = Pipeline(instance, sample_server, load_settings())
        # The zone lookup first, as `./run demo` does: the forecast names its zones from it.
        assert pipeline.run_job("reference_data").success
        pipeline.first_runs = {month: pipeline.run(f"{month}-01") for month in TEST_MONTHS}
        yield pipeline


@pytest.fixture(scope="session")
def by_hand_run(pipeline):
    """The training flow run as a person runs it: no Dagster parent, weather off."""
    from flows.launch import run_training

    return run_training(show_output=False)


@pytest.fixture(scope="session")
def dagster_run(pipeline, by_hand_run):
    """The training flow launched by Dagster's training job, with weather on and only weather models to learn (and
    the baseline): the version whose lineage must lead to the weather."""
    from metaflow import Run

    job = pipeline.definitions().resolve_job_def("train_forecast_model")
    config = {"ops": {"run_training_flow": {"config": {"use_weather": True, "candidates": WEATHER_VERSION_CANDIDATES}}}}
    result = job.execute_in_process(instance=pipeline.instance, run_config=config, raise_on_error=False)
    assert result.success, [e.step_failure_data.error.message for e in result.get_step_failure_events()]
    return result, Run(pipeline.latest_metadata("forecast_model")["model_version"].value)


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A lineage folder of its own, in a state folder of its own."""
    monkeypatch.setenv("TAXI_STATE_DIR", str(tmp_path / "state"))
    lineage = tmp_path / "lineage"
    lineage.mkdir()
    return lineage


@pytest.fixture
def s3(monkeypatch):
    """A real S3 API on 127.0.0.1 with a bucket, and credentials only it accepts (:mod:`tests.loopback_s3`)."""
    from tests.loopback_s3 import CREDENTIALS, s3_bucket

    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    with s3_bucket() as store:
        yield store


@pytest.fixture
def openlineage_env(monkeypatch):
    """The client turns OPENLINEAGE_URL into OPENLINEAGE__TRANSPORT__* variables of the process: undo them too."""
    before = {key for key in os.environ if key.startswith("OPENLINEAGE")}
    yield monkeypatch
    for key in {key for key in os.environ if key.startswith("OPENLINEAGE")} - before:
        del os.environ[key]
