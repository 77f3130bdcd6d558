"""The trip audits' verdicts on a month of sample trips, and a neighbour month's summary counted independently."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from forecast_assets.audit_run import audit_month
from forecast_assets.audits import ERROR, AuditResult, MonthFacts
from forecast_assets.lakehouse.neighbours import NeighbourMonth
from forecast_assets.source_specs.yellow_trips import SOURCE as YELLOW_TRIPS

PICKUP = "tpep_pickup_datetime"


def neighbour_from_trips(month: str, trips: pd.DataFrame) -> NeighbourMonth:
    """The neighbour as its summary keeps it, counted here with pandas: pickups and drop-offs per zone, and the
    pickups inside the month by weekday and hour."""
    pickups = trips[PICKUP]
    start = pd.Timestamp(f"{month}-01")
    inside = pickups[(pickups >= start) & (pickups < start + pd.offsets.MonthBegin(1))]
    week = (inside.dt.day_of_week * 24 + inside.dt.hour).value_counts()
    return NeighbourMonth(
        month,
        len(trips),
        {int(z): int(n) for z, n in trips["pulocationid"].value_counts().items()},
        tuple(int(week.get(hour, 0)) for hour in range(168)),
        {int(z): int(n) for z, n in trips["dolocationid"].value_counts().items()},
    )


def verdicts(spark, trips: pd.DataFrame, facts: MonthFacts) -> tuple[set[str], set[str], dict[str, AuditResult]]:
    """The audits that hold the month back, those that only warn, and every result by name."""
    judged = audit_month(spark.createDataFrame(trips), YELLOW_TRIPS.audits, replace(facts, expected_rows=len(trips)))
    blocked = {a.name for a, r in judged if a.blocking and not r.passed and r.severity == ERROR}
    warned = {a.name for a, r in judged if not r.passed} - blocked
    return blocked, warned, {a.name: r for a, r in judged}
