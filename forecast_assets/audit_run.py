"""Audit a month's rows: one aggregate pass for every audit, each audit's own query if it has one, then the judges.

Ten audits asking ten questions of three million rows would read them ten times; here the simple questions
(counts, nulls, shares, the zones seen) are answered together in one pass. That pass is one column, so it can
also be observed while the rows are written (Spark's ``observe``), and the written rows need not be read for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from forecast_assets.audits import ROWS, Audit, AuditResult, Measured, MonthFacts


@dataclass(frozen=True)
class AggregatePass:
    """Every audit's aggregates as one JSON text column, and the values read back from it."""

    aggregates: Mapping[str, Column]

    @classmethod
    def of(cls, audits: Sequence[Audit], facts: MonthFacts) -> AggregatePass:
        aggregates = {ROWS: F.count(F.lit(1))}
        for audit in audits:
            aggregates |= audit.aggregates(facts)
        return cls(aggregates)

    def column(self) -> Column:
        # JSON carries the counts and the zone sets as Python values, where an observed Spark array would come
        # back as a Java object.
        return F.to_json(F.struct(*(column.alias(name) for name, column in self.aggregates.items())))

    def values(self, measured_json: str) -> dict[str, Any]:
        found = json.loads(measured_json)
        return {name: found.get(name) for name in self.aggregates}  # a null (a sum of no rows) is left out of JSON

    def run(self, rows: DataFrame) -> dict[str, Any]:
        first = rows.agg(self.column()).first()
        if first is None:  # an invariant: an aggregate without grouping has exactly one row
            raise RuntimeError("The audits' aggregate pass returned no row")
        return self.values(first[0])


def measure(
    rows: DataFrame, audits: Sequence[Audit], facts: MonthFacts, observed: Mapping[str, Any] | None = None
) -> Measured:
    """``observed``: the aggregate pass's values as observed while ``rows`` were written; run on ``rows`` if None."""
    values = dict(observed) if observed is not None else AggregatePass.of(audits, facts).run(rows)
    queries = {audit.query: None for audit in audits if audit.query is not None}  # one run of a shared query
    for query in queries:
        values |= query(rows, facts)
    return Measured(values)


def judge_measured(measured: Measured, audits: Sequence[Audit], facts: MonthFacts) -> list[tuple[Audit, AuditResult]]:
    """Each of ``audits`` judged on what was measured, in the order given."""
    return [(audit, audit.judge(measured, facts)) for audit in audits]


def audit_month(
    rows: DataFrame, audits: Sequence[Audit], facts: MonthFacts, observed: Mapping[str, Any] | None = None
) -> list[tuple[Audit, AuditResult]]:
    """Each of ``audits`` judged on ``rows``, in the order given."""
    return judge_measured(measure(rows, audits, facts, observed), audits, facts)
