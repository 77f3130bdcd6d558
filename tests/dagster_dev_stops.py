"""``./run dagster dev`` started as people start it, then stopped as they stop it: which of its processes are left.

``python -m tests.dagster_dev_stops OUT.json`` runs every case one after another (the background lane runs it:
:mod:`tests.end_to_end`) and writes, per case, how long the start took and the processes of its own still alive
``STOP_SECONDS`` after the signal: webserver, daemon, code servers, the lineage watcher. Starts: directly, without
a terminal; in a script's background (which starts it with SIGINT ignored); in a terminal, stopped with Ctrl-C
typed there. The state folder is the one ``TAXI_STATE_DIR`` names.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
import traceback
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from taxi_core.settings import PROJECT_ROOT
from taxi_demo.local_cluster.services import free_port

START_SECONDS = 300
STOP_SECONDS = 15  # what a person waits before reaching for kill -9
CTRL_C = b"\x03"


@dataclass(frozen=True)
class Case:
    start: str  # "directly", "in a script's background", "in a terminal"
    sent: str  # SIGINT, SIGTERM, or Ctrl-C typed in the terminal
    to: str  # "the command" (the process started), "dagster dev" (its Python process), "the terminal"

    @property
    def name(self) -> str:
        return f"{self.start}, {self.sent} to {self.to}"


CASES = (
    Case("in a script's background", "SIGINT", "the command"),
    Case("in a script's background", "SIGTERM", "the command"),
    Case("directly", "SIGINT", "dagster dev"),
    Case("directly", "SIGTERM", "the command"),
    Case("in a terminal", "Ctrl-C", "the terminal"),
)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def command_line(process: psutil.Process) -> list[str]:
    """``process``'s arguments; none once it has exited (a short-lived process of the start may, at any moment)."""
    try:
        return list(process.cmdline())
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return []


def living(pids: list[int]) -> dict[int, str]:
    alive = {}
    for pid in pids:
        try:
            process = psutil.Process(pid)
            if process.status() != psutil.STATUS_ZOMBIE:
                alive[pid] = " ".join(command_line(process))[:120]
        except psutil.NoSuchProcess:
            pass
    return alive


def started(case: Case, command: str, log: Path) -> tuple[int, int | None]:
    """The started process's pid, and the terminal's side (its master) for a start in a terminal."""
    if case.start == "in a terminal":
        pid, terminal = pty.fork()  # a new session whose controlling terminal is the child's side
        if pid == 0:
            os.chdir(PROJECT_ROOT)
            os.execvp("bash", ["bash", "-c", f"exec {command}"])
        return pid, terminal
    shell = ["bash", "-c", f"exec {command}" if case.start == "directly" else f"{command} & wait"]
    with log.open("wb") as output:
        process = subprocess.Popen(
            shell, cwd=PROJECT_ROOT, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    return process.pid, None


def _drain(terminal: int | None) -> None:
    """Read what the terminal's side has, so dagster dev never blocks writing to a full terminal."""
    while terminal is not None:
        try:
            if not select.select([terminal], [], [], 0)[0] or not os.read(terminal, 65536):
                return
        except OSError:
            return


@dataclass(frozen=True)
class Outcome:
    case: str
    start_seconds: float
    stop_seconds: float
    left: dict[int, str]
    watcher_started: bool
    error: str | None = None  # the rig's own failure in this case, if any: the other cases still run


def run(case: Case, folder: Path) -> Outcome:
    port = free_port()
    command = f"./run dagster dev --host 127.0.0.1 --port {port}"
    began = time.monotonic()
    top, terminal = started(case, command, folder / f"{case.start}-{case.sent}.log".replace(" ", "-"))
    try:
        give_up = began + START_SECONDS
        watcher = False
        while not (_answers(f"http://127.0.0.1:{port}/server_info") and watcher):
            _drain(terminal)
            if time.monotonic() > give_up:
                break
            family = psutil.Process(top).children(recursive=True)
            watcher = any("lineage_cli" in " ".join(command_line(p)) for p in family)
            time.sleep(0.5)
        start_seconds = time.monotonic() - began
        process = psutil.Process(top)  # the shell, or what it became (exec)
        runner = next(
            p
            for p in (process, *process.children(recursive=True))
            if command_line(p)[:1] and Path(command_line(p)[0]).name == "uv"
        )
        family = [runner.pid, *(p.pid for p in runner.children(recursive=True))]
        sent_at = time.monotonic()
        if case.to == "the terminal" and terminal is not None:
            os.write(terminal, CTRL_C)
        elif case.to == "dagster dev":
            dev = next(p for p in runner.children() if "dagster" in " ".join(command_line(p)[:2]))
            os.kill(dev.pid, signal.Signals[case.sent])
        else:
            os.kill(runner.pid, signal.Signals[case.sent])
        while living(family) and time.monotonic() < sent_at + STOP_SECONDS:
            _drain(terminal)
            time.sleep(0.2)
        return Outcome(case.name, start_seconds, time.monotonic() - sent_at, living(family), watcher)
    finally:
        for pid in living([top, *(p.pid for p in _children(top))]):
            os.kill(pid, signal.SIGKILL)
        if terminal is not None:
            os.close(terminal)
        with contextlib.suppress(ChildProcessError):  # reaped already
            os.waitpid(top, 0)


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def outcome(case: Case, folder: Path) -> Outcome:
    try:
        return run(case, folder)
    except Exception:  # the case failed to run: said in its outcome, and the next case runs
        return Outcome(case.name, 0.0, 0.0, {}, False, traceback.format_exc())


def main(out: Path) -> None:
    out.write_text(json.dumps([asdict(outcome(case, out.parent)) for case in CASES], indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
