"""Ctrl-C in the middle of the demo, as a terminal sends it (SIGINT to the whole foreground process group, once and
then again): the demo waits for its run to stop, says what each table holds, and nothing is printed after it has
exited.

It once returned the prompt at once, and ~60 lines of a run's `DagsterExecutionInterruptedError` followed 16 s
later; a second Ctrl-C during the summary ended it with a traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.cluster_rig import profile_environment, taxi_command

pytestmark = pytest.mark.integration

# Long enough for the processes a stopped run leaves (its worker, its JVM, the code server) to end.
ENDS_WITHIN_SECONDS = 180


class Output:
    """The demo's lines, each with the time it arrived, read until every process holding the pipe has closed it."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[tuple[float, str]] = []
        self._seen = threading.Condition()
        self._reader = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._reader.start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            with self._seen:
                self.lines.append((time.monotonic(), line.rstrip("\n")))
                self._seen.notify_all()

    def wait_for(self, text: str, timeout: float) -> None:
        with self._seen:
            found = self._seen.wait_for(lambda: any(text in line for _, line in self.lines), timeout=timeout)
        assert found, f"{text!r} never printed; the demo said:\n" + self.text()[-3000:]

    def closed(self, timeout: float) -> bool:
        self._reader.join(timeout)
        return not self._reader.is_alive()

    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)


def test_ctrl_c_twice_stops_the_run_and_ends_with_the_summary_and_nothing_after_it(tmp_path: Path):
    home = tmp_path / "state"
    home.mkdir()
    environment = profile_environment(home)
    command = taxi_command("demo", "--months", "2024-12", "2025-01", "--scale", "20000")
    demo = subprocess.Popen(
        command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,  # its own process group, as a shell gives a foreground job
    )  # fmt: skip
    output = Output(demo)
    group = demo.pid
    try:
        # The reference data's run is under way: its worker and its Spark JVM are in the group too.
        output.wait_for("Starting Spark", timeout=600)
        os.killpg(group, signal.SIGINT)
        output.wait_for("Ctrl-C: waiting for run", timeout=60)
        os.killpg(group, signal.SIGINT)  # again, impatient
        code = demo.wait(timeout=ENDS_WITHIN_SECONDS)
        exited = time.monotonic()
        assert output.closed(ENDS_WITHIN_SECONDS), "a process the demo started still holds its output"
    finally:
        if demo.poll() is None:
            os.killpg(group, signal.SIGKILL)
    printed = output.text()
    assert code == 1, printed[-3000:]
    after_exit = [line for arrived, line in output.lines if arrived > exited + 0.5]
    assert after_exit == [], "printed after the demo had exited (after the prompt):\n" + "\n".join(after_exit)
    # The summary is whole and last: what each table holds, and how to undo it.
    # The interrupted run's own processes still print their tracebacks as they stop, before the summary: they
    # share the terminal's process group.
    summary = printed[printed.index("Stopped (Ctrl-C).") :]
    assert "Traceback" not in summary and "KeyboardInterrupt" not in summary, summary
    assert "What the demo left" in summary or "No table changed" in summary, summary
    assert "settings.env: months" in summary.splitlines()[-2] + summary.splitlines()[-1], summary
    assert _members(group) == [], "processes the demo left running"


def _members(group: int) -> list[str]:
    """The live processes of a process group: each one's pid, state and command line."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            found.append(f"{entry.name} {fields[0]} {command[:160]}")
    return found
