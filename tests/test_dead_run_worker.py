"""A Dagster run whose worker is gone ends as failed and its lineage ends with it: the project's own dagster.yaml
(its run launcher and run monitoring), a real code server and run worker, both killed with ``kill -9``, then one
iteration of Dagster's own run-monitoring daemon and one lineage pass."""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from bridge.liveness import lives
from taxi_core.settings import PROJECT_ROOT

HOLD_JOB = Path(__file__).parent / "reuse_project" / "hold_job.py"
STARTED_SECONDS = 120


def wait_for(condition, what: str, seconds: float = STARTED_SECONDS):
    give_up = time.monotonic() + seconds
    while not (found := condition()):
        assert time.monotonic() < give_up, f"{what} did not happen within {seconds} s"
        time.sleep(0.05)
    return found


# What is stopped and how: the processes signalled (worker, its code server, the op's own process), and the word
# Dagster's record of the run's end must carry.
KILLS = {
    "worker, code server and op, SIGKILL (kill -9 of dagster dev)": (("server", "worker", "op"), signal.SIGKILL),
    "the worker alone, SIGKILL": (("worker",), signal.SIGKILL),
    "the worker, SIGTERM": (("worker",), signal.SIGTERM),
    "the worker, SIGINT": (("worker",), signal.SIGINT),
}


@pytest.mark.integration
@pytest.mark.parametrize("kill", sorted(KILLS))
def test_a_run_whose_worker_is_stopped_in_any_way_ends_in_dagster_and_in_lineage(tmp_path, monkeypatch, kill):
    from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import PythonFileTarget
    from dagster._daemon.monitoring.run_monitoring import execute_run_monitoring_iteration

    from forecast_assets.run_launcher import LocalRunLauncher, run_worker
    from tests.reuse_project.hold_job import hold_job
    from tests.reuse_project.shop import naming
    from tests.test_ended_runs import run_results

    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").symlink_to(PROJECT_ROOT / "dagster.yaml")  # as `taxi init` links it
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("HOLD_DIR", str(tmp_path))
    instance = DagsterInstance.get()
    assert isinstance(instance.run_launcher, LocalRunLauncher) and instance.run_monitoring_enabled
    target = PythonFileTarget(str(HOLD_JOB), None, str(HOLD_JOB.parent), "hold")
    with WorkspaceProcessContext(instance, target) as workspace:
        request = workspace.create_request_context()
        (repository,) = request.get_code_location("hold").get_repositories().values()
        remote = repository.get_full_job("hold_job")
        run = instance.create_run_for_job(
            job_def=hold_job, remote_job_origin=remote.get_remote_origin(), job_code_origin=remote.get_python_origin()
        )
        instance.launch_run(run.run_id, request)
        wait_for(lambda: (tmp_path / "holding").exists(), "the op's start")
        pid, _ = wait_for(lambda: run_worker(instance, run.run_id), "the worker's start")
        list(execute_run_monitoring_iteration(workspace, logging.getLogger(__name__)))
        assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.STARTED  # a live worker is left alone

        processes = {"server": psutil.Process(pid).ppid(), "worker": pid, "op": int((tmp_path / "holding").read_text())}
        stopped, sent = KILLS[kill]
        for name in stopped:
            os.kill(processes[name], sent)
        wait_for(lambda: not any(lives(processes[name], time.time()) for name in stopped), "their end")

        def ended():  # as the daemon does, every poll, until the run has ended
            list(execute_run_monitoring_iteration(workspace, logging.getLogger(__name__)))
            return instance.get_run_by_id(run.run_id).is_finished

        wait_for(ended, "the run's end")
        (tmp_path / "go").touch()  # an op's process its worker left behind finishes
        wait_for(lambda: not lives(processes["op"], time.time()), "the op's end")

    status = instance.get_run_by_id(run.run_id).status
    assert status in (DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED), status
    if "server" in stopped:  # nobody but run monitoring was left to say so
        (failure,) = instance.all_logs(run.run_id, of_type=DagsterEventType.RUN_FAILURE)
        assert f"run worker (pid {pid}) is gone" in failure.message

    from bridge.config import LineageBridge, SinkSpec
    from bridge.run.lineage_pass import run_pass

    bridge = LineageBridge(
        naming=naming(tmp_path),
        lineage_dir=tmp_path / "lineage",
        code_location="hold",
        sinks=(SinkSpec("openlineage"), SinkSpec("datahub-lite", {"path": tmp_path / "lite.sqlite"}, "datahub")),
    )
    result = run_pass(bridge, instance, lambda: None, purpose="test")
    assert not result.problems, result.problems
    events = [json.loads(line) for line in (tmp_path / "lineage" / "openlineage_events.jsonl").read_text().splitlines()]
    by_job = {}
    for event in events:
        by_job.setdefault(event["job"]["name"], []).append(event["eventType"])
    assert by_job["hold_job"] == ["START", "ABORT" if status == DagsterRunStatus.CANCELED else "FAIL"], by_job
    assert by_job["hold_job.hold"][0] == "START" and by_job["hold_job.hold"][-1] != "START", by_job  # it ended
    results = run_results(tmp_path)  # DataHub: no process instance left running
    assert results and "RUNNING" not in results.values(), results


def test_a_pid_given_to_a_later_process_is_not_the_worker_that_had_it():
    me = psutil.Process(os.getpid())
    assert lives(me.pid, time.time())
    assert not lives(me.pid, me.create_time() - 60)  # this process started after the worker was seen: not it
