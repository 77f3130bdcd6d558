"""A state folder for the cluster profile, the environment of a command run in it, and what its servers hold."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from taxi_core.settings import Settings, load_settings
from taxi_demo.local_cluster.services import free_port

# The test process's own state and tool settings (conftest) must not leak into the profile's commands.
OWN_PREFIXES = ("TAXI_", "METAFLOW_", "DAGSTER_", "OPENLINEAGE", "MPLCONFIGDIR")


def cluster_home() -> Path:
    """A state folder PostgreSQL can reach when the tests run as root (it then runs as ``postgres``)."""
    home = Path(tempfile.mkdtemp(prefix="taxi-cluster-"))
    home.chmod(0o755)
    return home


def profile_environment(home: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment for the profile in ``home``, on free ports, as a user's shell would give it, from
    ``base`` (default: this process's environment)."""
    base = os.environ if base is None else base
    env = {key: value for key, value in base.items() if not key.startswith(OWN_PREFIXES)}
    env |= {
        "TAXI_STATE_DIR": str(home),
        "TAXI_CLUSTER_SPARK_PORT": str(free_port()),
        "TAXI_CLUSTER_SPARK_UI_PORT": str(free_port()),
        "TAXI_CLUSTER_POSTGRES_PORT": str(free_port()),
        "TAXI_SPARK_DRIVER_MEMORY": "1g",
        # The folder is new: a class archive would be recorded (a slower JVM) and hardly used (tests/conftest.py).
        "TAXI_SPARK_CLASS_ARCHIVE": "false",
        "USER": base.get("USER") or "taxi",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return env


def settings_in(env: dict[str, str]) -> Settings:
    return load_settings(environ=env)


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
