"""Whole-pipeline runs a session needs, started in a background lane as the session begins.

A few fixtures each run the whole pipeline in processes of their own, for minutes (:mod:`tests.end_to_end`).
In line, the session waits for each in turn while a core stands idle. Instead, when the collected tests
need them, they run in a background lane from the first test on, while the tests that need none of them
run; the modules that read them go last, in the order the lane finishes them (:func:`lane_order`). The
lane has tracks: the runs of one track run one after another, the tracks at once (each run waits on
servers, processes starting and files as much as it computes, so two keep the machine's cores busier).

A fixture asks the lane for a run's outcome: it waits for a queued run, and runs one that was not
queued (in an xdist worker, which cannot know what it will be given) in line, as before. Ctrl-C, or
the session's end, stops the lane: the run in flight gets SIGINT, as from the terminal, so it stops
the servers it started, and nothing queued after it starts.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from subprocess import PIPE
from typing import Any

# How long a run that got Ctrl-C is given to stop the servers it started.
STOP_SECONDS = 60
WAKE_SECONDS = 0.5


class LaneStopped(Exception):
    """The session ended (Ctrl-C, or a failure) before the lane got to this run."""


@dataclass(frozen=True)
class EndToEndRun:
    name: str
    fixture: str  # the fixture that gives its outcome: a test using it, directly or not, needs the run
    work: Callable[[Lane], Any]  # its whole work, running its commands through the lane (Lane.run)
    track: int = 0  # the runs of one track run one after another, in the order given; the tracks run at once


class Lane:
    def __init__(self, runs: Sequence[EndToEndRun], scratch: Callable[[str], Path]) -> None:
        """``scratch(name)``: a new folder for a run's files (pytest's ``tmp_path_factory.mktemp``)."""
        self.runs = {run.name: run for run in runs}
        self.scratch = scratch
        # The session's environment as it began: the in-line tests change os.environ (monkeypatch) while a run
        # starts, and a run must not inherit what a test set for itself (an OpenLineage URL, a state folder).
        self.environment = dict(os.environ)
        self.outcomes: dict[str, Future[Any]] = {}
        self.stopping = threading.Event()
        self.processes: set[subprocess.Popen[str]] = set()  # the commands in flight, one per track at most
        self.threads: list[threading.Thread] = []
        self.began = time.monotonic()
        self.seconds: dict[str, float] = {}  # how long each run took
        self.ended: dict[str, float] = {}  # when each run ended, in seconds from the lane's start
        self.waited: dict[str, float] = {}  # how long the session waited for each
        self.pids: dict[str, list[int]] = {}  # the commands each run started: benchmarks/suite_cost.py reads them
        self._running = threading.local()  # the run this thread works on

    def start(self, names: Sequence[str]) -> None:
        """Queue the runs ``names`` and start working through them in the background, a thread per track."""
        self.began = time.monotonic()
        tracks: dict[int, list[str]] = {}
        for name in names:
            self.outcomes[name] = Future()
            tracks.setdefault(self.runs[name].track, []).append(name)
        for queued in tracks.values():
            thread = threading.Thread(target=self._work_through, args=(queued,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def outcome(self, name: str) -> Any:
        """What run ``name`` gave: waited for when queued, else done now, in line."""
        asked = time.monotonic()
        if name not in self.outcomes:
            self.outcomes[name] = Future()
            self._do(name)
        future = self.outcomes[name]
        try:
            while True:
                # Waited for in steps: Ctrl-C may land on the lane's thread, and only a waking main thread raises it.
                try:
                    return future.result(timeout=WAKE_SECONDS)
                except TimeoutError:
                    if future.done():  # the run's own
                        raise
        finally:
            self.waited.setdefault(name, time.monotonic() - asked)

    def run(self, command: Sequence[str], timeout: float, **popen: Any) -> subprocess.CompletedProcess[str]:
        """``subprocess.run(command, capture_output=True, text=True)`` that :meth:`stop` (or Ctrl-C) can interrupt:
        the command gets SIGINT and is given time to stop what it started, rather than being killed at once."""
        if self.stopping.is_set():
            raise LaneStopped(" ".join(command))
        # A group of its own: SIGINT reaches every process it started, as Ctrl-C in a terminal would.
        process = subprocess.Popen(command, stdout=PIPE, stderr=PIPE, text=True, process_group=0, **popen)
        self.processes.add(process)
        self.pids.setdefault(getattr(self._running, "name", "?"), []).append(process.pid)
        try:
            out, err = process.communicate(timeout=timeout)
        except (KeyboardInterrupt, subprocess.TimeoutExpired):
            _interrupt(process)
            raise
        finally:
            self.processes.discard(process)
        return subprocess.CompletedProcess(list(command), process.returncode, out, err)

    def stop(self) -> None:
        """Interrupt the runs in flight and start nothing more."""
        self.stopping.set()
        if not any(thread.is_alive() for thread in self.threads):
            return
        # The lane's own threads read the commands' output: here they are only signalled, and waited for.
        for process in list(self.processes):
            _signal(process, signal.SIGINT)
        for thread in self.threads:
            _join(thread, STOP_SECONDS)
        if any(thread.is_alive() for thread in self.threads):
            for process in list(self.processes):
                _signal(process, signal.SIGKILL)
            for thread in self.threads:
                _join(thread, STOP_SECONDS)

    def _work_through(self, names: list[str]) -> None:
        for name in names:
            self._do(name)

    def _do(self, name: str) -> None:
        future = self.outcomes[name]
        if self.stopping.is_set():
            future.set_exception(LaneStopped(name))
            return
        started = time.monotonic()
        self._running.name = name
        try:
            outcome = self.runs[name].work(self)
            self.seconds[name] = time.monotonic() - started
            self.ended[name] = time.monotonic() - self.began
            future.set_result(outcome)
        except BaseException as err:  # the fixture that asks for it raises it
            future.set_exception(err)
            if isinstance(err, KeyboardInterrupt):
                raise


def _interrupt(process: subprocess.Popen[str]) -> None:
    """SIGINT to the command's group, time to stop what it started, then SIGKILL."""
    _signal(process, signal.SIGINT)
    try:
        process.communicate(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        _signal(process, signal.SIGKILL)
        process.communicate()


def _join(thread: threading.Thread, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while thread.is_alive() and time.monotonic() < deadline:
        thread.join(WAKE_SECONDS)  # in steps, as in Lane.outcome: a second Ctrl-C still reaches the session


def _signal(process: subprocess.Popen[str] | None, number: int) -> None:
    if process is not None:
        with contextlib.suppress(ProcessLookupError):  # it has ended
            os.killpg(process.pid, number)


def report(lane: Lane) -> list[str]:
    """A line per run the lane did: its track, how long it took, when it ended, how long the session waited for it
    and the process ids of the commands it ran (which ``benchmarks/suite_cost.py`` charges its work to)."""
    return [
        f"{name} (track {lane.runs[name].track}): {seconds:.0f} s, done {lane.ended.get(name, 0.0):.0f} s after the "
        f"lane started, waited for {lane.waited.get(name, 0.0):.0f} s, pid {_pids(lane, name)}"
        for name, seconds in lane.seconds.items()
    ]


def _pids(lane: Lane, name: str) -> str:
    return ",".join(str(pid) for pid in lane.pids.get(name, []))


def needed_by(runs: Sequence[EndToEndRun], items: Iterable[Any]) -> list[str]:
    """The names of the ``runs`` the test ``items`` need, in the lane's order."""
    wanted = {run.name for item in items for run in runs if run.fixture in item.fixturenames}
    return [run.name for run in runs if run.name in wanted]


def lane_order(runs: Sequence[EndToEndRun], items: Sequence[Any]) -> dict[Path, int]:
    """Each test module's place: first the modules that need none of the ``runs`` (-1), then by the last run each
    needs (the ``runs`` in the order the lane is expected to finish them), so a module reads its runs once the lane
    has done them and the lane is never waited for early."""
    names = [run.name for run in runs]
    order: dict[Path, int] = {}
    for item in items:
        place = max((names.index(name) for name in needed_by(runs, [item])), default=-1)
        order[item.path] = max(order.get(item.path, -1), place)
    return order
