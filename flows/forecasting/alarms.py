"""The alarms on a scored forecast day: what a demand planner is told to look at, and how loudly.

- The city's bias: a day's forecast rides over or under its rides by more than the version's held-out
  ordinary days were (their median plus or minus three standard deviations, read from their median absolute
  deviation: ``levels.bias_band``) warns; a version without one is held to 10% either way. A day's weather or
  an event can do that once; a model gone wrong does it every day, which the last alarm catches.
- The zones' 80% intervals: the share of a day's zone-hours inside them outside the range the version's
  held-out days set (their mean plus or minus three standard deviations: ``levels.coverage_band``) warns; a
  version without one is held to 60-95%.
- Beaten by naive: over the last 7 scored days, the zones' summed errors above seasonal naive's is an
  error, and blocks what reads the scores: the serving version is worse than the baseline it must beat.

The first two ranges are the level's own day-to-day spread as the version's held-out days showed it, so a
healthy month warns on a day or two, not on every shock a fixed limit would call a fault.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from flows.forecasting.accuracy import pooled

BIAS_RANGE = (-0.10, 0.10)
COVERAGE_RANGE = (0.60, 0.95)
ROLLING_DAYS = 7
RATIO_LIMIT = 1.0
WARN, ERROR = "WARN", "ERROR"


@dataclass(frozen=True)
class Alarm:
    """One check's rule, as Dagster shows it: its name, how loud a failure is, and what it means."""

    name: str
    severity: str
    blocking: bool
    description: str


@dataclass(frozen=True)
class HealthyRanges:
    """The ranges a version's healthy days fall in (shares), from its held-out days; ``None``: the fixed default."""

    city_bias: tuple[float, float] | None = None
    zone_coverage_80: tuple[float, float] | None = None


@dataclass(frozen=True)
class Outcome:
    alarm: Alarm
    passed: bool
    metadata: dict[str, float | int | str] = field(default_factory=dict)


CITY_BIAS = Alarm(
    "city_bias_in_range",
    WARN,
    False,
    "The city's bias of the day (its forecast rides minus its rides, as a share of its rides) is inside the range the "
    "serving version's held-out ordinary days set (their median +/- 3 standard deviations, at least +/- 5 points; "
    f"{BIAS_RANGE[0]:+.0%} to {BIAS_RANGE[1]:+.0%} for a version without one).",
)
ZONE_COVERAGE = Alarm(
    "zone_coverage_80_in_range",
    WARN,
    False,
    "The share of the day's zone-hours inside their 80% interval is inside the range the serving version's held-out "
    f"days set (their mean +/- 3 standard deviations; {COVERAGE_RANGE[0]:.0%}-{COVERAGE_RANGE[1]:.0%} for a version "
    "without one).",
)
BEATS_NAIVE = Alarm(
    "beats_naive_over_7_days",
    ERROR,
    True,
    f"Over the last {ROLLING_DAYS} scored days up to this one, the zones' summed absolute error is at most "
    f"{RATIO_LIMIT:g}x seasonal naive's: the serving version beats the baseline.",
)
ALARMS = (CITY_BIAS, ZONE_COVERAGE, BEATS_NAIVE)


def evaluate(
    day_scores: pd.DataFrame, recent_scores: pd.DataFrame, healthy: HealthyRanges | None = None
) -> list[Outcome]:
    """Each alarm on one scored day; ``recent_scores`` holds the scores of the days before it (any number);
    ``healthy`` the serving version's ranges of a healthy day."""
    day = pd.Timestamp(day_scores.day.iloc[0]).normalize()
    city = pooled(day_scores, "city")
    zones = pooled(day_scores)
    days = pd.to_datetime(recent_scores.day) if len(recent_scores) else pd.Series(dtype="datetime64[ns]")
    window = recent_scores[(days > day - pd.Timedelta(days=ROLLING_DAYS)) & (days < day)]
    rolling = pooled(pd.concat([window, day_scores], ignore_index=True))
    days_in_window = pd.concat([pd.to_datetime(window.day), pd.Series([day])]).nunique()
    healthy = healthy or HealthyRanges()
    bias_low, bias_high = healthy.city_bias or BIAS_RANGE
    low, high = healthy.zone_coverage_80 or COVERAGE_RANGE
    return [
        Outcome(
            CITY_BIAS,
            bias_low <= city["bias"] <= bias_high,
            {"city_bias_pct": round(100 * city["bias"], 2), **_range_metadata(bias_low, bias_high, 2)},
        ),
        Outcome(
            ZONE_COVERAGE,
            low <= zones["coverage_80"] <= high,
            {"coverage_80_pct": round(100 * zones["coverage_80"], 1), **_range_metadata(low, high, 1)},
        ),
        Outcome(
            BEATS_NAIVE,
            not rolling["ratio_to_naive"] > RATIO_LIMIT,
            {"ratio_to_naive": round(rolling["ratio_to_naive"], 4), "days": int(days_in_window)},
        ),
    ]


def _range_metadata(low: float, high: float, digits: int) -> dict[str, float | int | str]:
    return {"healthy_low_pct": round(100 * low, digits), "healthy_high_pct": round(100 * high, digits)}
