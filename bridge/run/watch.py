"""Push within seconds: a process that runs a cheap pass every half second, and the sensor that keeps it alive.

Dagster's daemon evaluates sensors at most every 5 s (and this one every 30 s), so a sensor alone
cannot deliver a finished step within 2 s. The watcher keeps the Dagster instance and the asset
graph loaded and runs a pass every ``interval`` seconds: an idle pass reads one page of the event
log and one Metaflow directory listing (milliseconds), so a step that ends, in Dagster or in a
Metaflow task, is queued and delivered by the next pass. Passes stay one at a time (the lease), so
the sensor's own ticks become catch-up.

Under ``dagster dev`` the sensor starts the watcher (``bridge.watch_command``) and touches a heartbeat
on every tick; a watcher started that way stops when the process that started it (Dagster's code
server) ends, within a second of ``dagster dev`` stopping, or when the ticks stop.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from bridge.config import LineageBridge
from bridge.outbox.lease import Holder, PassRunning

log = logging.getLogger(__name__)

# A watcher started by the sensor stops when no tick has touched the heartbeat for this long.
HEARTBEAT_SECONDS = 180.0


def heartbeat_file(bridge: LineageBridge) -> Path:
    return bridge.lineage_dir / "sensor.heartbeat"


def pid_file(bridge: LineageBridge) -> Path:
    return bridge.lineage_dir / "watcher.pid"


def keep_watcher_running(bridge: LineageBridge) -> int | None:
    """Touch the heartbeat and start the watcher unless one runs; the watcher's process id (None if not wanted)."""
    if not bridge.watch_command:
        return None
    bridge.lineage_dir.mkdir(parents=True, exist_ok=True)
    heartbeat_file(bridge).touch()
    pids = pid_file(bridge)
    if pids.exists():
        holder = Holder.parse(pids.read_text().strip())
        if not holder.gone():
            return holder.pid
    with (bridge.lineage_dir / "watcher.log").open("a") as output:
        process = subprocess.Popen(
            [*bridge.watch_command, "--while-sensor-ticks", "--started-by", str(os.getpid())],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # not a child of the code server: a reload does not take it down
        )
    pids.write_text(str(Holder(socket.gethostname(), process.pid, "started", "watcher")))
    return process.pid


def watch(
    bridge: LineageBridge,
    one_pass: Callable[[], str | None],
    interval: float = 0.5,
    while_sensor_ticks: bool = False,
    stop: threading.Event | None = None,
    started_by: int | None = None,
) -> int:
    """Run ``one_pass`` (a summary when something happened, else None) every ``interval`` s until stopped.

    With ``while_sensor_ticks``, stop once the sensor's heartbeat is older than :data:`HEARTBEAT_SECONDS`;
    with ``started_by`` (the process that started this one), once that process has ended. Returns the
    number of passes run.
    """
    stop = stop or threading.Event()
    pids = pid_file(bridge)
    me = Holder.me("watcher")
    if while_sensor_ticks:
        pids.write_text(str(me))
    passes = 0
    try:
        while not stop.is_set():
            if started_by is not None and os.getppid() != started_by:
                log.info("The process that started the watcher (process %s) has ended: the watcher stops", started_by)
                break
            if while_sensor_ticks and _heartbeat_age(bridge) > HEARTBEAT_SECONDS:
                log.info("No sensor tick for %.0f s: the watcher stops", HEARTBEAT_SECONDS)
                break
            try:
                said = one_pass()
            except PassRunning:
                said = None
            except Exception:  # a failing pass must not end the watcher: the next one may succeed
                log.exception("Lineage pass failed; the watcher goes on")
                said = None
            passes += 1
            if said:
                log.info("%s", said)
            stop.wait(interval)
    finally:
        if while_sensor_ticks and pids.exists() and pids.read_text().strip() == str(me):
            pids.unlink()
    return passes


def _heartbeat_age(bridge: LineageBridge) -> float:
    try:
        return time.time() - os.stat(heartbeat_file(bridge)).st_mtime
    except FileNotFoundError:
        return float("inf")
