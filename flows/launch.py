"""Start the training flow from Python (Dagster, tests) through Metaflow's Runner API, and follow its log."""

from __future__ import annotations

import asyncio
import codecs
import re
import signal
import sys
import threading
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from metaflow import Run, Runner
from metaflow.runner.metaflow_runner import ExecutingRun

from bridge.sources.metaflow_recorder import DAGSTER_JOB_ENV, DAGSTER_RUN_ID_ENV, DAGSTER_STEP_ENV
from taxi_core.errors import PipelineError
from taxi_core.names import FLOW_NAME
from taxi_core.settings import PROJECT_ROOT

TRAIN_FLOW_FILE = PROJECT_ROOT / "flows" / "train.py"
ERROR_TAIL_LINES = 25
LOG_POLL_SECONDS = 0.05  # how often a running flow's log is read for new lines
# The runtime writes every line a task prints, and its own news of the task, prefixed with the task:
#   2025-01-25 10:00:00.123 [1795332/load/2 (pid 4242)] Task is starting.
TASK_LINE = re.compile(
    r"^(?:(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) )?"
    r"\[(?P<run>[^/\]\s]+)/(?P<step>[^/\]\s]+)/(?P<task>[^/\]\s]+)(?: \(pid \d+\))?\] ?(?P<message>.*)$"
)
# A failing task prints this header, then its traceback; the exception line comes last.
TASK_ERROR_HEADER = re.compile(r"^<flow \S+ step \S+> failed:$")


class FlowFailed(RuntimeError, PipelineError):
    """The flow ran and failed; the message names the run and the failed step and carries its error."""

    def __init__(self, message: str, pathspec: str | None = None, step: str | None = None):
        super().__init__(message)
        self.pathspec = pathspec
        self.step = step


class FlowEventKind(Enum):
    RUN_STARTED = "run started"
    TASK_STARTED = "task started"
    TASK_FINISHED = "task finished"
    TASK_FAILED = "task failed"
    OUTPUT = "output"


@dataclass(frozen=True)
class FlowEvent:
    """Something the running flow reported, as it happened: the run or a task starting, a task ending, a printed line.

    ``pathspec`` is the run's for RUN_STARTED and the task's (Flow/run/step/task) otherwise.
    """

    kind: FlowEventKind
    pathspec: str
    message: str = ""
    seconds: float | None = None

    @property
    def step(self) -> str | None:
        parts = self.pathspec.split("/")
        return parts[2] if len(parts) == 4 else None

    def __str__(self) -> str:
        match self.kind:
            case FlowEventKind.RUN_STARTED:
                return f"Metaflow run {self.pathspec.split('/')[1]} started: {self.pathspec}"
            case FlowEventKind.TASK_STARTED:
                return f"{self.step} started ({self.pathspec})"
            case FlowEventKind.TASK_FINISHED:
                took = f" in {self.seconds:.1f} s" if self.seconds is not None else ""
                return f"{self.step} finished{took} ({self.pathspec})"
            case FlowEventKind.TASK_FAILED:
                return f"{self.step} failed ({self.pathspec}): {self.message}"
            case _:
                return f"{self.step}: {self.message}"


class FlowLog:
    """Turns the runtime's output, line by line, into events; keeps each failed task's error for the report."""

    def __init__(self, flow_name: str = FLOW_NAME):
        self.flow_name = flow_name
        self.failures: list[FlowEvent] = []
        self._started: dict[str, datetime] = {}
        self._errors: dict[str, list[str]] = {}

    def read(self, line: str) -> FlowEvent | None:
        """The event a line of the runtime's stdout reports; None for the runtime's own lines and tracebacks."""
        found = TASK_LINE.match(line)
        if found is None:
            return None  # "Workflow starting", "Done!": the caller already knows
        pathspec = f"{self.flow_name}/{found['run']}/{found['step']}/{found['task']}"
        message, at = found["message"], _timestamp(found["time"])
        if message.startswith("Task is starting"):
            self._errors.pop(pathspec, None)
            if at is not None:
                self._started[pathspec] = at
            return FlowEvent(FlowEventKind.TASK_STARTED, pathspec)
        if message.startswith("Task finished successfully"):
            began = self._started.get(pathspec)
            seconds = (at - began).total_seconds() if at is not None and began is not None else None
            return FlowEvent(FlowEventKind.TASK_FINISHED, pathspec, seconds=seconds)
        if message.startswith("Task failed"):
            error = self.errors(pathspec)
            event = FlowEvent(FlowEventKind.TASK_FAILED, pathspec, error[-1] if error else message)
            self.failures.append(event)
            return event
        if TASK_ERROR_HEADER.match(message):
            self._errors[pathspec] = []
            return None
        if pathspec in self._errors:
            self._errors[pathspec].append(message)
            return None
        return FlowEvent(FlowEventKind.OUTPUT, pathspec, message)

    def errors(self, pathspec: str) -> list[str]:
        """What the task printed after its error header, blank lines dropped."""
        return [line for line in self._errors.get(pathspec, []) if line.strip()]

    def failure_report(self, stderr: str) -> str:
        """The failed task's exception line, then the end of its traceback; the runtime's stderr if none failed."""
        if not self.failures:
            return stderr.strip()
        failed = self.failures[-1]
        tail = "\n".join(self.errors(failed.pathspec)[-ERROR_TAIL_LINES:])
        return f"{failed.message}\n\n{tail}" if tail else failed.message


def _timestamp(text: str | None) -> datetime | None:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f") if text else None


def run_training(
    parameters: Mapping[str, str | int | bool] | None = None,
    dagster_run_id: str | None = None,
    dagster_job: str | None = None,
    dagster_step: str | None = None,
    env: dict[str, str] | None = None,
    show_output: bool = True,
    on_event: Callable[[FlowEvent], None] | None = None,
) -> Run:
    """Run ``TrainForecastModelFlow`` to completion and return its finished ``Run``.

    ``on_event`` hears of the run as soon as it has an id, of every task starting, finishing or failing, and of every
    line a task prints, while the flow runs. ``show_output`` echoes the runtime's own output to this process's.
    """
    run_env = dict(env or {})
    if dagster_run_id:
        run_env |= {
            DAGSTER_RUN_ID_ENV: dagster_run_id,
            DAGSTER_JOB_ENV: dagster_job or "",
            DAGSTER_STEP_ENV: dagster_step or "",
        }
    return _run_to_end(_run_flow(parameters or {}, run_env, on_event or _ignore, show_output))


def _ignore(event: FlowEvent) -> None:
    pass


async def _run_flow(
    parameters: Mapping[str, str | int | bool],
    env: dict[str, str],
    on_event: Callable[[FlowEvent], None],
    show_output: bool,
) -> Run:
    log = FlowLog()

    def stdout_line(line: str) -> None:
        if show_output:
            sys.stdout.write(line + "\n")
        event = log.read(line)
        if event is not None:
            on_event(event)

    def stderr_line(line: str) -> None:
        sys.stderr.write(line + "\n")

    async with Runner(str(TRAIN_FLOW_FILE), env=env, cwd=str(PROJECT_ROOT)) as runner:
        try:
            running = await runner.async_run(**parameters)
        except RuntimeError as err:  # the process ended before the run had an id (the runner quotes its output)
            msg = f"{FLOW_NAME} did not start: {err}"
            raise FlowFailed(msg) from err
        pathspec = running.run.pathspec
        try:
            on_event(FlowEvent(FlowEventKind.RUN_STARTED, pathspec))
            streams = [_follow(running, "stdout", stdout_line)]
            if show_output:
                streams.append(_follow(running, "stderr", stderr_line))
            await asyncio.gather(*streams)
        finally:
            if running.returncode is None:  # we stop following (an error, an interrupt): the flow stops too
                running.command_obj.kill()
        if running.status != "successful":
            step = log.failures[-1].step if log.failures else None
            where = f" in step {step}" if step else ""
            msg = f"{FLOW_NAME} run {pathspec} failed{where}:\n{log.failure_report(running.stderr)}"
            raise FlowFailed(msg, pathspec=pathspec, step=step)
        return running.run


async def _follow(running: ExecutingRun, stream: str, handle: Callable[[str], None]) -> None:
    """Every whole line of one output stream as it is written, until the process has ended and the stream is read.

    Metaflow's own ``stream_log`` hands on whatever ``readline`` returns, so a line the runtime is still writing
    arrives in two pieces ("Task fini", "shed successfully"); lines here are only ever whole.
    """
    lines = WholeLines()
    with open(running.command_obj.log_files[stream], "rb") as log:
        while True:
            ended = running.returncode is not None  # read before the file: a last write is still read below
            chunk = log.read()
            for line in lines.feed(chunk):
                handle(line)
            if not chunk:
                if ended:
                    break
                await asyncio.sleep(LOG_POLL_SECONDS)
    for line in lines.rest():
        handle(line)


class WholeLines:
    """Bytes as they are appended to a log, out as whole lines of text; a multi-byte character may be split too."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""

    def feed(self, chunk: bytes) -> list[str]:
        *whole, self._pending = (self._pending + self._decoder.decode(chunk)).split("\n")
        return [line.rstrip("\r") for line in whole]

    def rest(self) -> list[str]:
        """The last line when the stream ended without a newline."""
        tail = self._pending + self._decoder.decode(b"", final=True)
        self._pending = ""
        return [tail.rstrip("\r")] if tail else []


def _run_to_end(coroutine: Coroutine[Any, Any, Run]) -> Run:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:  # called from inside an event loop (a notebook): the flow gets a loop of its own, on a thread
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, coroutine).result()
    sigint = signal.getsignal(signal.SIGINT)
    try:
        return asyncio.run(coroutine)
    finally:
        # Metaflow's runner takes SIGINT over while the flow runs; give it back to its owner (Dagster's run worker).
        if sigint is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, sigint)
