"""A new user's first hour: the README's pipeline command, typed into a clean login shell on a fresh
copy of the project, runs everything; the flow runs by hand; nothing lands outside the state folder;
and Dagster knows which code location every run came from."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from taxi_core.settings import PROJECT_ROOT

pytestmark = pytest.mark.integration

CLEAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ALLOWED_OUTSIDE_STATE = {"!! .state/", "!! .venv/", "!! .env"}
TIMEOUT_SECONDS = 1800


def readme_command(number: int) -> str:
    command = subprocess.run(
        ["bash", str(PROJECT_ROOT / ".ci" / "readme_command"), str(number)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert command, f"README.md has no set-up command number {number}"
    return command


def in_login_shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """``command`` as a user types it into a brand-new login shell: no inherited environment."""
    environment = {"HOME": str(Path.home()), "LANG": "C.UTF-8", "CI": "true", "PATH": CLEAN_PATH}
    return subprocess.run(
        [
            "env",
            "-i",
            *(f"{key}={value}" for key, value in environment.items()),
            "bash",
            "-lc",
            f"cd {cwd} && {command}",
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
    )


def git(*args: str, cwd: Path) -> str:
    identity = ["-c", "user.name=test", "-c", "user.email=test@127.0.0.1"]
    return subprocess.run(["git", *identity, *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def fresh_copy(tmp_path_factory) -> Path:
    """The project's files as a fresh clone has them (this tree's changes included), under git."""
    copy = tmp_path_factory.mktemp("clone") / "taxi"
    files = git("ls-files", "--cached", "--others", "--exclude-standard", "-z", cwd=PROJECT_ROOT).split("\0")
    for name in filter(None, files):
        source = PROJECT_ROOT / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    git("init", "-q", cwd=copy)
    git("add", "-A", cwd=copy)
    git("commit", "-q", "-m", "fresh clone", cwd=copy)
    return copy


@pytest.fixture(scope="module")
def demo(fresh_copy) -> subprocess.CompletedProcess:
    return in_login_shell(readme_command(1), fresh_copy)


@pytest.fixture(scope="module")
def flow_by_hand(fresh_copy, demo) -> subprocess.CompletedProcess:
    return in_login_shell("./run python flows/train.py run", fresh_copy)


def test_the_readme_pipeline_command_runs_everything(demo):
    assert demo.returncode == 0, demo.stdout[-4000:] + demo.stderr[-4000:]
    assert "Demo finished" in demo.stdout
    for stage in ("Ingesting 2024-12", "Ingesting 2025-01", "Training", "Lineage"):
        assert stage in demo.stdout, stage


def test_the_flow_runs_by_hand_from_the_project_root(flow_by_hand):
    assert flow_by_hand.returncode == 0, flow_by_hand.stdout[-4000:] + flow_by_hand.stderr[-4000:]
    assert "Task finished successfully" in flow_by_hand.stdout + flow_by_hand.stderr


def test_nothing_is_written_outside_the_state_folder(fresh_copy, demo, flow_by_hand):
    status = set(git("status", "--porcelain", "--ignored", cwd=fresh_copy).splitlines())
    assert status <= ALLOWED_OUTSIDE_STATE, sorted(status - ALLOWED_OUTSIDE_STATE)


def test_dagster_knows_the_code_location_of_every_demo_run(fresh_copy, demo, monkeypatch):
    """The job pages and the Overview timeline list runs by the code location's label."""
    from dagster import DagsterInstance, RunsFilter

    monkeypatch.setenv("DAGSTER_HOME", str(fresh_copy / ".state" / "dagster"))
    with DagsterInstance.get() as instance:
        runs = instance.get_runs()
        assert sorted(run.job_name for run in runs) == [
            "monthly_ingestion",
            "monthly_ingestion",
            "train_forecast_model",
        ]
        for run in runs:
            assert run.remote_job_origin is not None, run.run_id
            assert run.remote_job_origin.location_name == "taxi_demand"
        for job_name, count in (("monthly_ingestion", 2), ("train_forecast_model", 1)):
            job_page = RunsFilter(job_name=job_name, tags={".dagster/repository": "__repository__@taxi_demand"})
            assert len(instance.get_runs(job_page)) == count
