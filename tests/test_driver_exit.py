"""A run's process and its Spark driver end together: the JVM is gone when the process that started it has exited.

A real process starts Spark as a run's first Spark step does (the project's resource, its settings), says its JVM's
process id, and exits; the test then looks for that JVM.
"""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

pytestmark = pytest.mark.integration

STARTS_SPARK = """
from forecast_assets.definitions import resources_for
from taxi_core.settings import load_settings
from taxi_core.tool_env import apply_tool_environment

settings = load_settings()
apply_tool_environment(settings)
session = resources_for(settings)["spark"].session
print(session.sparkContext._gateway.proc.pid, session.conf.get("spark.ui.enabled"), flush=True)
"""


def test_spark_s_jvm_exits_with_the_process_that_started_it(tmp_path):
    env = {**os.environ, "TAXI_STATE_DIR": str(tmp_path / "state"), "TAXI_SPARK_CLASS_ARCHIVE": "false"}
    (tmp_path / "state").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", STARTS_SPARK], env=env, cwd=tmp_path, capture_output=True, text=True, check=False
    )

    assert done.returncode == 0, done.stderr[-3000:]
    jvm, ui = done.stdout.split()
    # Gone already, not exiting on its own some seconds later (its stdin closed when its parent exited).
    assert not psutil.pid_exists(int(jvm)) or psutil.Process(int(jvm)).status() == psutil.STATUS_ZOMBIE
    assert ui == "false"  # and a run's driver served no web UI
