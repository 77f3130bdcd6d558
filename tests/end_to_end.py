"""The session's whole-pipeline runs, each in processes of its own (the lane that runs them: :mod:`tests.background`).

- the README's pipeline command, typed into a clean login shell on a fresh copy of the project, then the
  flow by hand there (:mod:`tests.test_first_hour`);
- the ground-truth scenario, which records what really happened (:mod:`tests.test_ground_truth`);
- the forecasting loop through a month (:mod:`tests.test_forecast_loop`);
- the cluster profile's demo on the test months (:mod:`tests.test_cluster_profile`);
- a state folder built by the real jobs, to be moved (:mod:`tests.test_state_folder_moves`);
- writers racing on one table of a PostgreSQL catalog (:mod:`tests.test_concurrent_publication`);
- mypy's strict check of the product's packages (:mod:`tests.test_architecture`);
- ``./run dagster dev`` started and stopped in every way (:mod:`tests.test_dagster_dev_stops`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taxi_core.settings import PROJECT_ROOT
from tests.background import EndToEndRun, Lane
from tests.cluster_rig import cluster_home, profile_environment, taxi_command
from tests.sample_months import TEST_MONTHS, TEST_TRIPS_PER_MONTH

CLEAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
LOGIN_SHELL_SECONDS = 1800
SCENARIO_SECONDS = 1800
CLUSTER_DEMO_SECONDS = 1800
RIG_SECONDS = 1800
# The tests' own state and tool settings must not leak into a process on a state folder of its own.
OWN_PREFIXES = ("TAXI_", "DAGSTER_", "METAFLOW_", "OPENLINEAGE")


def readme_command(number: int) -> str:
    command = subprocess.run(
        ["bash", str(PROJECT_ROOT / ".ci" / "readme_command"), str(number)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert command, f"README.md has no set-up command number {number}"
    return command


def in_login_shell(lane: Lane, command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``command`` as a user types it into a brand-new login shell: no inherited environment."""
    environment = {"HOME": str(Path.home()), "LANG": "C.UTF-8", "CI": "true", "PATH": CLEAN_PATH}
    shell = ["env", "-i", *(f"{key}={value}" for key, value in environment.items()), "bash", "-lc"]
    return lane.run([*shell, f"cd {cwd} && {command}"], timeout=LOGIN_SHELL_SECONDS)


def git(*args: str, cwd: Path) -> str:
    identity = ["-c", "user.name=test", "-c", "user.email=test@127.0.0.1"]
    return subprocess.run(["git", *identity, *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


@dataclass(frozen=True)
class FreshCopyDemo:
    copy: Path  # the project's files as a fresh clone has them (this tree's changes included), under git
    demo: subprocess.CompletedProcess[str]  # the README's pipeline command, run there in a clean login shell


def readme_demo(lane: Lane) -> FreshCopyDemo:
    copy = lane.scratch("clone") / "taxi"
    files = git("ls-files", "--cached", "--others", "--exclude-standard", "-z", cwd=PROJECT_ROOT).split("\0")
    for name in filter(None, files):
        source = PROJECT_ROOT / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    git("init", "-q", cwd=copy)
    git("add", "-A", cwd=copy)
    git("commit", "-q", "-m", "fresh copy", cwd=copy)
    return FreshCopyDemo(copy, in_login_shell(lane, readme_command(1), copy))


def flow_by_hand(lane: Lane) -> subprocess.CompletedProcess[str]:
    """The training flow run by hand in the fresh copy, after its demo."""
    copy = lane.outcome("readme-demo").copy
    return in_login_shell(lane, "./run python flows/train.py run", copy)


def _scenario(lane: Lane, name: str, module: str) -> tuple[Path, Path]:
    """Run the scenario ``module`` (``OUT.json STATE_DIR``) in a state folder of its own; its record and folder."""
    folder = lane.scratch(name)
    out, state = folder / "record.json", folder / "state"
    command = [sys.executable, "-m", module, str(out), str(state)]
    environment = own_state_environment(lane.environment)
    finished = lane.run(command, timeout=SCENARIO_SECONDS, cwd=PROJECT_ROOT, env=environment)
    assert finished.returncode == 0, finished.stderr[-4000:]
    return out, state


def own_state_environment(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` without the session's state and tool settings: a process on a state folder of its own."""
    environment = {key: value for key, value in base.items() if not key.startswith(OWN_PREFIXES)}
    # A new state folder: a class archive would be recorded and hardly used (see tests/conftest.py).
    return environment | {"TAXI_SPARK_CLASS_ARCHIVE": "false"}


def truth_record(lane: Lane) -> dict[str, Any]:
    """The ground-truth scenario's record (:mod:`tests.truth.scenario`)."""
    out, _ = _scenario(lane, "truth", "tests.truth.scenario")
    record: dict[str, Any] = json.loads(out.read_text())
    return record


def loop_record(lane: Lane) -> dict[str, Any]:
    """The forecasting loop's scenario (:mod:`tests.loop_scenario`): its record and its state folder, whose tables
    and lineage the tests read."""
    out, state = _scenario(lane, "loop", "tests.loop_scenario")
    return {"record": json.loads(out.read_text()), "state": str(state)}


@dataclass(frozen=True)
class ClusterDemo:
    home: Path  # the profile's state folder (PostgreSQL can reach it when the tests run as root)
    env: dict[str, str]  # the environment of a command run in it, on free ports
    done: subprocess.CompletedProcess[str]


def cluster_demo(lane: Lane) -> ClusterDemo:
    """`taxi demo --profile cluster` on the test months, at the embedded tests' scale."""
    home = cluster_home()
    env = profile_environment(home, lane.environment)
    command = taxi_command(
        "demo", "--profile", "cluster", "--months", *TEST_MONTHS, "--scale", str(TEST_TRIPS_PER_MONTH)
    )
    done = lane.run(command, timeout=CLUSTER_DEMO_SECONDS, env=env, cwd=PROJECT_ROOT)
    return ClusterDemo(home, env, done)


@dataclass(frozen=True)
class BuiltState:
    folder: Path  # the run's scratch folder
    state: Path  # the state folder the real jobs built, in it
    built: dict[str, Any]  # what the jobs' process read from it (tests.moved_state_rig)


def moved_state(lane: Lane) -> BuiltState:
    """A month ingested by the real jobs into a state folder of its own, for the moves to come."""
    folder = lane.scratch("moves")
    state, out = folder / "original" / "state", folder / "built.json"
    state.parent.mkdir()
    command = [sys.executable, "-m", "tests.moved_state_rig", "build", str(state), str(out)]
    environment = own_state_environment(lane.environment) | {"TAXI_SPARK_DRIVER_MEMORY": "2g"}
    finished = lane.run(command, timeout=RIG_SECONDS, cwd=PROJECT_ROOT, env=environment)
    assert finished.returncode == 0, finished.stderr[-4000:]
    return BuiltState(folder, state, json.loads(out.read_text()))


@dataclass(frozen=True)
class Race:
    home: Path  # the catalog's PostgreSQL data and the table's files
    writers: list[dict[str, Any]]  # each writer's returncode, stdout and stderr


def publication_race(lane: Lane) -> Race:
    """Writers racing on one table (:mod:`tests.publication_race`), in a state folder PostgreSQL can reach."""
    home = cluster_home()
    out = lane.scratch("race") / "writers.json"
    command = [sys.executable, "-m", "tests.publication_race", str(home), str(out)]
    environment = own_state_environment(lane.environment)
    finished = lane.run(command, timeout=RIG_SECONDS, cwd=PROJECT_ROOT, env=environment)
    assert finished.returncode == 0, finished.stderr[-4000:]
    return Race(home, json.loads(out.read_text()))


def dagster_dev_stops(lane: Lane) -> list[dict[str, Any]]:
    """``./run dagster dev`` started and stopped in every way (:mod:`tests.dagster_dev_stops`), on a state folder of
    its own."""
    folder = lane.scratch("dagster-dev-stops")
    out = folder / "outcomes.json"
    environment = own_state_environment(lane.environment) | {"TAXI_STATE_DIR": str(folder / "state")}
    command = [sys.executable, "-m", "tests.dagster_dev_stops", str(out)]
    finished = lane.run(command, timeout=RIG_SECONDS, cwd=PROJECT_ROOT, env=environment)
    assert finished.returncode == 0, finished.stderr[-4000:]
    outcomes: list[dict[str, Any]] = json.loads(out.read_text())
    return outcomes


def type_check(lane: Lane) -> subprocess.CompletedProcess[str]:
    """``mypy`` over the product's packages, as configured in pyproject.toml (strict)."""
    return lane.run([sys.executable, "-m", "mypy"], timeout=RIG_SECONDS, cwd=PROJECT_ROOT, env=lane.environment)


# Two tracks of about the same length (each ~10 min alone on this 2-core machine), in the order the lane is expected
# to finish the runs: the three short ones first (their modules' tests can then run any time), then the cluster's,
# whose module has the most left to do once its run is done.
RUNS = (
    EndToEndRun("type-check", fixture="type_check", work=type_check, track=1),
    EndToEndRun("moved-state", fixture="moves", work=moved_state, track=1),
    EndToEndRun("publication-race", fixture="race", work=publication_race, track=1),
    EndToEndRun("cluster-demo", fixture="cluster_run", work=cluster_demo, track=1),
    EndToEndRun("readme-demo", fixture="fresh_copy_demo", work=readme_demo, track=0),
    EndToEndRun("flow-by-hand", fixture="flow_by_hand", work=flow_by_hand, track=0),
    EndToEndRun("forecast-loop", fixture="loop", work=loop_record, track=1),
    EndToEndRun("dagster-dev-stops", fixture="dev_stops", work=dagster_dev_stops, track=1),
    EndToEndRun("truth-record", fixture="truth_record", work=truth_record, track=0),
)
