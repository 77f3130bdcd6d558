"""``./run dagster dev`` started without a terminal (directly, or in the background of a script, which starts it
with SIGINT ignored) stops on SIGINT or SIGTERM and leaves no process of its own behind: webserver, daemon, code
servers, the lineage watcher."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request

import psutil
import pytest

from taxi_core.settings import PROJECT_ROOT
from taxi_demo.local_cluster.services import free_port

START_SECONDS = 300
STOP_SECONDS = 15  # what a person waits before reaching for kill -9


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _living(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


STARTS = {
    "directly": lambda command: ["bash", "-c", f"exec {command}"],
    "in a script's background": lambda command: ["bash", "-c", f"{command} & wait"],
}


@pytest.mark.integration
@pytest.mark.parametrize(
    ("start", "sent", "to"),
    [
        ("in a script's background", signal.SIGINT, "the command"),
        ("in a script's background", signal.SIGTERM, "the command"),
        ("directly", signal.SIGINT, "dagster dev"),
        ("directly", signal.SIGTERM, "the command"),
    ],
    ids=lambda value: getattr(value, "name", value),
)
def test_dagster_dev_stops_and_leaves_nothing(tmp_path, start, sent, to):
    port = free_port()
    command = f"./run dagster dev --host 127.0.0.1 --port {port}"
    with (tmp_path / "dagster-dev.log").open("wb") as log:
        shell = subprocess.Popen(
            STARTS[start](command), cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    try:
        give_up = time.monotonic() + START_SECONDS
        while not _answers(f"http://127.0.0.1:{port}/server_info"):
            assert shell.poll() is None and time.monotonic() < give_up, (tmp_path / "dagster-dev.log").read_text()
            time.sleep(0.5)
        top = psutil.Process(shell.pid)  # the shell, or what it became (exec)
        runner = next(p for p in (top, *top.children(recursive=True)) if p.name() == "uv")
        target = runner if to == "the command" else next(p for p in runner.children() if "dagster" in p.cmdline()[1])
        give_up = time.monotonic() + START_SECONDS  # the code location and the watcher are up: all it starts
        while not any("lineage_cli" in " ".join(p.cmdline()) for p in psutil.Process(shell.pid).children(True)):
            assert time.monotonic() < give_up, "the lineage watcher never started"
            time.sleep(0.2)
        family = [runner.pid, *(p.pid for p in runner.children(recursive=True))]
        os.kill(target.pid, sent)
        stopped_by = time.monotonic() + STOP_SECONDS
        while _living(family) and time.monotonic() < stopped_by:
            time.sleep(0.2)
        left = {pid: " ".join(psutil.Process(pid).cmdline())[:100] for pid in _living(family)}
        assert left == {}, left
    finally:
        for pid in _living([shell.pid, *(p.pid for p in psutil.Process(shell.pid).children(True))]):
            os.kill(pid, signal.SIGKILL)
