"""Commits to a table that other writers may commit to at the same time (a shared catalog).

Iceberg retries its data commits when another writer commits first, but not its branch operations
(create, fast-forward, drop): those raise ``CommitFailedException`` and leave the table as it was,
so they are retried here, from the table's current state. A new JDBC catalog races too: each
process that opens it creates or upgrades the catalog's own tables, and two processes creating the
same namespace or table at once both insert its row; the loser's statement fails and is run again,
when ``IF NOT EXISTS`` finds what the winner made.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

COMMIT_CONFLICT = "org.apache.iceberg.exceptions.CommitFailedException"
LOST_COMMIT_RACE = "another writer committed to the table first"
COMMIT_ATTEMPTS = 8
CATALOG_SCHEMA_FAILURE = "org.apache.iceberg.jdbc.UncheckedSQLException"
CATALOG_RACE = "another process created the same catalog entry first"
CATALOG_ROW_TAKEN = ("duplicate key", "UNIQUE constraint failed")
CATALOG_OPEN_ATTEMPTS = 5

T = TypeVar("T")


def _java_causes(error: BaseException) -> Iterator[tuple[str, str]]:
    """Class name and message of each Java throwable behind a PySpark error, outermost first."""
    throwable = getattr(error, "java_exception", None) or getattr(error, "_origin", None)
    while throwable is not None:
        yield throwable.getClass().getName(), str(throwable.getMessage() or "")
        throwable = throwable.getCause()


def lost_commit_race(error: BaseException) -> bool:
    """Iceberg refused a commit because the table changed under it: nothing was written, try again."""
    return any(name == COMMIT_CONFLICT for name, _ in _java_causes(error))


def lost_catalog_race(error: BaseException) -> bool:
    """Two processes created the same entry of a JDBC catalog at once: its own tables (the loser's catalog
    is not kept by Spark), a namespace or a table. Nothing of the loser's was written."""
    for name, message in _java_causes(error):
        if name == CATALOG_SCHEMA_FAILURE and "SQL schema" in message:
            return True
        if any(taken in message for taken in CATALOG_ROW_TAKEN):
            return True
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


def open_catalog_once(spark: SparkSession) -> None:
    """Open the session's default catalog now, again if it lost the race to create its own tables."""
    catalog_statement(spark, "SHOW NAMESPACES")


def catalog_statement(spark: SparkSession, statement: str) -> None:
    """A statement that creates catalog entries if they do not exist, again if another process created them first."""
    retrying = Retrying(
        stop=stop_after_attempt(CATALOG_OPEN_ATTEMPTS),
        wait=wait_random_exponential(multiplier=0.2, max=2),
        retry=retry_if_exception(lost_catalog_race),
        before_sleep=lambda state: log.warning("Iceberg catalog: %s; running %r again", CATALOG_RACE, statement),
        reraise=True,
    )
    retrying(lambda: spark.sql(statement).collect())


def committed_sql(spark: SparkSession, table: str, what: str, statement: str) -> None:
    """One Spark SQL statement that commits to ``table`` (a branch operation), retried as ``committed``."""
    committed(table, what, lambda: spark.sql(statement))
