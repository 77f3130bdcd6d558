"""A candidate forecaster from a package of its own: the same hour a week earlier, grown by the trend of the weeks
before (which it reads from the hour itself, ``pickup_hour``, not from a feature the flow builds)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd


@dataclass
class Trend:
    name: str = "trend"
    weather: str | None = None
    params: dict[str, Any] = field(default_factory=lambda: {"lag_hours": 168})
    weekly_growth: float = 0.0
    fitted_until: pd.Timestamp | None = None

    def used_features(self, features: list[str] | None = None) -> list[str]:
        return ["lag_168", "pickup_hour"]

    def fit(self, rows: pd.DataFrame, features: list[str]) -> Trend:
        known = rows.dropna(subset=["lag_168"])
        known = known[known["lag_168"] > 0]
        ratio = (known["total_rides"].sum() / known["lag_168"].sum()) if len(known) else 1.0
        self.weekly_growth = float(ratio - 1)
        self.fitted_until = rows["pickup_hour"].max()
        return self

    def predict(self, rows: pd.DataFrame, features: list[str]) -> np.ndarray:
        # The lag is a week old: grow it by a week's trend, and by more for hours further past the fitted data.
        weeks_ahead = 1 + (rows["pickup_hour"] - self.fitted_until).dt.total_seconds().clip(lower=0) / (7 * 86400)
        grown: np.ndarray = rows["lag_168"].to_numpy(dtype=float) * (1 + self.weekly_growth * weeks_ahead.to_numpy())
        return grown
