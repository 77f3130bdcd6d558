"""Candidate forecasters: the seasonal-naive baseline and gradient boosting, with or without weather."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from flows.forecasting.features import WEATHER_FEATURES

BOOSTING_PARAMS = {"loss": "poisson", "learning_rate": 0.06, "max_iter": 300, "max_leaf_nodes": 31, "random_state": 0}


@dataclass
class SeasonalNaive:
    """The same hour one week earlier."""

    name: str = "seasonal_naive"
    uses_weather: bool = False
    scenario: bool = False
    params: dict[str, Any] = field(default_factory=lambda: {"lag_hours": 168})

    def fit(self, rows: pd.DataFrame, features: list[str]) -> SeasonalNaive:
        return self

    def predict(self, rows: pd.DataFrame, features: list[str]) -> np.ndarray:
        return rows["lag_168"].to_numpy(dtype=float)


@dataclass
class GradientBoosting:
    """Poisson gradient boosting on calendar, lag and seasonal features (plus weather if asked)."""

    name: str = "gbm"
    uses_weather: bool = False
    scenario: bool = False
    params: dict[str, Any] = field(default_factory=lambda: dict(BOOSTING_PARAMS))
    model: Any = None

    def _columns(self, features: list[str]) -> list[str]:
        return features if self.uses_weather else [f for f in features if f not in WEATHER_FEATURES]

    def fit(self, rows: pd.DataFrame, features: list[str]) -> GradientBoosting:
        # Imported here: scikit-learn takes seconds to import, and most Metaflow tasks never fit.
        from sklearn.ensemble import HistGradientBoostingRegressor

        columns = self._columns(features)
        self.model = HistGradientBoostingRegressor(**self.params).fit(rows[columns], rows["total_rides"])
        return self

    def predict(self, rows: pd.DataFrame, features: list[str]) -> np.ndarray:
        return self.model.predict(rows[self._columns(features)])


CANDIDATES = {
    "seasonal_naive": lambda: SeasonalNaive(),
    "gbm": lambda: GradientBoosting(),
    "gbm_weather": lambda: GradientBoosting(name="gbm_weather", uses_weather=True),
}


def make_candidate(name: str):
    try:
        return CANDIDATES[name]()
    except KeyError as err:
        msg = f"Unknown candidate model {name!r}; choose from {', '.join(CANDIDATES)}"
        raise ValueError(msg) from err


def needs_weather(names: list[str]) -> bool:
    return any(make_candidate(name).uses_weather for name in names)
