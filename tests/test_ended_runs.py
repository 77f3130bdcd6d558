"""Every way a Metaflow run can stop is an end in the lineage: a real flow killed as a person or the system kills it
(the whole flow, one task, Ctrl-C, SIGTERM), then one pass; checked against what was killed and what Metaflow
itself recorded, in OpenLineage, DataHub Lite and ``status``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bridge.config import LineageBridge
from bridge.liveness import ProcessMark, mark
from bridge.sources.metaflow import NO_PROCESS_GRACE_SECONDS, SILENT_SECONDS, ended_because
from bridge.translate.metaflow import FlowRunRecord, TaskRecord
from tests.reuse_project.shop import shop_bridge

FLOW_FILE = Path(__file__).parent / "reuse_project" / "hold_flow.py"
FLOW = "HoldFlow"
HELD_SECONDS = 120  # how long a flow may take to reach its held step on a busy machine
RUN_ID = "1795000000000001"  # a Metaflow run id no process of this machine names


def bridge_at(root: Path) -> LineageBridge:
    """The reuse example's bridge (OpenLineage and DataHub Lite in ``root``), following this flow."""
    return replace(shop_bridge(root), flows=(FLOW,))


def one_pass(bridge: LineageBridge):
    from dagster import DagsterInstance

    from bridge.run.lineage_pass import run_pass

    with DagsterInstance.ephemeral() as instance:
        return run_pass(bridge, instance, lambda: None, purpose="test")


def held_run(folder: Path) -> tuple[subprocess.Popen, dict]:
    """The flow started in a process group of its own, once its middle step holds: the process and what it held."""
    folder.mkdir(parents=True, exist_ok=True)
    flow = subprocess.Popen(
        [sys.executable, str(FLOW_FILE), "run"],
        env=os.environ | {"HOLD_DIR": str(folder)},
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    give_up = time.monotonic() + HELD_SECONDS
    while not (folder / "held.json").exists():
        assert flow.poll() is None, f"the flow ended before its held step ({flow.returncode})"
        assert time.monotonic() < give_up, "the flow never reached its held step"
        time.sleep(0.05)
    return flow, json.loads((folder / "held.json").read_text())


def flow_events(root: Path, run_id: str) -> list[dict]:
    """The events the OpenLineage target got for the flow run ``run_id`` and its tasks, in order."""
    events = [json.loads(line) for line in (root / "lineage" / "openlineage_events.jsonl").read_text().splitlines()]
    pathspec = f"{FLOW}/{run_id}"
    return [e for e in events if e["run"]["facets"].get("orchestratorRun", {}).get("runId") == pathspec]


def run_results(root: Path) -> dict[str, str]:
    """DataHub Lite's latest run result per process instance (its latest run event's ``result.type``)."""
    import sqlite3

    with sqlite3.connect(root / "lite.sqlite") as lite:
        rows = lite.execute(
            "SELECT urn, metadata FROM metadata_aspect_v2 WHERE aspect_name = 'dataProcessInstanceRunEvent' "
            "AND version = 0"  # DataHub's latest version of an aspect
        ).fetchall()
    return {urn: json.loads(metadata).get("result", {}).get("type", "RUNNING") for urn, metadata in rows}


def lives(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_until_gone(*pids: int, seconds: float = 60) -> None:
    give_up = time.monotonic() + seconds
    while any(lives(pid) for pid in pids):
        assert time.monotonic() < give_up, f"still running: {pids}"
        time.sleep(0.05)


KILLS = {
    # what is stopped, how: the process(es) signalled
    "the whole flow, SIGKILL": lambda flow, held: os.killpg(flow.pid, signal.SIGKILL),
    "its task, SIGKILL": lambda flow, held: os.kill(held["task_pid"], signal.SIGKILL),
    "its task, SIGTERM": lambda flow, held: os.kill(held["task_pid"], signal.SIGTERM),
    "its task, SIGINT": lambda flow, held: os.kill(held["task_pid"], signal.SIGINT),
    "the flow's process alone, SIGKILL (its task left running)": lambda flow, held: os.kill(flow.pid, signal.SIGKILL),
    "the flow, Ctrl-C (SIGINT to its group)": lambda flow, held: os.killpg(flow.pid, signal.SIGINT),
    "the flow, SIGTERM": lambda flow, held: os.kill(flow.pid, signal.SIGTERM),
}


@pytest.mark.integration
@pytest.mark.parametrize("kill", sorted(KILLS))
def test_a_flow_killed_in_any_way_ends_in_openlineage_datahub_and_status(tmp_path, kill, capsys):
    from bridge.cli.commands import lineage_status

    bridge = bridge_at(tmp_path)
    flow, held = held_run(tmp_path / "hold")
    running = one_pass(bridge)
    assert running.queued["metaflow"] > 0
    KILLS[kill](flow, held)
    flow.wait(timeout=60)
    (tmp_path / "hold" / "go").touch()  # a task its flow's process left behind finishes its step, as it would
    wait_until_gone(held["task_pid"], held["runtime_pid"])  # the record of what was stopped: nothing of it lives
    one_pass(bridge)
    events = flow_events(tmp_path, held["run_id"])
    runs = {}
    for event in events:
        runs.setdefault(event["run"]["runId"], []).append(event["eventType"])
    flow_run = [e for e in events if _is_flow(e)]
    assert flow_run and flow_run[-1]["eventType"] in ("ABORT", "FAIL"), [e["eventType"] for e in flow_run]
    assert all(types[-1] != "START" for types in runs.values()), runs  # every task that started has ended
    assert "RUNNING" not in run_results(tmp_path).values() and run_results(tmp_path)
    lineage_status(bridge)
    said = capsys.readouterr().out
    if flow_run[-1]["eventType"] == "ABORT":
        assert f"{FLOW}/{held['run_id']}" in said and "is gone" in said, said


def _record(started: datetime, tasks: int = 1) -> FlowRunRecord:
    task = TaskRecord(f"{FLOW}/1/start/1", "start", started, None, "RUNNING")
    return FlowRunRecord(FLOW, f"{FLOW}/1", started, None, "RUNNING", {}, [task] * tasks)


def test_a_run_is_ended_only_once_its_process_is_gone_or_its_machine_restarted():
    started = datetime.now(UTC) - timedelta(hours=2)
    record, now = _record(started), time.time()
    alive = mark(os.getpid())
    assert ended_because(record, alive, RUN_ID, now) is None
    assert "is gone" in ended_because(record, replace(alive, started=alive.started - 60), RUN_ID, now)  # pid reused
    assert "restarted" in ended_because(record, replace(alive, boot="an earlier boot"), RUN_ID, now)
    elsewhere = replace(alive, host="another-machine")
    assert ended_because(record, elsewhere, RUN_ID, now) is None  # cannot be seen from here: two hours is not silence
    assert "another machine" in ended_because(record, elsewhere, RUN_ID, started.timestamp() + SILENT_SECONDS + 1)


def test_a_run_stopped_before_its_start_step_finished_ends_after_the_grace_unless_a_process_of_it_lives():
    started = datetime.now(UTC)
    record = _record(started)
    assert ended_because(record, None, "123456789", started.timestamp() + NO_PROCESS_GRACE_SECONDS - 1) is None
    later = started.timestamp() + NO_PROCESS_GRACE_SECONDS + 1
    assert "no process of it" in ended_because(record, None, "123456789", later)
    with subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()", "123456789"], stdin=subprocess.PIPE):
        assert ended_because(record, None, "123456789", later) is None  # a process of the run lives: it may run on
    assert ProcessMark.from_json(None) is None and ProcessMark.from_json(mark(os.getpid()).to_json()) is not None


@pytest.mark.integration
@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGINT], ids=lambda sent: sent.name)
def test_a_flow_stopped_by_sigterm_or_sigint_to_its_process_alone_leaves_no_task_behind(tmp_path, sent):
    flow, held = held_run(tmp_path / "hold")
    os.kill(flow.pid, sent)  # its process only, as `kill` or a supervisor sends it; not its group
    flow.wait(timeout=60)
    wait_until_gone(held["task_pid"], seconds=30)  # not left holding: the flow stopped it on its way out


@pytest.mark.integration
def test_a_run_whose_flow_process_died_stays_open_while_its_task_works_and_its_finished_step_stays_complete(tmp_path):
    bridge = bridge_at(tmp_path)
    flow, held = held_run(tmp_path / "hold")
    os.kill(flow.pid, signal.SIGKILL)  # Metaflow's runtime alone: its task holds on, as an orphan
    flow.wait(timeout=60)
    assert lives(held["task_pid"])
    one_pass(bridge)
    assert [e["eventType"] for e in flow_events(tmp_path, held["run_id"]) if _is_flow(e)] == ["START"]
    (tmp_path / "hold" / "go").touch()
    wait_until_gone(held["task_pid"])
    one_pass(bridge)
    events = flow_events(tmp_path, held["run_id"])
    assert [e["eventType"] for e in events if _is_flow(e)] == ["START", "ABORT"]
    hold = [e["eventType"] for e in events if e["job"]["name"].endswith(".hold")]
    assert hold == ["START", "COMPLETE"]  # what the task recorded when it finished: its own end
    assert not any(e["job"]["name"].endswith(".end") for e in events)  # no step ran after it


def _is_flow(event: dict) -> bool:
    return "task" not in event["run"]["facets"]["orchestratorRun"]
