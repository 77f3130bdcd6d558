"""Pictures of a training run: forecast against actuals for the busiest zones."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from forecast_assets.sources.zones import load_zones  # noqa: E402

HISTORY_DAYS = 7


def forecast_figure(
    actuals: pd.DataFrame, backtest: pd.DataFrame, forecast: pd.DataFrame, champion: str, zones: int = 4
):
    """One panel per zone: last week's actuals, the champion's backtest, and the new forecast."""
    names = {zone.location_id: zone.name for zone in load_zones()}
    busiest = actuals.groupby("pulocationid").total_rides.sum().nlargest(zones).index
    start = forecast.pickup_hour.min() - pd.Timedelta(days=HISTORY_DAYS)
    figure, axes = plt.subplots(len(busiest), 1, figsize=(11, 2.6 * len(busiest)), sharex=True)
    for axis, zone in zip(axes, busiest, strict=True):
        seen = actuals[(actuals.pulocationid == zone) & (actuals.pickup_hour >= start)]
        tested = backtest[(backtest.pulocationid == zone) & (backtest.candidate == champion)]
        ahead = forecast[forecast.pulocationid == zone]
        axis.plot(seen.pickup_hour, seen.total_rides, color="black", linewidth=1, label="actual rides")
        axis.plot(tested.pickup_hour, tested.predicted, color="tab:blue", linewidth=1, label=f"backtest ({champion})")
        axis.plot(ahead.pickup_hour, ahead.forecasted_total_rides, color="tab:red", linewidth=1.5, label="forecast")
        axis.set_title(f"zone {zone}: {names.get(zone, '?')}", fontsize=10, loc="left")
        axis.set_ylabel("rides / hour")
    axes[0].legend(loc="upper left", fontsize=8, ncols=3)
    figure.tight_layout()
    return figure


def save_png(figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    return path


def backtest_figure(metrics: pd.DataFrame, floor: dict | None):
    """MAE and RMSE per candidate, with the noise floor when the sample's true rates are known."""
    ordered = metrics.sort_values("mae")
    figure, axis = plt.subplots(figsize=(7, 3.2))
    positions = range(len(ordered))
    axis.bar([p - 0.2 for p in positions], ordered.mae, width=0.4, label="MAE", color="tab:blue")
    axis.bar([p + 0.2 for p in positions], ordered.rmse, width=0.4, label="RMSE", color="tab:gray")
    if floor:
        axis.axhline(floor["mae"], color="tab:red", linestyle="--", linewidth=1, label="noise floor MAE")
    axis.set_xticks(list(positions), ordered.candidate)
    axis.set_ylabel("rides / hour")
    axis.set_title("Backtest error per candidate (rolling origin)", fontsize=10, loc="left")
    axis.legend(fontsize=8)
    figure.tight_layout()
    return figure
