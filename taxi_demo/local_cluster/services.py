"""A long-running server process started by the profile: its log file, readiness and stopping."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from taxi_core.errors import PipelineError

LOG_TAIL_LINES = 20
STOP_SECONDS = 20.0


class ServiceFailed(PipelineError):
    """A service did not start (or died); the message names it, quotes its log and says where the log is."""


@dataclass
class Service:
    """One server process, in a process group of its own (so its children stop with it), logging to ``log``."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    @classmethod
    def start(
        cls, name: str, command: Sequence[str], log: Path, env: dict[str, str] | None = None, user: str | None = None
    ) -> Service:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as output:
            process = subprocess.Popen(
                list(command),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                start_new_session=True,
                user=user,
            )
        return cls(name, process, log)

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self) -> str:
        try:
            lines = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-LOG_TAIL_LINES:])

    def failure(self, what: str) -> ServiceFailed:
        return ServiceFailed(f"{self.name} {what}; its log ({self.log}) ends:\n{self.log_tail()}")

    def wait_until(self, ready: Callable[[], bool], seconds: float, what: str) -> None:
        """Poll ``ready`` until it holds; fail at once if the process dies, or after ``seconds``."""
        deadline = time.monotonic() + seconds
        while True:
            if not self.alive():
                raise self.failure(f"exited with code {self.process.returncode} before it was {what}")
            if ready():
                return
            if time.monotonic() > deadline:
                raise self.failure(f"was not {what} after {seconds:.0f} s")
            time.sleep(0.2)

    def kill(self) -> None:
        """What a lost machine does: the process and everything it started die at once."""
        self._signal_group(signal.SIGKILL)
        self.process.wait()

    def stop(self, stop_signal: int = signal.SIGTERM) -> None:
        """Ask the process group to stop; kill it if it has not after ``STOP_SECONDS``."""
        if self.alive():
            self._signal_group(stop_signal)
            try:
                self.process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.process.wait()
        # Children that outlived the leader (a Spark executor) go too.
        self._signal_group(signal.SIGKILL)

    def _signal_group(self, sent: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, sent)


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])
