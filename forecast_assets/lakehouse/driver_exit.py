"""The driver JVM ends with the process that started it, not after it.

PySpark's JVM notices its Python process has gone when its stdin closes, then stops Spark and exits on its own: some
15 s after a run's process, spent where nothing waits for it (a JVM recording its class archive writes it then). A
run's process instead stops Spark, closes the JVM's stdin and waits for it to exit, so a run's end is its JVM's.
"""

from __future__ import annotations

import atexit
import logging
import subprocess
from typing import Any

from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

JVM_EXIT_SECONDS = 120.0  # a JVM writing its class archive takes seconds; one that hangs is killed after this


def stop_with_process(session: SparkSession) -> None:
    """At this process's exit: stop ``session``, then wait for its JVM to exit."""
    atexit.register(_stop, session)


def _stop(session: SparkSession) -> None:
    gateway: Any = session.sparkContext._gateway
    jvm_process: subprocess.Popen[bytes] | None = getattr(gateway, "proc", None)
    try:
        session.stop()
    except Exception as err:  # the JVM may be gone already (killed, or stopped by someone else)
        log.debug("Spark did not stop cleanly at exit: %s", err)
    if jvm_process is None or jvm_process.stdin is None:
        return
    try:
        jvm_process.stdin.close()
        jvm_process.wait(timeout=JVM_EXIT_SECONDS)
    except subprocess.TimeoutExpired:
        pid = jvm_process.pid
        log.warning("Spark's JVM (pid %s) did not exit %.0f s after its run: stopped", pid, JVM_EXIT_SECONDS)
        jvm_process.kill()
    except OSError:
        pass
