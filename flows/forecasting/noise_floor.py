"""The best error any forecast can reach on sample data: forecasting with the true Poisson rate."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from flows.forecasting.backtest import error_metrics


def true_rates(truth_dir: Path, months: list[str]) -> pd.DataFrame | None:
    paths = [truth_dir / f"true_hourly_rates_{month}.parquet" for month in months]
    if not all(path.exists() for path in paths):
        return None
    return pd.concat([pd.read_parquet(path) for path in paths], ignore_index=True)


def noise_floor(backtest: pd.DataFrame, truth_dir: Path) -> dict | None:
    """Metrics of the true rate over the backtest's (hour, zone) cells; ``None`` without truth files."""
    cells = backtest.drop_duplicates(["pickup_hour", "pulocationid"])[["pickup_hour", "pulocationid", "total_rides"]]
    months = sorted({f"{hour:%Y-%m}" for hour in cells.pickup_hour})
    truth = true_rates(truth_dir, months)
    if truth is None:
        return None
    joined = cells.merge(truth, on=["pickup_hour", "pulocationid"], how="inner")
    if len(joined) != len(cells):
        return None
    metrics = error_metrics(joined.assign(candidate="true_rate", predicted=joined.true_rate), ["candidate"])
    return metrics.iloc[0][["mae", "rmse", "wape"]].to_dict()
