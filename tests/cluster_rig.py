"""A state folder for the cluster profile, the environment of a command run in it, and what its servers hold."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from subprocess import PIPE

from taxi_core.settings import PROJECT_ROOT, Settings, load_settings
from taxi_demo.local_cluster.services import free_port

# The test process's own state and tool settings (conftest) must not leak into the profile's commands.
OWN_PREFIXES = ("TAXI_", "METAFLOW_", "DAGSTER_", "OPENLINEAGE", "MPLCONFIGDIR")


def cluster_home() -> Path:
    """A state folder PostgreSQL can reach when the tests run as root (it then runs as ``postgres``)."""
    home = Path(tempfile.mkdtemp(prefix="taxi-cluster-"))
    home.chmod(0o755)
    return home


def profile_environment(home: Path) -> dict[str, str]:
    """A clean environment for the profile in ``home``, on free ports, as a user's shell would give it."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(OWN_PREFIXES)}
    env |= {
        "TAXI_STATE_DIR": str(home),
        "TAXI_CLUSTER_SPARK_PORT": str(free_port()),
        "TAXI_CLUSTER_SPARK_UI_PORT": str(free_port()),
        "TAXI_CLUSTER_POSTGRES_PORT": str(free_port()),
        "TAXI_SPARK_DRIVER_MEMORY": "1g",
        "USER": os.environ.get("USER") or "taxi",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return env


def settings_in(env: dict[str, str]) -> Settings:
    return load_settings(environ=env)


# How long a command that got the same Ctrl-C as the tests is given to stop the servers it started.
STOP_SECONDS = 60


def run_to_the_end(command: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """``subprocess.run(command, capture_output=True)``, except on Ctrl-C: the command got the same SIGINT
    and stops the servers it started (in sessions of their own); it is waited for, not killed at once as
    ``subprocess.run`` would (which left them running), then the interrupt goes on."""
    process = subprocess.Popen(command, env=env, cwd=PROJECT_ROOT, stdout=PIPE, stderr=PIPE, text=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except KeyboardInterrupt:
        try:
            process.communicate(timeout=STOP_SECONDS)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            process.kill()
        raise
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)  # stop as Ctrl-C would: its servers with it
        process.communicate(timeout=STOP_SECONDS)
        raise
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def taxi_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "taxi_demo.cli", *args]


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that mention ``text`` (a state folder): what a profile left running."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in command:
            found.append(f"{entry.name}: {command[:200]}")
    return found
