"""Whether a process recorded earlier still lives: the same pid, started at the same moment, on the same boot.

A pid alone is not a process: the system gives a dead process's pid to the next one, and a restart
starts every count again. A :class:`ProcessMark` keeps what tells them apart (the host, the boot and the
process's start time), so :func:`gone` answers for the process itself, or says it cannot tell (another
machine's process).
"""

from __future__ import annotations

import socket
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
STARTED_WITHIN_SECONDS = 1.0  # how far two readings of one process's start time may differ
UNREADABLE = float("-inf")  # the start of a process that is not ours to read


@dataclass(frozen=True)
class ProcessMark:
    host: str
    boot: str
    pid: int
    started: float  # the process's start, in seconds since the epoch

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> ProcessMark | None:
        """A mark as :meth:`to_json` wrote it; ``None`` for anything else (a run recorded before marks were)."""
        try:
            return cls(str(data["host"]), str(data["boot"]), int(data["pid"]), float(data["started"]))
        except (TypeError, KeyError, ValueError):  # no mark, or not one: the process cannot be told
            return None

    def where(self) -> str:
        return f"pid {self.pid} on {self.host}"


def this_boot() -> str:
    """This machine's boot: Linux's boot id, elsewhere the moment it booted."""
    try:
        return BOOT_ID.read_text().strip()
    except OSError:  # not Linux: the boot time tells boots apart as well
        return str(round(psutil.boot_time()))


def mark(pid: int) -> ProcessMark:
    """The mark of the living process ``pid`` on this machine."""
    return ProcessMark(socket.gethostname(), this_boot(), pid, psutil.Process(pid).create_time())


def gone(process: ProcessMark) -> bool | None:
    """``True`` when ``process`` no longer lives (or this machine restarted since), ``False`` when it does, ``None``
    when it ran on another machine, which this one cannot see."""
    if process.host != socket.gethostname():
        return None
    if process.boot != this_boot():
        return True
    started = _start_of(process.pid)
    if started == UNREADABLE:
        return False
    return started is None or bool(abs(started - process.started) > STARTED_WITHIN_SECONDS)


def machine_restarted(process: ProcessMark) -> bool:
    return process.host == socket.gethostname() and process.boot != this_boot()


def processes_with(argument: str) -> list[int]:
    """The pids of this machine's processes with ``argument`` among their command line's arguments."""
    found = []
    for process in psutil.process_iter(["pid", "cmdline", "status"]):
        if argument in (process.info.get("cmdline") or ()) and process.info.get("status") != psutil.STATUS_ZOMBIE:
            found.append(process.info["pid"])
    return found


def lives(pid: int, started_by: float) -> bool:
    """Whether the process this machine knows as ``pid`` lives and is the one that had started by ``started_by``
    (seconds since the epoch), not a later process given its pid."""
    started = _start_of(pid)
    return started is not None and started <= started_by + STARTED_WITHIN_SECONDS


def _start_of(pid: int) -> float | None:
    """When the living process ``pid`` started; ``None`` when there is none (a zombie has ended);
    :data:`UNREADABLE` for one that is not ours to read: it lives, started at a time we cannot tell."""
    try:
        found = psutil.Process(pid)
        return None if found.status() == psutil.STATUS_ZOMBIE else float(found.create_time())
    except psutil.NoSuchProcess:
        return None
    except psutil.Error:  # it exists but is not ours to read: it lives
        return UNREADABLE
