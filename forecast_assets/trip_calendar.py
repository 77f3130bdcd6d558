"""A trip month's calendar: its pickups counted by hour and zone in one grouping, and the audit that every day
has its trips and every hour a pickup, against a typical day of the published months around it."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from forecast_assets.audits import ERROR, WARN, AuditResult, Measured, MonthFacts, Query, listed
from forecast_assets.lakehouse.wall_clock import WALL_CLOCK_TYPE
from taxi_core.figures import percent_text
from taxi_core.months import MonthWindow

PICKUP_ZONE, DROPOFF_ZONE = "pulocationid", "dolocationid"
# A day against the month's typical day: the quietest real days (Christmas, a blizzard's travel ban) keep about
# a third of it; a day below this share is a file missing that day, not a quiet one...
DAY_REFUSED_BELOW = 0.2
# ...and a day below this share, a holiday or a storm, is published with a warning...
DAY_WARNED_BELOW = 0.5
# ...when it is below by more than chance: a day's trips vary like a Poisson count, so a small source's holiday
# (green taxis: a few dozen trips a day in a test's sample) dips under the share by chance alone. A day warns when
# its trips fall this many standard deviations of that count below the share; on a real month's tens of thousands
# of trips a day the allowance is under 1% of the share.
QUIET_DAY_SIGMAS = 2.0
# Hours are judged only when the month is busy enough that its quietest hour (4-5 am, a tenth of the average)
# cannot have no pickup by chance: at this many trips a day it expects over ten.
HOURS_JUDGED_FROM_TRIPS_A_DAY = 2400
NEW_YORK = ZoneInfo("America/New_York")


@dataclass(frozen=True)
class DayCells:
    """The month's pickups inside it, one row a day: its trips in each (hour of day, pickup zone) cell."""

    days: tuple[date, ...]
    counts: np.ndarray  # days x cells, int64


@dataclass(frozen=True)
class TripCalendar:
    """The month's trips by pickup zone and by drop-off zone (every trip), and its pickups inside the month by day,
    by hour and by day and cell."""

    by_zone: Mapping[int, int]
    by_day: Mapping[date, int]
    by_hour: Mapping[datetime, int]
    dropoffs_by_zone: Mapping[int, int] = field(default_factory=dict)
    day_cells: DayCells = field(default_factory=lambda: DayCells((), np.zeros((0, 0), dtype="int64")))


CALENDAR = "trip_calendar"


def trip_calendar(pickup: str) -> Query:
    """The query of the month's calendar for trips whose pickup time is the column ``pickup``.

    One grouping of the month by hour and pickup zone (at most ~200k groups) answers the zone, borough, day,
    hour and week audits together, and one by drop-off zone (a few hundred) the direction audit. Zones count every
    trip (where a trip starts does not depend on its clock); days and hours, the pickups inside the month.
    """

    def calendar(rows: DataFrame, facts: MonthFacts) -> Mapping[str, Any]:
        window = facts.month
        counted = (
            rows.groupBy(
                F.date_trunc("hour", F.col(pickup)).cast(WALL_CLOCK_TYPE).alias("hour"),
                F.col(PICKUP_ZONE).alias("zone"),
            )
            .count()
            .toPandas()
        )
        by_zone = counted.dropna(subset=["zone"]).groupby("zone")["count"].sum()
        inside = counted[(counted["hour"] >= window.start) & (counted["hour"] < window.end)]
        by_hour = inside.groupby("hour")["count"].sum()
        hour_starts = pd.DatetimeIndex(by_hour.index).to_pydatetime()
        hours: dict[datetime, int] = dict(zip(hour_starts, by_hour.astype("int64").tolist(), strict=True))
        by_day: dict[date, int] = {}
        for hour, trips in hours.items():
            by_day[hour.date()] = by_day.get(hour.date(), 0) + trips
        zones = dict(zip(by_zone.index.astype("int64").tolist(), by_zone.astype("int64").tolist(), strict=True))
        dropoffs = {
            int(row["zone"]): int(row["count"])
            for row in rows.groupBy(F.col(DROPOFF_ZONE).alias("zone")).count().collect()
            if row["zone"] is not None
        }
        calendar = TripCalendar(zones, by_day, hours, dropoffs, _day_cells(inside.dropna(subset=["zone"])))
        return {CALENDAR: calendar}

    return calendar


def _day_cells(inside: pd.DataFrame) -> DayCells:
    """Each day's pickups by (hour of day, zone), as a matrix whose columns are the cells any day has."""
    if inside.empty:
        return DayCells((), np.zeros((0, 0), dtype="int64"))
    stamps = pd.DatetimeIndex(inside["hour"])
    day_codes, days = pd.factorize(stamps.normalize(), sort=True)
    cell_codes, cells = pd.factorize(stamps.hour * 1000 + inside["zone"].to_numpy(dtype="int64"), sort=True)
    counts = np.zeros((len(days), len(cells)), dtype="int64")
    np.add.at(counts, (day_codes, cell_codes), inside["count"].to_numpy(dtype="int64"))
    return DayCells(tuple(day.date() for day in pd.DatetimeIndex(days).to_pydatetime()), counts)


def calendar_of(measured: Measured) -> TripCalendar:
    found: TripCalendar = measured.values[CALENDAR]
    return found


def _days_of(window_start: datetime, days: int) -> list[date]:
    return [(window_start + timedelta(days=offset)).date() for offset in range(days)]


def missing_local_hours(start: datetime, end: datetime) -> set[datetime]:
    """The wall-clock hours that do not exist in New York (the hour skipped when clocks go forward)."""
    missing, hour = set(), start
    while hour < end:
        if hour.replace(tzinfo=NEW_YORK).astimezone(UTC).astimezone(NEW_YORK).replace(tzinfo=None) != hour:
            missing.add(hour)
        hour += timedelta(hours=1)
    return missing


def _typical_day(by_day: Mapping[date, int], days: list[date], facts: MonthFacts) -> tuple[float, str]:
    """Trips on a typical day: the neighbours' median trips a day, or, with none published, the month's own
    median day (a median, so a missing week cannot drag it down)."""
    if facts.neighbours:
        per_day = [neighbour.rows / _days_in(neighbour.month) for neighbour in facts.neighbours]
        return statistics.median(per_day), f"the median day of {facts.compared_with()}"
    return float(statistics.median(by_day.get(day, 0) for day in days)), f"the median day of {facts.month.month}"


def _days_in(month: str) -> int:
    return MonthWindow.from_partition_key(month).days


def _quiet(trips: int, typical: float) -> bool:
    """Under the warned share of a typical day by more than chance (:data:`QUIET_DAY_SIGMAS`)."""
    expected = DAY_WARNED_BELOW * typical
    return trips < expected - QUIET_DAY_SIGMAS * math.sqrt(expected)


def every_day_has_its_trips(measured: Measured, facts: MonthFacts) -> AuditResult:
    window, calendar = facts.month, calendar_of(measured)
    days = _days_of(window.start, window.days)
    typical, typical_from = _typical_day(calendar.by_day, days, facts)
    ratios = {day: calendar.by_day.get(day, 0) / typical if typical else 0.0 for day in days}
    empty_days = [day for day, ratio in ratios.items() if ratio < DAY_REFUSED_BELOW]
    quiet_days = [
        day
        for day, ratio in ratios.items()
        if ratio >= DAY_REFUSED_BELOW and _quiet(calendar.by_day.get(day, 0), typical)
    ]
    judged_hours = typical >= HOURS_JUDGED_FROM_TRIPS_A_DAY
    skipped = missing_local_hours(window.start, window.end)
    hours = [window.start + timedelta(hours=offset) for offset in range(window.hours)] if judged_hours else []
    empty_hours = [
        hour
        for hour in hours
        if calendar.by_hour.get(hour, 0) == 0 and hour not in skipped and hour.date() not in empty_days
    ]
    faults = []
    if empty_days:
        faults.append(
            f"{len(empty_days)} of {len(days)} days have under {DAY_REFUSED_BELOW:.0%} of a typical day's trips "
            f"({typical:,.0f}, {typical_from}): {_day_ranges(empty_days, calendar.by_day)}"
        )
    if empty_hours:
        hours_named = listed([f"{hour:%m-%d %H}:00" for hour in empty_hours], 10)
        faults.append(f"{len(empty_hours)} hours have no pickup at all: {hours_named}")
    warned = (
        f"{len(quiet_days)} quiet days ({DAY_REFUSED_BELOW:.0%}-{DAY_WARNED_BELOW:.0%} of a typical day, as on a "
        f"holiday or in a storm): {_day_ranges(quiet_days, calendar.by_day)}"
        if quiet_days
        else None
    )
    lowest = min(ratios.items(), key=lambda item: item[1]) if ratios else None
    return AuditResult(
        passed=not faults and not quiet_days,
        severity=ERROR if faults else WARN,
        description=(
            f"{'; '.join(faults)}. The file is missing part of the month: ask for the whole file." if faults else warned
        ),
        metadata={
            "days": len(days),
            "typical_day_trips": round(typical),
            "typical_day_from": typical_from,
            "days_under_refused_share": len(empty_days),
            "quiet_days": len(quiet_days),
            "lowest_day": f"{lowest[0]} ({lowest[1]:.2f}x)" if lowest else "",
            "refused_below": percent_text(DAY_REFUSED_BELOW),
            "warned_below": percent_text(DAY_WARNED_BELOW),
            "hours_without_pickups": len(empty_hours)
            if judged_hours
            else f"not judged (under {HOURS_JUDGED_FROM_TRIPS_A_DAY:,} trips a day)",
        },
    )


def _day_ranges(days: Sequence[date], trips: Mapping[date, int]) -> str:
    """Consecutive days as one range: ``02-22..02-28 (0-12 trips a day)``."""
    if not days:
        return ""
    runs: list[list[date]] = [[days[0]]]
    for day in days[1:]:
        if day - runs[-1][-1] == timedelta(days=1):
            runs[-1].append(day)
        else:
            runs.append([day])
    parts = []
    for run in runs:
        low, high = min(trips.get(d, 0) for d in run), max(trips.get(d, 0) for d in run)
        counts = f"{low:,}" if low == high else f"{low:,}-{high:,}"
        span = f"{run[0]:%Y-%m-%d}" if len(run) == 1 else f"{run[0]:%Y-%m-%d}..{run[-1]:%m-%d}"
        parts.append(f"{span} ({counts} trips{' a day' if len(run) > 1 else ''})")
    return ", ".join(parts)
