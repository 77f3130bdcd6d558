"""Report long work while it runs, never silent for more than ten seconds: Spark's start, and a Spark
action's progress (stages and tasks done)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pyspark import SparkContext

REPORT_EVERY_SECONDS = 10.0


def stage_progress(context: SparkContext) -> str | None:
    """``stage 4 (overwrite at ...): 3/8 tasks`` for each active stage, or None when Spark is idle."""
    tracker = context.statusTracker()
    parts = []
    for stage_id in sorted(tracker.getActiveStageIds()):
        info = tracker.getStageInfo(stage_id)
        if info is not None:
            parts.append(
                f"stage {stage_id} ({info.name.split(' at ')[0]}): {info.numCompletedTasks}/{info.numTasks} tasks"
            )
    return "; ".join(parts) or None


@contextmanager
def reporting_progress(
    context: SparkContext, report: Callable[[str], None], what: str, every: float = REPORT_EVERY_SECONDS
) -> Iterator[None]:
    """Call ``report`` when the work starts, every ``every`` seconds with Spark's progress, and at the end."""
    with reporting_while(report, what, lambda: stage_progress(context), every):
        yield


@contextmanager
def reporting_while(
    report: Callable[[str], None],
    what: str,
    progress: Callable[[], str | None] = lambda: None,
    every: float = REPORT_EVERY_SECONDS,
) -> Iterator[None]:
    """Call ``report`` when the work starts, every ``every`` seconds (with ``progress()``), and at the end."""
    started = time.monotonic()
    done = threading.Event()

    def watch() -> None:
        while not done.wait(every):
            now = progress()
            report(f"{what}: {time.monotonic() - started:.0f} s" + (f", {now}" if now else ""))

    report(f"{what}: started")
    watcher = threading.Thread(target=watch, name="spark-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
    report(f"{what}: done in {time.monotonic() - started:.1f} s")
