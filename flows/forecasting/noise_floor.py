"""The best error any forecast can reach on sample data: forecasting with the true Poisson rate."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from flows.forecasting.backtest import error_metrics


def true_rates(truth_dir: Path | None, months: list[str]) -> pd.DataFrame | None:
    if truth_dir is None:
        return None
    paths = [truth_dir / f"true_hourly_rates_{month}.parquet" for month in months]
    if not all(path.exists() for path in paths):
        return None
    return pd.concat([pd.read_parquet(path) for path in paths], ignore_index=True)


def noise_floor(backtest: pd.DataFrame, truth_dir: Path | None) -> dict[str, float] | None:
    """Metrics of the true rate over the backtest's (hour, zone) cells; ``None`` without truth files."""
    forecasts = _true_rate_forecasts(backtest, truth_dir)
    if forecasts is None:
        return None
    metrics = error_metrics(forecasts, ["candidate"]).iloc[0]
    return {name: metrics[name] for name in ("mae", "rmse", "wape")}


def noise_floor_by_zone(backtest: pd.DataFrame, truth_dir: Path | None) -> pd.DataFrame | None:
    """The noise floor of each zone: ``pulocationid, mae, rmse, wape, hours``."""
    forecasts = _true_rate_forecasts(backtest, truth_dir)
    return None if forecasts is None else error_metrics(forecasts, ["pulocationid"])


def _true_rate_forecasts(backtest: pd.DataFrame, truth_dir: Path | None) -> pd.DataFrame | None:
    cells = backtest.drop_duplicates(["pickup_hour", "pulocationid"])[["pickup_hour", "pulocationid", "total_rides"]]
    months = sorted(set(cells.pickup_hour.drop_duplicates().dt.strftime("%Y-%m")))
    truth = true_rates(truth_dir, months)
    if truth is None:
        return None
    joined = cells.merge(truth, on=["pickup_hour", "pulocationid"], how="inner")
    if len(joined) != len(cells):
        return None
    return joined.assign(candidate="true_rate", predicted=joined.true_rate)
