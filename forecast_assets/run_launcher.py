"""Dagster's default run launcher, with run workers whose health run monitoring can check on this machine.

The default launcher starts each run's worker as a process of the code server, and says it cannot tell
whether one still lives: a worker killed with ``kill -9`` (or lost with its machine) leaves its run
*Started* for good, holding the run queue's only slot. This one reads the worker's pid from the run's own
event log (the code server's "Started process for run (pid: N)") and checks that process, so Dagster's
run monitoring (on in ``dagster.yaml``) marks a run whose worker is gone as failed, within its poll interval.

It assumes the code server runs on this machine, as ``dagster dev`` and the project's profiles run it; with
a code server on another machine, configure Dagster's ``DefaultRunLauncher`` instead.
"""

from __future__ import annotations

from dagster import DagsterEventType, DagsterInstance
from dagster._core.launcher import CheckRunHealthResult, DefaultRunLauncher, WorkerStatus
from dagster._core.storage.dagster_run import DagsterRun

from bridge.liveness import lives

STARTED_WORKER = "Started process for run (pid: "


class LocalRunLauncher(DefaultRunLauncher):
    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: DagsterRun) -> CheckRunHealthResult:
        worker = run_worker(self._instance, run.run_id)
        if worker is None:  # not started yet, or started elsewhere: nothing says it is gone
            return CheckRunHealthResult(WorkerStatus.RUNNING, "the run worker's pid is not known yet")
        pid, started_by = worker
        if lives(pid, started_by):
            return CheckRunHealthResult(WorkerStatus.RUNNING)
        return CheckRunHealthResult(
            WorkerStatus.NOT_FOUND,
            f"its run worker (pid {pid}) is gone: killed, crashed, or lost with its machine",
        )


def run_worker(instance: DagsterInstance, run_id: str) -> tuple[int, float] | None:
    """The pid of ``run_id``'s worker and when the code server said it had started it; ``None`` before it did."""
    for entry in reversed(instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT)):
        if entry.message.startswith(STARTED_WORKER) and entry.dagster_event is not None:
            pid = entry.dagster_event.engine_event_data.metadata.get("pid")
            if pid is not None:
                return int(str(pid.value)), entry.timestamp
    return None
