"""Champion and challenger: a newly trained version serves only if it beats the serving one on the same weeks.

Both versions' procedures are scored on the new run's held-out weeks, with the same data: the
challenger's held-out forecasts (each week's champion, chosen on the weeks before) against the serving
version's model, refitted and backtested on those weeks exactly as the challenger's candidates were. The
challenger is promoted only if the upper end of its MAE ratio to the serving version, with whole days
resampled, is below 1: a few lucky days do not replace a model that works. With no version serving, the
first one serves.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from flows.forecasting.candidates import needs_weather
from flows.forecasting.selection import bootstrap_ratio


@dataclass(frozen=True)
class Decision:
    """Whether ``challenger`` serves instead of ``serving``, why, and the figures the reason rests on."""

    challenger: str
    serving: str | None
    promoted: bool
    reason: str
    challenger_mae: float | None = None
    serving_mae: float | None = None
    ratio: float | None = None
    ratio_range: tuple[float, float] | None = None
    days: int = 0

    @property
    def now_serving(self) -> str:
        return self.challenger if self.promoted or self.serving is None else self.serving

    def as_metadata(self) -> dict[str, str | float | int | bool]:
        """Flat figures for a model version's metadata, a run facet and DataHub's properties."""
        figures = {key: value for key, value in asdict(self).items() if value is not None and key != "ratio_range"}
        if self.ratio_range is not None:
            figures["ratio_low"], figures["ratio_high"] = (round(value, 4) for value in self.ratio_range)
        return {key: round(value, 4) if isinstance(value, float) else value for key, value in figures.items()}


@dataclass(frozen=True)
class Comparison:
    """How a run measures itself against the version serving: the candidates it backtests (its own, then the serving
    version's candidate when it is not among them, ``compared_only``), or why the two cannot be compared."""

    candidates: list[str]
    compared_only: list[str]
    incomparable: str | None = None


def plan_comparison(candidates: list[str], serving_champion: str | None, use_weather: bool) -> Comparison:
    """The serving version's candidate is backtested on this run's weeks with this run's data; a run that reads no
    weather cannot backtest a candidate that needs it, so the serving version keeps serving (a run with weather can
    still put a model without it in its place)."""
    if serving_champion is None or serving_champion in candidates:
        return Comparison(candidates, [])
    if needs_weather([serving_champion]) and not use_weather:
        why = (
            f"its candidate {serving_champion} needs the weather, which this run does not read (--use_weather false), "
            "so the two cannot be scored on the same data; train with --use_weather true to compare them"
        )
        return Comparison(candidates, [], incomparable=why)
    return Comparison([*candidates, serving_champion], [serving_champion])


def incomparable(challenger: str, serving: str, why: str) -> Decision:
    """``challenger`` could not be scored against ``serving`` (:func:`plan_comparison` says why): it does not serve."""
    return Decision(challenger, serving, False, f"{serving} keeps serving: {why}")


def decide(
    challenger: str,
    challenger_forecasts: pd.DataFrame,
    serving: str | None,
    serving_forecasts: pd.DataFrame | None,
    seed: int = 0,
) -> Decision:
    """Promote ``challenger`` if it beats ``serving`` beyond the noise of the days both forecast.

    Both frames hold ``pickup_hour, pulocationid, predicted, total_rides`` for the held-out hours.
    """
    if serving is None or serving_forecasts is None:
        return Decision(challenger, None, True, f"{challenger} is the first version: nothing serves yet")
    keys = ["pickup_hour", "pulocationid"]
    paired = challenger_forecasts[[*keys, "predicted", "total_rides"]].merge(
        serving_forecasts[[*keys, "predicted"]].rename(columns={"predicted": "naive"}), on=keys, how="inner"
    )
    if paired.empty:
        reason = f"{challenger} and {serving} forecast no hour in common: {serving} keeps serving"
        return Decision(challenger, serving, False, reason)
    errors = (paired.predicted - paired.total_rides).abs()
    serving_errors = (paired.naive - paired.total_rides).abs()
    ratio = float(errors.sum() / max(serving_errors.sum(), 1e-9))
    low, high = bootstrap_ratio(paired, np.random.default_rng(seed))
    days = int(paired.pickup_hour.dt.normalize().nunique())
    measured = f"{ratio:.3f}x {serving}'s MAE on the same {days} days (days resampled: {low:.2f}-{high:.2f})"
    promoted = high < 1.0
    kept = f"{serving} keeps serving: {challenger} at {measured}"
    reason = f"{challenger} promoted: {measured}" if promoted else kept
    return Decision(
        challenger, serving, promoted, reason, challenger_mae=float(errors.mean()),
        serving_mae=float(serving_errors.mean()), ratio=ratio, ratio_range=(low, high), days=days,
    )  # fmt: skip
