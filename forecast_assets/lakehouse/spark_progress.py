"""Report long work while it runs, never silent for more than ten seconds: Spark's start, and a Spark
action's progress (stages and tasks done)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pyspark import SparkContext

from taxi_core.progress import REPORT_EVERY_SECONDS, reporting_while


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
    context: SparkContext,
    report: Callable[[str], None],
    what: str,
    every: float = REPORT_EVERY_SECONDS,
    ends: bool = True,
) -> Iterator[None]:
    """Call ``report`` every ``every`` seconds with Spark's progress (and, with ``ends``, at the start and end)."""
    with reporting_while(report, what, lambda: stage_progress(context), every, ends):
        yield
