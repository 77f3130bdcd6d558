"""Honest model selection: the champion is chosen on earlier weeks and scored on a later week it never saw.

Each backtest week after the first ``selection_weeks`` is held out once: the candidates' errors on
every week before it choose a champion, whose forecasts on the held-out week are scored against
seasonal naive (and the noise floor, on sample data) and whose intervals, calibrated on the same
earlier weeks, are checked by the share of actuals they hold. The procedure scored is the one the
run applies last: the final champion is chosen on every backtest week. Choosing on all the weeks
before, not a fixed few, keeps a near tie between two candidates from flipping the choice week by week.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from flows.forecasting.backtest import BASELINE, choose_champion, error_metrics
from flows.forecasting.intervals import LEVELS, IntervalModel, coverage, fit_intervals

BOOTSTRAP_SAMPLES = 1000
BOOTSTRAP_RANGE = (5, 95)


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

    def row(self) -> dict:
        low, high = self.ratio_range
        return {
            "held-out week": f"{self.week:%Y-%m-%d}",
            "chosen on": ", ".join(f"{week:%m-%d}" for week in self.chosen_on),
            "champion": self.champion,
            "champion MAE": round(self.mae, 3),
            "naive MAE": round(self.naive_mae, 3),
            "MAE / naive": round(self.ratio, 3),
            "90% range": f"{low:.2f}-{high:.2f}",
            "MAE / floor": round(self.mae / self.floor_mae, 3) if self.floor_mae else "",
            **{f"{level}% coverage": round(share, 3) for level, share in self.coverage.items()},
        }


@dataclass(frozen=True)
class Selection:
    """The run's held-out evaluations and its final choice: champion, intervals, and the weeks they came from."""

    held_out: list[HeldOutWeek]
    forecasts: pd.DataFrame  # the held-out weeks' champion forecasts with their intervals and naive's
    champion: str
    chosen_on: tuple[pd.Timestamp, ...]
    intervals: IntervalModel

    def table(self) -> pd.DataFrame:
        return pd.DataFrame([week.row() for week in self.held_out])

    def summary(self) -> dict[str, float]:
        """The held-out figures a model version is known by."""
        ratios = [week.ratio for week in self.held_out]
        inside = self.forecasts
        shares = coverage(inside.total_rides, inside)
        return {
            "held_out_weeks": len(self.held_out),
            "held_out_mae": round(float((inside.predicted - inside.total_rides).abs().mean()), 4),
            "held_out_mae_vs_naive_median": round(float(np.median(ratios)), 4),
            "held_out_mae_vs_naive_worst": round(float(max(ratios)), 4),
            **{f"held_out_coverage_{level}": round(share, 4) for level, share in shares.items()},
        }

    def by_zone(self) -> pd.DataFrame:
        """Per zone over the held-out weeks: the chosen champions' MAE against naive's, and coverage."""
        rows = self.forecasts.assign(
            error=(self.forecasts.predicted - self.forecasts.total_rides).abs(),
            naive_error=(self.forecasts.naive - self.forecasts.total_rides).abs(),
        )
        for level in LEVELS:
            rows[f"inside_{level}"] = (rows.total_rides >= rows[f"lower_{level}"]) & (
                rows.total_rides <= rows[f"upper_{level}"]
            )
        grouped = rows.groupby("pulocationid")
        table = pd.DataFrame({"mae": grouped.error.mean(), "naive_mae": grouped.naive_error.mean()})
        for level in LEVELS:
            table[f"coverage_{level}"] = grouped[f"inside_{level}"].mean()
        return table.assign(ratio=table.mae / table.naive_mae).reset_index()


def select(
    backtest: pd.DataFrame,
    selection_weeks: int,
    scenarios: Collection[str] = (),
    floor_of=None,
    seed: int = 0,
) -> Selection:
    """Hold out every week after the first ``selection_weeks``; choose the final champion on every week.

    ``backtest`` has one row per candidate, hour and zone, with the week's start in ``origin``;
    ``floor_of(rows)`` gives the noise floor's MAE on a week's rows (``None`` without a truth).
    """
    weeks = sorted(backtest.origin.unique())
    if len(weeks) <= selection_weeks:
        msg = f"{len(weeks)} backtest weeks leave none to hold out after {selection_weeks} selection weeks"
        raise ValueError(msg)
    if BASELINE not in set(backtest.candidate):
        raise ValueError(f"the backtest has no {BASELINE} forecasts to measure the champion against")
    held_out, forecasts = [], []
    rng = np.random.default_rng(seed)
    for index in range(selection_weeks, len(weeks)):
        chosen_on = tuple(pd.Timestamp(week) for week in weeks[:index])
        champion, intervals = _choose(backtest, chosen_on, scenarios)
        week_rows = _week_forecasts(backtest, weeks[index], champion, intervals)
        forecasts.append(week_rows)
        naive_mae = float((week_rows.naive - week_rows.total_rides).abs().mean())
        held_out.append(
            HeldOutWeek(
                week=pd.Timestamp(weeks[index]),
                chosen_on=chosen_on,
                champion=champion,
                mae=float((week_rows.predicted - week_rows.total_rides).abs().mean()),
                naive_mae=naive_mae,
                ratio_range=bootstrap_ratio(week_rows, rng),
                coverage=coverage(week_rows.total_rides, week_rows),
                floor_mae=floor_of(week_rows) if floor_of else None,
            )
        )
    final_weeks = tuple(pd.Timestamp(week) for week in weeks)
    champion, intervals = _choose(backtest, final_weeks, scenarios)
    return Selection(held_out, pd.concat(forecasts, ignore_index=True), champion, final_weeks, intervals)


def _choose(
    backtest: pd.DataFrame, weeks: Sequence[pd.Timestamp], scenarios: Collection[str]
) -> tuple[str, IntervalModel]:
    earlier = backtest[backtest.origin.isin(list(weeks))]
    champion = choose_champion(error_metrics(earlier, ["candidate"]), scenarios)
    own = earlier[earlier.candidate == champion]
    return champion, fit_intervals(own.predicted, own.total_rides)


def _week_forecasts(backtest: pd.DataFrame, week, champion: str, intervals: IntervalModel) -> pd.DataFrame:
    rows = backtest[backtest.origin == week]
    keys = ["pickup_hour", "pulocationid"]
    naive = rows[rows.candidate == BASELINE][[*keys, "predicted"]].rename(columns={"predicted": "naive"})
    chosen = rows[rows.candidate == champion].reset_index(drop=True)
    chosen = pd.concat([chosen, intervals.bounds(chosen.predicted)], axis=1)
    # Naive has no forecast where the week before is missing: both are scored on the same hours.
    return chosen.merge(naive, on=keys, how="inner").dropna(subset=["naive"])


def bootstrap_ratio(rows: pd.DataFrame, rng: np.random.Generator) -> tuple[float, float]:
    """A range for MAE / naive MAE: zone-days resampled with replacement (hours of one zone-day move together)."""
    blocks = (
        rows.assign(
            day=rows.pickup_hour.dt.normalize(),
            error=(rows.predicted - rows.total_rides).abs(),
            naive_error=(rows.naive - rows.total_rides).abs(),
        )
        .groupby(["pulocationid", "day"])[["error", "naive_error"]]
        .sum()
    )
    draws = rng.integers(0, len(blocks), size=(BOOTSTRAP_SAMPLES, len(blocks)))
    errors, naive = blocks.error.to_numpy()[draws].sum(axis=1), blocks.naive_error.to_numpy()[draws].sum(axis=1)
    low, high = np.percentile(errors / np.maximum(naive, 1e-9), BOOTSTRAP_RANGE)
    return float(low), float(high)
