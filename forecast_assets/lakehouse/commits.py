"""Commits to a table that other writers may commit to at the same time (a shared catalog).

Iceberg retries its data commits when another writer commits first, but not its branch operations
(create, fast-forward, drop): those raise ``CommitFailedException`` and leave the table as it was,
so they are retried here, from the table's current state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

COMMIT_CONFLICT = "org.apache.iceberg.exceptions.CommitFailedException"
LOST_COMMIT_RACE = "another writer committed to the table first"
COMMIT_ATTEMPTS = 8

T = TypeVar("T")


def lost_commit_race(error: BaseException) -> bool:
    """Iceberg refused a commit because the table changed under it: nothing was written, try again."""
    throwable = getattr(error, "java_exception", None) or getattr(error, "_origin", None)
    while throwable is not None:
        if throwable.getClass().getName() == COMMIT_CONFLICT:
            return True
        throwable = throwable.getCause()
    return False


def committed(table: str, what: str, commit: Callable[[], T]) -> T:
    """``commit`` once, or again while other writers win the race; ``commit`` must read the table afresh."""

    def report_retry(state: RetryCallState) -> None:
        wait = state.next_action.sleep if state.next_action else 0.0
        log.warning(
            "%s: %s %s; retrying in %.1f s (attempt %d of %d)",
            table,
            LOST_COMMIT_RACE,
            what,
            wait,
            state.attempt_number + 1,
            COMMIT_ATTEMPTS,
        )

    retrying = Retrying(
        stop=stop_after_attempt(COMMIT_ATTEMPTS),
        # Random waits, so two writers that collided do not collide again in lockstep.
        wait=wait_random_exponential(multiplier=0.2, max=5),
        retry=retry_if_exception(lost_commit_race),
        before_sleep=report_retry,
        reraise=True,
    )
    return retrying(commit)


def committed_sql(spark: SparkSession, table: str, what: str, statement: str) -> None:
    """One Spark SQL statement that commits to ``table`` (a branch operation), retried as ``committed``."""
    committed(table, what, lambda: spark.sql(statement))
