"""The cluster profile: the same pipeline on a Spark standalone cluster and PostgreSQL, started on 127.0.0.1.

One state folder for the module: the demo runs there first (as a user runs it), then each test starts the
profile's servers again on the same data and stops them when it ends.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from forecast_assets.assets.table_metadata import ROW_COUNT
from forecast_assets.lakehouse.commits import LOST_COMMIT_RACE
from forecast_assets.lakehouse.snapshots import CHERRY_PICK_SOURCE
from taxi_core.catalog import CatalogConfig, open_catalog
from taxi_core.settings import PROJECT_ROOT, load_settings
from taxi_core.tool_env import tool_environment
from taxi_demo.local_cluster import profile
from taxi_demo.local_cluster.services import port_is_free
from tests.cluster_rig import (
    OWN_PREFIXES,
    processes_mentioning,
    settings_in,
    taxi_command,
)
from tests.end_to_end import ClusterDemo
from tests.sample_months import TEST_MONTHS, TEST_TRIPS_PER_MONTH

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

TABLES = ("nyc_taxi/raw_yellow", "nyc_taxi/raw_weather", "nyc_taxi/yellow_rides_hourly_actuals")
CONCURRENT_MONTHS = ["2025-02", "2025-03"]
# Big enough that a stage's tasks run for seconds, so a worker can be killed in the middle of one.
KILLED_MONTH, KILLED_MONTH_TRIPS = "2025-04", 1_500_000
ICEBERG_RETRY = "Retrying task after failure"
TABLE_ACTUALS = "yellow_rides_hourly_actuals"
TABLE_STEPS = ("nyc_taxi__raw_yellow", "nyc_taxi__raw_weather", f"nyc_taxi__{TABLE_ACTUALS}")
PRINTED_ROWS = re.compile(
    r"^\s+(?P<table>nyc_taxi/\S+)\s+rows=\s*(?P<rows>\d+).*?(?:\[(?P<partition>[\d-]+)\])?$", re.MULTILINE
)
RUN_LINE = re.compile(r"^Run \S+ \((?P<label>[^)]+)\): (?P<state>\w+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def cluster_run(end_to_end):
    """`taxi demo --profile cluster` on the test months, at the embedded tests' scale, in the module's state folder
    (run in the background lane: :mod:`tests.end_to_end`)."""
    outcome: ClusterDemo = end_to_end.outcome("cluster-demo")
    yield outcome
    shutil.rmtree(outcome.home, ignore_errors=True)


@pytest.fixture(scope="module")
def home(cluster_run) -> Path:
    return cluster_run.home


@pytest.fixture(scope="module")
def env(cluster_run) -> dict[str, str]:
    return cluster_run.env


@pytest.fixture(scope="module")
def cluster_demo(cluster_run) -> subprocess.CompletedProcess:
    return cluster_run.done


@pytest.fixture
def running(env, cluster_demo, monkeypatch):
    """The profile's servers started again on the demo's data; this process pointed at them as a command would be."""
    assert cluster_demo.returncode == 0, cluster_demo.stdout[-3000:] + cluster_demo.stderr[-3000:]
    cluster = profile.start(settings_in(env))
    try:
        for key in [key for key in os.environ if key.startswith(OWN_PREFIXES)]:
            monkeypatch.delenv(key)
        for key, value in (env | cluster.environment).items():
            monkeypatch.setenv(key, value)
        settings = load_settings()
        for key, value in tool_environment(settings).items():
            monkeypatch.setenv(key, value)
        yield cluster, settings
    finally:
        cluster.stop()


def printed_rows(stdout: str) -> dict[tuple[str, str], int]:
    """``(run label, table) -> rows`` from the demo's run summaries (a run of a range: each line's partition)."""
    rows = {}
    runs = list(RUN_LINE.finditer(stdout))
    for run, following in zip(runs, [*runs[1:], None], strict=True):
        block = stdout[run.end() : following.start() if following else len(stdout)]
        for line in PRINTED_ROWS.finditer(block):
            rows[(line["partition"] or run["label"], line["table"])] = int(line["rows"])
    return rows


def embedded_rows(pipeline, month: str) -> dict[str, int]:
    result = pipeline.first_runs[month]
    rows = {}
    for event in result.get_asset_materialization_events():
        materialization = event.event_specific_data.materialization
        if ROW_COUNT in materialization.metadata:
            rows[materialization.asset_key.to_user_string()] = materialization.metadata[ROW_COUNT].value
    return rows


def test_the_demo_runs_on_the_cluster_with_the_embedded_row_counts(cluster_demo, env, home, pipeline):
    assert cluster_demo.returncode == 0, cluster_demo.stdout[-3000:] + cluster_demo.stderr[-3000:]
    assert "Demo finished" in cluster_demo.stdout
    assert f"spark://127.0.0.1:{env['TAXI_CLUSTER_SPARK_PORT']}" in cluster_demo.stdout
    # Both months in one run on the cluster: one application on the workers, each month published on its own.
    one_run = f"Ingesting {TEST_MONTHS[0]} to {TEST_MONTHS[-1]} ({len(TEST_MONTHS)} months, one run)"
    assert one_run in cluster_demo.stdout
    rows = printed_rows(cluster_demo.stdout)
    for month in TEST_MONTHS:
        embedded = embedded_rows(pipeline, month)
        assert {table: rows[(f"{month}-01", table)] for table in TABLES} == {t: embedded[t] for t in TABLES}, month
    assert rows[("train_forecast_model", "nyc_taxi/yellow_rides_hourly_forecast")] > 0

    spark = home / "cluster" / "spark"
    # The Spark jobs ran on the workers: each application left its executors' folders there.
    assert list(spark.glob("worker-*/work/app-*/*/stderr")), "no executor ran on the cluster's workers"
    assert (home / "cluster" / "postgres" / "data" / "PG_VERSION").exists()
    # It stopped what it started, and kept all its state in its own folder.
    assert processes_mentioning(str(home)) == []
    for port in ("TAXI_CLUSTER_SPARK_PORT", "TAXI_CLUSTER_SPARK_UI_PORT", "TAXI_CLUSTER_POSTGRES_PORT"):
        assert port_is_free(int(env[port])), f"{port} {env[port]} still taken after the demo"
    assert [path.name for path in home.iterdir()] == ["cluster"]
    # The flow ran with the profile's Metaflow root, not the embedded one.
    assert (home / "cluster" / "metaflow" / ".metaflow" / "TrainForecastModelFlow").is_dir()


def _stop_sensors(instance, workspace) -> None:
    """Only the runs the test submits: the new-months sensor would start ingestions of its own."""
    from taxi_demo.pipeline_run import LOCATION_NAME, REPOSITORY_NAME

    repository = workspace.get_code_location(LOCATION_NAME).get_repository(REPOSITORY_NAME)
    for sensor in repository.get_sensors():
        instance.stop_sensor(sensor.get_remote_origin_id(), sensor.selector_id, sensor)


def _run_daemon(log: Path) -> subprocess.Popen:
    daemon = Path(sys.executable).with_name("dagster-daemon")
    with log.open("ab") as output:
        return subprocess.Popen(
            [str(daemon), "run", "-w", str(PROJECT_ROOT / "workspace.yaml")],
            cwd=PROJECT_ROOT,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _most_at_once(instance, run_ids: list[str], daemon: subprocess.Popen, log: Path, seconds: float) -> int:
    """Wait for every run to finish; how many were running at the same time, at most."""
    from dagster import DagsterRunStatus

    deadline, most = time.monotonic() + seconds, 0
    while True:
        runs = [instance.get_run_by_id(run_id) for run_id in run_ids]
        most = max(most, sum(run.status == DagsterRunStatus.STARTED for run in runs))
        if all(run.is_finished for run in runs):
            return most
        assert daemon.poll() is None, f"the Dagster daemon exited; its log ends:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"runs unfinished after {seconds:.0f} s: {[r.status for r in runs]}"
        time.sleep(0.5)


def _overlap(instance, run_ids: list[str], step: str) -> float:
    """Seconds during which ``step`` ran in both runs at once."""
    spans = []
    for run_id in run_ids:
        stats = {stat.step_key: stat for stat in instance.get_run_step_stats(run_id)}
        spans.append((stats[step].start_time, stats[step].end_time))
    return max(0.0, min(end for _, end in spans) - max(start for start, _ in spans))


def _table(settings, name: str):
    return open_catalog(CatalogConfig.from_settings(settings)).load_table(f"nyc_taxi.{name}")


def _rows_per_month(settings) -> dict[str, int]:
    months = _table(settings, "raw_yellow").scan(selected_fields=("source_month",)).to_arrow()["source_month"]
    return {row["values"]: row["counts"] for row in pc.value_counts(months).to_pylist()}


def _jobs_seen(events_file: Path) -> collections.Counter:
    """Distinct OpenLineage runs per job name (runs of whole jobs: Dagster jobs and Metaflow flows)."""
    runs = collections.defaultdict(set)
    for line in events_file.read_text().splitlines():
        event = json.loads(line)
        runs[event["job"]["name"]].add(event["run"]["runId"])
    return collections.Counter({job: len(ids) for job, ids in runs.items()})


def test_two_ingestions_and_a_training_run_at_once_share_one_catalog(running, home):
    from dagster import DagsterEventType, DagsterInstance

    from taxi_demo import pipeline_run
    from taxi_demo.cli import init
    from taxi_demo.sample_source import SampleSource

    cluster, settings = running
    source = SampleSource(settings.path("sample_source"), trips_per_month=TEST_TRIPS_PER_MONTH)
    # As `./run demo --months` would: the new months written, and the partitions extended to them.
    init(settings, [*TEST_MONTHS, *CONCURRENT_MONTHS], TEST_TRIPS_PER_MONTH, cluster.environment)
    events_file = settings.state_dir / "lineage" / "openlineage_events.jsonl"
    seen_before = _jobs_seen(events_file)
    daemon_log = settings.state_dir / "daemon.log"

    with DagsterInstance.get() as instance, pipeline_run.code_location(instance) as workspace:
        _stop_sensors(instance, workspace)
        run_ids = [
            pipeline_run.submit(instance, workspace, pipeline_run.INGESTION_JOB, tags={"dagster/partition": f"{m}-01"})
            for m in CONCURRENT_MONTHS
        ]
        # The claim is the catalog shared by three runs at once, not the model: the training learns one candidate.
        one_candidate = {"ops": {"run_training_flow": {"config": {"candidates": "seasonal_naive"}}}}
        run_ids.append(pipeline_run.submit(instance, workspace, pipeline_run.TRAINING_JOB, run_config=one_candidate))
        daemon = _run_daemon(daemon_log)
        try:
            most_at_once = _most_at_once(instance, run_ids, daemon, daemon_log, seconds=1200)
        finally:
            os.killpg(daemon.pid, signal.SIGINT)
            daemon.wait(60)
        outcomes = [pipeline_run.wait_for(instance, run_id) for run_id in run_ids]
        checks = [
            entry.dagster_event.event_specific_data
            for run_id in run_ids
            for entry in instance.all_logs(run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION)
        ]
        overlaps = {step: _overlap(instance, run_ids[:2], step) for step in TABLE_STEPS}
        branch_retries = sum(
            LOST_COMMIT_RACE in entry.user_message for run_id in run_ids for entry in instance.all_logs(run_id)
        )

    assert [outcome.success for outcome in outcomes] == [True, True, True], [o.problems for o in outcomes]
    assert most_at_once == 3, "the run queue did not run the three at once"
    assert checks and all(check.passed for check in checks), [c.check_name for c in checks if not c.passed]
    assert any(seconds > 0 for seconds in overlaps.values()), (
        f"the two ingestions never wrote a table at once: {overlaps}"
    )

    # No month lost or doubled: each month's rows are its file's rows, once.
    expected = {month: pq.read_metadata(source.trip_path(month)).num_rows for month in source_months(source)}
    assert _rows_per_month(settings) == expected
    actuals = _table(settings, "yellow_rides_hourly_actuals").scan().to_arrow()
    keys = actuals.group_by(["pickup_hour", "pulocationid"]).aggregate([([], "count_all")])
    assert keys.num_rows == actuals.num_rows, "an hour of a zone appears twice in the actuals"
    published_months = {f"{hour:%Y-%m}" for hour in pc.unique(actuals["pickup_hour"]).to_pylist()}
    assert published_months == set(expected)

    spark_logs = [
        log for run_id in run_ids[:2] for log in (settings.state_dir / "dagster" / "storage" / run_id).rglob("*.err")
    ]
    assert spark_logs, "the ingestion runs left no stderr (where Iceberg logs its commit retries)"
    iceberg_retries = sum(log.read_text(errors="replace").count(ICEBERG_RETRY) for log in spark_logs)
    snapshots = {name: _table(settings, name).snapshots() for name in ("raw_yellow", "raw_weather", TABLE_ACTUALS)}
    cherry_picks = {
        name: sum(CHERRY_PICK_SOURCE in (snapshot.summary.additional_properties or {}) for snapshot in history)
        for name, history in snapshots.items()
    }
    print(
        f"\nconcurrent runs: {most_at_once} at once; seconds the two ingestions wrote the same table at once "
        f"{ {step: round(seconds, 1) for step, seconds in overlaps.items()} }; snapshots "
        f"{ {name: len(history) for name, history in snapshots.items()} }; publications cherry-picked because the "
        f"other month was published first {cherry_picks}; commits retried after another writer's commit: "
        f"{iceberg_retries} data commits (by Iceberg), {branch_retries} branch operations (by the project); "
        f"rows per month {expected}"
    )

    # The lineage bridge sees all three runs, and the Metaflow run the training run started.
    done = subprocess.run(
        [sys.executable, "-m", "forecast_assets.lineage_cli"], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    new = _jobs_seen(events_file) - seen_before
    assert new["monthly_ingestion"] == 2, new
    assert new["train_forecast_model"] == 1, new
    assert new["TrainForecastModelFlow"] == 1, new


def source_months(source) -> list[str]:
    return sorted(path.stem.rsplit("_", 1)[-1] for path in source.trip_path(TEST_MONTHS[0]).parent.glob("*.parquet"))


def _executor_logs(cluster, worker) -> set[Path]:
    return set((worker_dir(cluster, worker) / "work").glob("app-*/*/stderr"))


def _kill_a_worker_mid_stage(cluster, stop: threading.Event, killed: list) -> None:
    """Kill the worker whose executor (of an application started after this began) is running a task, once."""
    earlier = {log for worker in cluster.spark.running_workers for log in _executor_logs(cluster, worker)}
    while not stop.is_set():
        for worker in cluster.spark.busy_workers():
            for stderr in _executor_logs(cluster, worker) - earlier:
                text = stderr.read_text(errors="replace")
                running = set(re.findall(r"Running task \S+ in stage \S+ \(TID (\d+)\)", text))
                finished = set(re.findall(r"Finished task \S+ in stage \S+ \(TID (\d+)\)", text))
                if len(finished) >= 2 and running - finished:
                    worker.service.kill()
                    killed.append((worker, stderr.parent.parent.name, sorted(running - finished)))
                    return
        time.sleep(0.05)


def _extend_partitions_to(settings, month: str) -> None:
    """As `./run demo --months` leaves the settings file: the partitions reach the newest month written."""
    written = settings.settings_file.read_text().splitlines()
    lines = [line for line in written if not line.startswith("TAXI_LAST_MONTH=")]
    settings.settings_file.write_text("\n".join([*lines, f"TAXI_LAST_MONTH={month}"]) + "\n")


def worker_dir(cluster, worker) -> Path:
    return cluster.spark.folder / f"worker-{cluster.spark.running_workers.index(worker) + 1}"


def test_a_worker_killed_in_the_middle_of_a_stage(running):
    from dagster import DagsterInstance

    from taxi_demo import pipeline_run
    from taxi_demo.sample_source import SampleSource

    cluster, settings = running
    source = SampleSource(settings.path("sample_source"), trips_per_month=KILLED_MONTH_TRIPS)
    source.write_month(KILLED_MONTH)  # a larger month beside the others (write_months would rewrite them at this scale)
    _extend_partitions_to(settings, KILLED_MONTH)
    before = _rows_per_month(settings)
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_a_worker_mid_stage, args=(cluster, stop, killed), daemon=True)

    with DagsterInstance.get() as instance, pipeline_run.code_location(instance) as workspace:
        killer.start()
        run_id = pipeline_run.launch(
            instance, workspace, pipeline_run.INGESTION_JOB, tags={"dagster/partition": f"{KILLED_MONTH}-01"}
        )
        outcome = pipeline_run.wait_for(instance, run_id)
        stop.set()
        killer.join()

    assert killed, "no worker was running a task while the run lasted"
    victim, app, tasks = killed[0]
    survivor = next(worker for worker in cluster.spark.running_workers if worker is not victim)
    print(f"\nkilled {victim.service.name} (pid {victim.service.pid}) while tasks {tasks} of {app} ran")
    assert cluster.spark.status()["aliveworkers"] == 1
    if outcome.success:
        # The job finished on the surviving worker, with the month written once and nothing else touched.
        assert list((worker_dir(cluster, survivor) / "work" / app).iterdir()), "no executor on the surviving worker"
        rows = _rows_per_month(settings)
        assert rows[KILLED_MONTH] == pq.read_metadata(source.trip_path(KILLED_MONTH)).num_rows
        assert {month: count for month, count in rows.items() if month != KILLED_MONTH} == before
    else:  # a clear failure, and the published tables as they were
        assert any("FAILED" in problem for problem in outcome.problems), outcome.problems
        assert _rows_per_month(settings) == before


def test_taxi_cluster_keeps_the_servers_up_until_ctrl_c(env, home):
    command = subprocess.Popen(
        taxi_command("cluster"), env=env, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    said = []
    for line in command.stdout:
        said.append(line)
        if "Ctrl-C stops the servers" in line:
            break
    try:
        assert command.poll() is None, "".join(said)
        exported = dict(line.split("=", 1) for line in (home / "cluster" / "cluster.env").read_text().splitlines())
        assert exported["TAXI_SPARK_MASTER"] == f"spark://127.0.0.1:{env['TAXI_CLUSTER_SPARK_PORT']}"
        assert exported["DAGSTER_HOME"] == str(home / "cluster" / "dagster")
        for port in ("TAXI_CLUSTER_SPARK_PORT", "TAXI_CLUSTER_POSTGRES_PORT"):
            assert not port_is_free(int(env[port])), f"nothing listens on {port} {env[port]}"
    finally:
        command.send_signal(signal.SIGINT)
        assert command.wait(60) == 0
    for port in ("TAXI_CLUSTER_SPARK_PORT", "TAXI_CLUSTER_SPARK_UI_PORT", "TAXI_CLUSTER_POSTGRES_PORT"):
        assert port_is_free(int(env[port])), f"{port} {env[port]} still taken after Ctrl-C"
