"""Honest model selection: the champion is chosen on earlier weeks and scored on a later week it never saw.

Each backtest week after the first ``selection_weeks`` is held out once: the candidates' errors on
every week before it choose a champion, whose forecasts on the held-out week are scored against
seasonal naive (and the noise floor, on sample data) and whose intervals, each day's calibrated
on the champion's errors of the hours before it, are checked by the share of actuals they hold. The
procedure scored is the one the run applies last: the final champion is chosen on every backtest
week. Choosing on all the weeks before, not a fixed few, keeps a near tie between two candidates
from flipping the choice week by week.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from flows.forecasting.backtest import BASELINE, error_metrics, ranked
from flows.forecasting.features import in_holiday_period
from flows.forecasting.intervals import (
    LEVELS,
    POOLED,
    IntervalModel,
    count_aware_groups,
    coverage,
    inside,
    intervals_at,
)
from taxi_core.errors import PipelineError

BOOTSTRAP_SAMPLES = 1000
BOOTSTRAP_RANGE = (5, 95)
# The held-out table's column of each week's ratio range.
RANGE_COLUMN = "90% range (days resampled)"


class NotEnoughWeeks(ValueError, PipelineError):
    """The backtest cannot hold a week out: too few weeks, or no baseline to score against."""


@dataclass(frozen=True)
class HeldOutWeek:
    """One rolling evaluation: the week held out, the weeks that chose its champion, and how it did."""

    week: pd.Timestamp
    chosen_on: tuple[pd.Timestamp, ...]
    champion: str
    mae: float
    naive_mae: float
    ratio_range: tuple[float, float]
    coverage: dict[int, float]
    floor_mae: float | None = None

    @property
    def ratio(self) -> float:
        return self.mae / self.naive_mae

    def row(self) -> dict[str, str | float]:
        low, high = self.ratio_range
        return {
            "held-out week": f"{self.week:%Y-%m-%d}",
            "chosen on": ", ".join(f"{week:%m-%d}" for week in self.chosen_on),
            "champion": self.champion,
            "champion MAE": round(self.mae, 3),
            "naive MAE": round(self.naive_mae, 3),
            "MAE / naive": round(self.ratio, 3),
            RANGE_COLUMN: f"{low:.2f}-{high:.2f}",
            "MAE / floor": round(self.mae / self.floor_mae, 3) if self.floor_mae else "",
            **{f"{level}% coverage": round(share, 3) for level, share in self.coverage.items()},
        }


@dataclass(frozen=True)
class Selection:
    """The run's held-out evaluations and its final choice: champion, why, intervals, and the weeks they came from."""

    held_out: list[HeldOutWeek]
    forecasts: pd.DataFrame  # the held-out weeks' champion forecasts with their intervals and naive's
    final: Choice
    chosen_on: tuple[pd.Timestamp, ...]

    @property
    def champion(self) -> str:
        return self.final.champion

    @property
    def intervals(self) -> IntervalModel:
        return self.final.intervals

    def table(self) -> pd.DataFrame:
        return pd.DataFrame([week.row() for week in self.held_out])

    def summary(self) -> dict[str, float]:
        """The held-out figures a model version is known by."""
        ratios = [week.ratio for week in self.held_out]
        inside = self.forecasts
        shares = coverage(inside.total_rides, inside)
        weekly_80 = [week.coverage[80] for week in self.held_out]
        daily_80 = self.by("day").coverage_80
        return {
            "held_out_weeks": len(self.held_out),
            "held_out_mae": round(float((inside.predicted - inside.total_rides).abs().mean()), 4),
            "held_out_mae_vs_naive_median": round(float(np.median(ratios)), 4),
            "held_out_mae_vs_naive_worst": round(float(max(ratios)), 4),
            "held_out_ratio_high_worst": round(float(max(week.ratio_range[1] for week in self.held_out)), 4),
            **{f"held_out_coverage_{level}": round(share, 4) for level, share in shares.items()},
            "held_out_coverage_80_weekly_min": round(float(min(weekly_80)), 4),
            "held_out_coverage_80_weekly_max": round(float(max(weekly_80)), 4),
            "held_out_coverage_80_daily_min": round(float(daily_80.min()), 4),
        }

    def by(self, key: str) -> pd.DataFrame:
        """Over the held-out weeks, per ``pulocationid``, ``group`` (borough) or ``day``: the chosen champions' MAE
        against naive's, and the share of actuals inside each interval."""
        rows = self.forecasts.assign(
            day=self.forecasts.pickup_hour.dt.normalize(),
            error=(self.forecasts.predicted - self.forecasts.total_rides).abs(),
            naive_error=(self.forecasts.naive - self.forecasts.total_rides).abs(),
        )
        for level in LEVELS:
            rows[f"inside_{level}"] = inside(rows, level)
        grouped = rows.groupby(key)
        table = pd.DataFrame({"mae": grouped.error.mean(), "naive_mae": grouped.naive_error.mean()})
        for level in LEVELS:
            table[f"coverage_{level}"] = grouped[f"inside_{level}"].mean()
        return table.assign(ratio=table.mae / table.naive_mae).reset_index()

    def by_zone(self) -> pd.DataFrame:
        return self.by("pulocationid")


def select(
    backtest: pd.DataFrame,
    selection_weeks: int,
    scenarios: Collection[str] = (),
    floor_of: Callable[[pd.DataFrame], float | None] | None = None,
    seed: int = 0,
    groups: Mapping[int, str] | None = None,
) -> Selection:
    """Hold out every week after the first ``selection_weeks``; choose the final champion on every week.

    ``backtest`` has one row per candidate, hour and zone, with the week's start in ``origin``;
    ``floor_of(rows)`` gives the noise floor's MAE on a week's rows (``None`` without a truth);
    ``groups`` names each zone's group (its borough), in which the intervals are calibrated apart.
    """
    weeks = sorted(backtest.origin.unique())
    if len(weeks) <= selection_weeks:
        msg = f"{len(weeks)} backtest weeks leave none to hold out after {selection_weeks} selection weeks"
        raise NotEnoughWeeks(msg)
    if BASELINE not in set(backtest.candidate):
        raise NotEnoughWeeks(f"the backtest has no {BASELINE} forecasts to measure the champion against")
    # Intervals are calibrated per borough and, for forecasts of a few rides, per size of the forecast.
    backtest = backtest.assign(group=count_aware_groups(_group_of(backtest.pulocationid, groups), backtest.predicted))
    held_out, forecasts = [], []
    rng = np.random.default_rng(seed)
    for index in range(selection_weeks, len(weeks)):
        chosen_on = tuple(pd.Timestamp(week) for week in weeks[:index])
        choice = _choose(backtest, chosen_on, scenarios, rng)
        week_rows = _week_forecasts(backtest, weeks[index], choice)
        forecasts.append(week_rows)
        naive_mae = float((week_rows.naive - week_rows.total_rides).abs().mean())
        held_out.append(
            HeldOutWeek(
                week=pd.Timestamp(weeks[index]),
                chosen_on=chosen_on,
                champion=choice.champion,
                mae=float((week_rows.predicted - week_rows.total_rides).abs().mean()),
                naive_mae=naive_mae,
                ratio_range=bootstrap_ratio(week_rows, rng),
                coverage=coverage(week_rows.total_rides, week_rows),
                floor_mae=floor_of(week_rows) if floor_of else None,
            )
        )
    final_weeks = tuple(pd.Timestamp(week) for week in weeks)
    final = _choose(backtest, final_weeks, scenarios, rng)
    return Selection(held_out, pd.concat(forecasts, ignore_index=True), final, final_weeks)


@dataclass(frozen=True)
class Choice:
    """A champion, why it was chosen, and its intervals, all from the same weeks."""

    champion: str
    reason: str
    intervals: IntervalModel


def _choose(
    backtest: pd.DataFrame, weeks: Sequence[pd.Timestamp], scenarios: Collection[str], rng: np.random.Generator
) -> Choice:
    """The lowest-MAE candidate among those that beat naive on ``weeks`` beyond the weeks' noise; naive otherwise.

    Beating naive on two or three weeks by a few percent is often luck: a candidate qualifies only if
    the upper end of its ratio to naive, with whole days resampled, stays below 1.
    """
    earlier = backtest[backtest.origin.isin(list(weeks))]
    naive = earlier[earlier.candidate == BASELINE]
    ranking = ranked(error_metrics(earlier[~earlier.candidate.isin(list(scenarios))], ["candidate"]))
    ruled_out = []
    champion, reason = BASELINE, ""
    for candidate in ranking.candidate:
        if candidate == BASELINE:
            continue
        paired = _paired_with_naive(earlier[earlier.candidate == candidate], naive)
        low, high = bootstrap_ratio(paired, rng)
        ratio = _ratio(paired)
        if high < 1.0:
            champion = candidate
            reason = f"{candidate}: {ratio:.3f}x naive on {len(weeks)} weeks (days resampled: {low:.2f}-{high:.2f})"
            break
        ruled_out.append(f"{candidate} {ratio:.3f}x ({low:.2f}-{high:.2f})")
    if champion == BASELINE:
        reason = f"no candidate beat naive beyond the noise of {len(weeks)} weeks: " + ", ".join(ruled_out or ["none"])
    own = earlier[earlier.candidate == champion]
    return Choice(champion, reason, intervals_at(own, own.pickup_hour.max() + pd.Timedelta(hours=1)))


def _group_of(zones: pd.Series, groups: Mapping[int, str] | None) -> pd.Series:
    return zones.map(groups) if groups else pd.Series(POOLED, index=zones.index)


def _paired_with_naive(rows: pd.DataFrame, naive: pd.DataFrame) -> pd.DataFrame:
    keys = ["pickup_hour", "pulocationid"]
    baseline = naive[[*keys, "predicted"]].rename(columns={"predicted": "naive"})
    # Naive has no forecast where the week before is missing: both are scored on the same hours.
    return rows.merge(baseline, on=keys, how="inner").dropna(subset=["naive"])


def _ratio(rows: pd.DataFrame) -> float:
    naive = (rows.naive - rows.total_rides).abs().sum()
    return float((rows.predicted - rows.total_rides).abs().sum() / max(naive, 1e-9))


def _week_forecasts(backtest: pd.DataFrame, week: pd.Timestamp, choice: Choice) -> pd.DataFrame:
    """The champion's forecasts of ``week`` with naive's, and intervals as a daily forecast would have had them:
    each day's (``forecast_origin``) calibrated on the champion's errors of every hour before it."""
    rows = backtest[backtest.origin == week]
    chosen = _paired_with_naive(rows[rows.candidate == choice.champion], rows[rows.candidate == BASELINE])
    chosen = chosen.reset_index(drop=True)
    errors = backtest[backtest.candidate == choice.champion]
    bounds = []
    for day, forecast in chosen.groupby("forecast_origin"):
        if not isinstance(day, pd.Timestamp):
            raise TypeError(f"forecast_origin {day!r} is not a time")  # an internal invariant: the backtest's are
        intervals = intervals_at(errors, day)
        widths = intervals.bounds(forecast.predicted, forecast.group, in_holiday_period(forecast.pickup_hour))
        bounds.append(widths.set_axis(forecast.index))
    return pd.concat([chosen, pd.concat(bounds).sort_index()], axis=1)


def bootstrap_ratio(rows: pd.DataFrame, rng: np.random.Generator) -> tuple[float, float]:
    """A 90% range for MAE / naive MAE with whole days resampled: every zone shares a day's weather and shocks,
    so the days, not the zone-days, are the independent draws."""
    days = (
        rows.assign(
            day=rows.pickup_hour.dt.normalize(),
            error=(rows.predicted - rows.total_rides).abs(),
            naive_error=(rows.naive - rows.total_rides).abs(),
        )
        .groupby("day")[["error", "naive_error"]]
        .sum()
    )
    draws = rng.integers(0, len(days), size=(BOOTSTRAP_SAMPLES, len(days)))
    errors, naive = days.error.to_numpy()[draws].sum(axis=1), days.naive_error.to_numpy()[draws].sum(axis=1)
    low, high = np.percentile(errors / np.maximum(naive, 1e-9), BOOTSTRAP_RANGE)
    return float(low), float(high)
