"""A trip month's weeks: its pickups by weekday and hour against its neighbours' (a month re-dated from another
year, or with its clocks shifted, matches their week better moved than as dated), and no day a copy of another.

Counts, days and zones all look normal in such a month; only the calendar shows the damage. Pure judges over the
calendar :mod:`forecast_assets.trip_calendar` counted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

import numpy as np
from scipy.special import i0e, i1e

from forecast_assets.audits import ERROR, AuditResult, Measured, MonthFacts, listed
from forecast_assets.lakehouse.neighbours import HOURS_IN_WEEK, NeighbourMonth
from forecast_assets.trip_calendar import calendar_of
from taxi_core.figures import ratio
from taxi_core.months import MonthWindow

# The shifts a month's week is tried at besides its own dates: a re-dated month moves by whole days (another
# year's dates fall on other weekdays: one or two days a year), a wrong clock by hours.
DAY_SHIFTS = (-3, -2, -1, 1, 2, 3)  # a week is a circle: four days later is three earlier
HOUR_SHIFTS = tuple(hour for hour in range(-12, 13) if hour)
# A shift explains the month when it brings the month under this fraction of its distance as dated from the
# neighbours' week... (the sample's months as dated lie 0.03-0.04 apart at 150k trips a month and 0.06 at 20k,
# and 1.5-2x as far moved by a day; re-dated by one day, 0.09 as dated and 0.061 moved back, at 20k)
SHIFT_EXPLAINS_BELOW = 0.8
# ...by more than chance could: the gain is at least this share of the distance two samples of the month's size
# and the neighbours' from one week would lie apart...
SHIFT_GAIN_NOISES = 0.25
# ...and the month is judged from this many pickups (some 30 in each hour of the week): in a smaller one the
# best of the thirty shifts tried beats the dates by chance alone.
WEEK_JUDGED_FROM_TRIPS = 5000


def pickups_by_hour_of_week(by_hour: Mapping[datetime, int]) -> list[int]:
    """The month's pickups in each hour of the week, Monday 0-1 am first."""
    week = [0] * HOURS_IN_WEEK
    for hour, trips in by_hour.items():
        week[hour.weekday() * 24 + hour.hour] += trips
    return week


def hours_of_week_in(month: str) -> np.ndarray:
    """How often each hour of the week occurs in the month (4 or 5 times)."""
    window = MonthWindow.from_partition_key(month)
    days = [window.start.date() + timedelta(days=offset) for offset in range(window.days)]
    weekdays = np.bincount([day.weekday() for day in days], minlength=7)
    return np.repeat(weekdays, 24).astype(float)


def week_shape(counts: Sequence[int], month: str) -> np.ndarray:
    """An average week's shape: pickups per occurrence of each hour of the week, as shares summing to 1."""
    per_occurrence = np.asarray(counts, dtype=float) / hours_of_week_in(month)
    total = per_occurrence.sum()
    shape: np.ndarray = per_occurrence / total if total else per_occurrence
    return shape


def _distance(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).sum() / 2)


def _shift_text(hours: int) -> str:
    if hours % 24 == 0:
        days = hours // 24
        return f"{abs(days)} day{'s' if abs(days) > 1 else ''} {'later' if days > 0 else 'earlier'}"
    return f"{abs(hours)} hour{'s' if abs(hours) > 1 else ''} {'later' if hours > 0 else 'earlier'}"


@dataclass(frozen=True)
class WeekFit:
    """How far the month's week lies from its neighbours' as dated, and at the shift that fits it best."""

    as_dated: float
    best_shift: int  # hours; the month's pickups moved this much later fit best
    at_best_shift: float
    noise: float

    @property
    def explained_by_shift(self) -> bool:
        gain = self.as_dated - self.at_best_shift
        return self.at_best_shift < SHIFT_EXPLAINS_BELOW * self.as_dated and gain > SHIFT_GAIN_NOISES * self.noise


def week_fit(month_counts: Sequence[int], month: str, neighbours: Sequence[NeighbourMonth]) -> WeekFit | None:
    """The month's week against the pooled week of the neighbours that kept theirs; None when none did."""
    kept = [neighbour for neighbour in neighbours if neighbour.pickups_by_hour_of_week is not None]
    if not kept:
        return None
    pooled = sum(
        (np.asarray(n.pickups_by_hour_of_week, dtype=float) / hours_of_week_in(n.month) for n in kept),
        np.zeros(HOURS_IN_WEEK),
    )
    reference = pooled / pooled.sum()
    shape = week_shape(month_counts, month)
    shifts = [day * 24 for day in DAY_SHIFTS] + list(HOUR_SHIFTS)
    # Moving every pickup ``shift`` hours later moves the week's shape as far round.
    distances = {shift: _distance(np.roll(shape, shift), reference) for shift in shifts}
    best = min(distances, key=lambda shift: (distances[shift], abs(shift)))
    trips, neighbour_trips = sum(month_counts), sum(sum(n.pickups_by_hour_of_week or ()) for n in kept)
    # Two Poisson samples of one week's shape differ per hour by about sqrt(p (1/N + 1/M)); |x| of a normal
    # variable averages its deviation times sqrt(2/pi).
    spread = np.sqrt(reference * (1 / max(trips, 1) + 1 / max(neighbour_trips, 1)))
    noise = float(math.sqrt(2 / math.pi) * spread.sum() / 2)
    return WeekFit(_distance(shape, reference), best, distances[best], noise)


def week_like_recent_months(measured: Measured, facts: MonthFacts) -> AuditResult:
    window = facts.month
    counts = pickups_by_hour_of_week(calendar_of(measured).by_hour)
    fit = week_fit(counts, window.month, facts.neighbours)
    if fit is None:
        return AuditResult(
            passed=True,
            metadata={"compared_with": facts.compared_with(), "judged": "no published neighbour kept its week"},
        )
    trips = sum(counts)
    if trips < WEEK_JUDGED_FROM_TRIPS:
        return AuditResult(
            passed=True,
            metadata={
                "compared_with": facts.compared_with(),
                "judged": f"no: {trips:,} pickups, judged from {WEEK_JUDGED_FROM_TRIPS:,}",
                "distance_as_dated": ratio(fit.as_dated),
            },
        )
    undated = fit.explained_by_shift
    shift = _shift_text(fit.best_shift)
    return AuditResult(
        passed=not undated,
        severity=ERROR,
        description=(
            f"{window.month}'s pickups by weekday and hour lie {fit.as_dated:.3f} from the week of "
            f"{facts.compared_with()} as dated, and {fit.at_best_shift:.3f} with every pickup {shift}: the trips "
            "are not dated as they happened (a month of another year re-dated, whose weekdays fall on other dates, "
            "or clocks off by hours). Ask for the file of the month named."
            if undated
            else None
        ),
        metadata={
            "distance_as_dated": ratio(fit.as_dated),
            "best_shift": _shift_text(fit.best_shift) if fit.best_shift else "none",
            "distance_at_best_shift": ratio(fit.at_best_shift),
            "distance_by_chance": ratio(fit.noise),
            "held_back_below": f"{SHIFT_EXPLAINS_BELOW}x the distance as dated",
            "compared_with": facts.compared_with(),
        },
    )


# A day is compared with the others only from this many pickups: two nearly empty days are alike by chance.
REPEATED_DAY_MIN_TRIPS = 50
# Two days repeat each other when their (hour, zone) counts differ by under this share of what chance predicts
# for two independent days at their rates (Poisson counts; a copied day differs by nothing).
REPEATED_BELOW_CHANCE = 0.1


def _chance_difference(first: np.ndarray, second: np.ndarray) -> float:
    """What two independent days' cell counts are expected to differ by, summed over cells: each cell a pair of
    Poisson counts with the two days' mean rate (|X-Y| of a Skellam variable: 2m e^-2m (I0(2m) + I1(2m)))."""
    rate = (first + second) / 2
    return float((2 * rate * (i0e(2 * rate) + i1e(2 * rate))).sum())


def repeated_days(days: Sequence[date], counts: np.ndarray) -> list[tuple[date, date, float]]:
    """Each later day that repeats an earlier one: (earlier, later, their difference against chance's)."""
    busy = [index for index in range(len(days)) if counts[index].sum() >= REPEATED_DAY_MIN_TRIPS]
    found = []
    for position, later in enumerate(busy):
        for earlier in busy[:position]:
            difference = float(np.abs(counts[later] - counts[earlier]).sum())
            chance = _chance_difference(counts[later], counts[earlier])
            if chance and difference < REPEATED_BELOW_CHANCE * chance:
                found.append((days[earlier], days[later], difference / chance))
                break
    return found


def _runs(pairs: Sequence[tuple[date, date, float]]) -> list[str]:
    """Consecutive copies as one span: ``02-08..02-14 repeat 02-01..02-07``."""
    spans: list[list[tuple[date, date, float]]] = []
    for pair in pairs:
        last = spans[-1][-1] if spans else None
        if last and pair[1] - last[1] == timedelta(days=1) and pair[0] - last[0] == timedelta(days=1):
            spans[-1].append(pair)
        else:
            spans.append([pair])
    return [
        f"{span[0][1]:%Y-%m-%d} repeats {span[0][0]:%Y-%m-%d}"
        if len(span) == 1
        else f"{span[0][1]:%Y-%m-%d}..{span[-1][1]:%m-%d} repeat {span[0][0]:%Y-%m-%d}..{span[-1][0]:%m-%d}"
        for span in spans
    ]


def no_repeated_days(measured: Measured, facts: MonthFacts) -> AuditResult:
    cells = calendar_of(measured).day_cells
    pairs = repeated_days(cells.days, cells.counts)
    spans = _runs(pairs)
    judged = sum(1 for row in cells.counts if row.sum() >= REPEATED_DAY_MIN_TRIPS)
    return AuditResult(
        passed=not pairs,
        severity=ERROR,
        description=(
            f"{len(pairs)} of {facts.month.month}'s days repeat another day's pickups zone by zone and hour by hour "
            f"({listed(spans, 5)}): real days never do, a copied day or week does. Ask for a clean file."
            if pairs
            else None
        ),
        metadata={
            "days_compared": judged,
            "repeated_days": len(pairs),
            "repeats": listed(spans, 10),
            "repeated_below": f"{REPEATED_BELOW_CHANCE}x the difference chance predicts",
        },
    )
