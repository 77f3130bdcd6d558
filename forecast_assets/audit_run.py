"""Audit a month's rows: one aggregate pass for every audit, each audit's own query if it has one, then the judges.

Ten audits asking ten questions of three million rows would read them ten times; here the simple questions
(counts, nulls, shares, the zones seen) are answered together in one pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from forecast_assets.audits import ROWS, Audit, AuditResult, Measured, MonthFacts


def measure(rows: DataFrame, audits: Sequence[Audit], facts: MonthFacts) -> Measured:
    aggregates = {ROWS: F.count(F.lit(1))}
    for audit in audits:
        aggregates |= audit.aggregates(facts)
    values = rows.agg(*(column.alias(name) for name, column in aggregates.items())).first().asDict()
    for audit in audits:
        if audit.query is not None:
            values |= audit.query(rows, facts)
    return Measured(values)


def audit_month(rows: DataFrame, audits: Sequence[Audit], facts: MonthFacts) -> list[tuple[Audit, AuditResult]]:
    """Each of ``audits`` judged on ``rows``, in the order given."""
    measured = measure(rows, audits, facts)
    return [(audit, audit.judge(measured, facts)) for audit in audits]
