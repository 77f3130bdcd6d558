"""Candidate forecasters: the seasonal-naive baseline, a Poisson GLM, gradient boosting on a zone's relative demand,
each zone's weekly profile, and the blend of the last two; with or without weather.

Weather candidates use the weather known at the forecast origin. The perfect-weather candidate uses
the target day's observed weather, which no forecaster has at the origin: it is a scenario (how much
knowing the weather would be worth), reported apart and never chosen as champion.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, Self

import numpy as np
import pandas as pd

from flows.forecasting.features import PERFECT_WEATHER_FEATURES, WEATHER_FEATURES

BOOSTING_PARAMS = {"loss": "poisson", "learning_rate": 0.12, "max_iter": 120, "max_leaf_nodes": 31, "random_state": 0}
# Newton-Cholesky: a few hundred one-hot columns and tens of thousands of rows, the case it is made for.
GLM_PARAMS = {"alpha": 1e-4, "max_iter": 100, "solver": "newton-cholesky", "weather_spline_knots": 5}
# A city holiday and a minor one move demand differently (features.NewYorkHolidays): each model learns each apart.
HOLIDAY_FLAGS = ["is_city_holiday", "is_minor_holiday"]
# What each weather setting means, recorded with the model version.
WEATHER_USE = {
    None: "none",
    "known": "observed weather of the newest day published at the forecast origin",
    "perfect": "observed weather of the target day (a scenario: not known at the origin)",
    "expected": (
        "fitted on each past day's observed weather; forecasts with the newest published day's temperature and "
        "the rain's lift averaged over the recent days"
    ),
}
# The recent days (up to this many) whose rain stands in for a target day's, which no one knows at the origin.
RAIN_DAYS = 90


class Forecaster(Protocol):
    """What every candidate is: named, told which weather it uses, fitted on rows and forecasting rows."""

    name: str
    weather: str | None
    params: dict[str, Any]

    def used_features(self, features: list[str] | None = None) -> list[str]: ...

    def fit(self, rows: pd.DataFrame, features: list[str]) -> Self: ...

    def predict(self, rows: pd.DataFrame, features: list[str]) -> np.ndarray: ...


def _weather_columns(weather: str | None) -> list[str]:
    return {None: [], "known": WEATHER_FEATURES, "perfect": PERFECT_WEATHER_FEATURES}[weather]


@dataclass
class SeasonalNaive:
    """The same hour one week earlier."""

    name: str = "seasonal_naive"
    weather: str | None = None
    params: dict[str, Any] = field(default_factory=lambda: {"lag_hours": 168})

    def used_features(self, features: list[str] | None = None) -> list[str]:
        return ["lag_168"]

    def fit(self, rows: pd.DataFrame, features: list[str]) -> SeasonalNaive:
        return self

    def predict(self, rows: pd.DataFrame, features: list[str]) -> np.ndarray:
        return rows["lag_168"].to_numpy(dtype=float)


@dataclass
class PoissonGlm:
    """Poisson regression: a level per zone, a profile per hour of the week, holidays, and weather as splines.

    Demand is multiplicative (a zone's level times the hour's share times the weather's lift), which a
    log link states directly; every zone's level is learned from all of its hours, not from a few lags.
    """

    name: str = "glm"
    weather: str | None = None
    params: dict[str, Any] = field(default_factory=lambda: dict(GLM_PARAMS))
    model: Any = None
    fill: dict[str, float] = field(default_factory=dict)

    def fit(self, rows: pd.DataFrame, features: list[str]) -> PoissonGlm:
        # Imported here: scikit-learn takes seconds to import, and most Metaflow tasks never fit.
        from sklearn.compose import ColumnTransformer
        from sklearn.linear_model import PoissonRegressor
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import OneHotEncoder, SplineTransformer

        weather = _weather_columns(self.weather)
        rows = rows.dropna(subset=weather)
        parts = [
            ("levels", OneHotEncoder(handle_unknown="ignore"), ["pulocationid", "hour_of_week"]),
            ("holidays", "passthrough", HOLIDAY_FLAGS),
        ]
        if weather:
            parts.append(("weather", SplineTransformer(n_knots=self.params["weather_spline_knots"]), weather))
        regression = PoissonRegressor(
            alpha=self.params["alpha"], max_iter=self.params["max_iter"], solver=self.params["solver"]
        )
        self.model = make_pipeline(ColumnTransformer(parts), regression)
        self.model.fit(rows[self.used_features()], rows["total_rides"])
        self.fill = {column: float(rows[column].median()) for column in weather}
        return self

    def predict(self, rows: pd.DataFrame, features: list[str]) -> np.ndarray:
        forecast: np.ndarray = self.model.predict(rows[self.used_features()].fillna(self.fill))
        return forecast

    def used_features(self, features: list[str] | None = None) -> list[str]:
        return ["pulocationid", "hour_of_week", *HOLIDAY_FLAGS, *_weather_columns(self.weather)]


@dataclass
class ExpectedWeatherGlm:
    """The Poisson GLM fitted on the weather each training day really had, forecasting with what the origin knows.

    Fitted on observed weather, the weather's effect is kept apart from the zone levels and the weekly
    profile (a rainy Tuesday no longer lifts every Tuesday). A target day's weather is unknown at the
    origin: its temperature is taken as the newest published day's (temperature persists), and the
    rain's lift is averaged over the recent days' rain (the expected lift, not a bet on rain or none).
    """

    name: str = "glm_weather"
    weather: str | None = "expected"
    params: dict[str, Any] = field(default_factory=lambda: {**GLM_PARAMS, "rain_days": RAIN_DAYS})
    model: Any = None
    rain_lift: float = 1.0
    fill: dict[str, float] = field(default_factory=dict)

    def used_features(self, features: list[str] | None = None) -> list[str]:
        return ["pulocationid", "hour_of_week", *HOLIDAY_FLAGS, *PERFECT_WEATHER_FEATURES, "tavg_known"]

    def fit(self, rows: pd.DataFrame, features: list[str]) -> ExpectedWeatherGlm:
        # Imported here: scikit-learn takes seconds to import, and most Metaflow tasks never fit.
        from sklearn.compose import ColumnTransformer
        from sklearn.linear_model import PoissonRegressor
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import OneHotEncoder, SplineTransformer

        rows = rows.dropna(subset=PERFECT_WEATHER_FEATURES)
        # Piecewise-linear splines: a weather effect that flattens (rain's lift stops growing) without wiggles.
        splines = SplineTransformer(n_knots=self.params["weather_spline_knots"], degree=1)
        parts = [
            ("levels", OneHotEncoder(handle_unknown="ignore"), ["pulocationid", "hour_of_week"]),
            ("holidays", "passthrough", HOLIDAY_FLAGS),
            ("weather", splines, PERFECT_WEATHER_FEATURES),
        ]
        regression = PoissonRegressor(
            alpha=self.params["alpha"], max_iter=self.params["max_iter"], solver=self.params["solver"]
        )
        self.model = make_pipeline(ColumnTransformer(parts), regression)
        self.model.fit(rows[_FITTED], rows["total_rides"])
        self.fill = {"tavg_same_day": float(rows.tavg_same_day.median())}
        self.rain_lift = self._rain_lift(rows)
        return self

    def _rain_lift(self, rows: pd.DataFrame) -> float:
        """The mean lift of the recent days' rain over a dry day: the model is log-additive, so one row tells."""
        daily_rain = rows.groupby(rows.pickup_hour.dt.normalize()).prcp_same_day.mean().tail(self.params["rain_days"])
        row = rows[_FITTED].iloc[[0]].assign(prcp_same_day=0.0)
        dry = self.model.predict(row)[0]
        rainy = self.model.predict(row.loc[row.index.repeat(len(daily_rain))].assign(prcp_same_day=daily_rain.values))
        return float(np.mean(rainy / dry))

    def predict(self, rows: pd.DataFrame, features: list[str]) -> np.ndarray:
        known = rows[["pulocationid", "hour_of_week", *HOLIDAY_FLAGS]].assign(
            prcp_same_day=0.0, tavg_same_day=rows.tavg_known.fillna(self.fill["tavg_same_day"])
        )
        forecast: np.ndarray = self.model.predict(known[_FITTED]) * self.rain_lift
        return forecast


# A minor holiday is compared with the same hours this far before and after it.
WEEK_APART = pd.Timedelta(days=7)


@dataclass(frozen=True)
class MinorHolidayLift:
    """How a zone's demand moves on a minor holiday, from the ones the training saw: each zone's rides on them
    against the same hours a week before and a week after (those the training holds, holidays left out), steadied by
    ``prior_rides`` toward every zone's lift together. With none seen, no lift (1).

    The weeks around, not the lags: a holiday in the window's first weeks has no lag inside the window, and a week
    on either side is what the day would have been, whatever the season's trend."""

    by_zone: pd.Series
    together: float

    FEATURES: ClassVar[tuple[str, ...]] = ("is_minor_holiday", "is_holiday")

    @classmethod
    def fit(cls, rows: pd.DataFrame, prior_rides: float = 50.0) -> MinorHolidayLift:
        seen = rows[rows.is_minor_holiday == 1]
        ordinary = rows[rows.is_holiday == 0].set_index(["pulocationid", "pickup_hour"]).total_rides
        around = [
            ordinary.reindex(pd.MultiIndex.from_arrays([seen.pulocationid, seen.pickup_hour + shift])).to_numpy()
            for shift in (-WEEK_APART, WEEK_APART)
        ]
        known = ~np.isnan(around[0]) | ~np.isnan(around[1])
        reference = np.where(known, np.nanmean(np.where(known, around, 0.0), axis=0), np.nan)
        compared = seen.assign(reference=reference)[known]
        sums = compared.groupby("pulocationid")[["total_rides", "reference"]].sum()
        before = float(sums.reference.sum())
        together = float(sums.total_rides.sum()) / before if before > 0 else 1.0
        by_zone = (sums.total_rides + prior_rides * together) / (sums.reference + prior_rides)
        return cls(by_zone.rename("minor_holiday_lift"), together)

    def of(self, rows: pd.DataFrame) -> np.ndarray:
        """Each row's factor: its zone's lift on a minor holiday, else 1."""
        lift = rows.pulocationid.map(self.by_zone).fillna(self.together)
        factor: np.ndarray = lift.where(rows.is_minor_holiday == 1, 1.0).to_numpy(dtype=float)
        return factor


# HistGradientBoostingRegressor's limit on a categorical feature's values (its max_bins, 255, less the missing bin).
MAX_ZONE_CATEGORIES = 254
_FITTED = ["pulocationid", "hour_of_week", *HOLIDAY_FLAGS, *PERFECT_WEATHER_FEATURES]


@dataclass
class GradientBoosting:
    """Poisson gradient boosting of a zone's rides relative to its recent level, on the zone, the day type and the hour
    (and weather), times the zone's minor-holiday lift on a minor holiday.

    Levels move (the season, a trend) while a zone's week keeps its shape: the trees learn the shape as a share of
    the zone's mean hourly rides over the last week known (rows weighted by that level), and the forecast is the
    shape times the level, so a level the training weeks never saw is followed, not clipped to the nearest leaf.
    A training window holds one or two minor holidays, too few hours for a split the trees would choose: they learn
    the ordinary days, and a minor holiday takes the lift its like showed (:class:`MinorHolidayLift`).
    """

    name: str = "gbm"
    weather: str | None = None
    params: dict[str, Any] = field(default_factory=lambda: dict(BOOSTING_PARAMS))
    model: Any = None
    zones: list[int] = field(default_factory=list)
    minor_holidays: MinorHolidayLift | None = None

    def used_features(self, features: list[str] | None = None) -> list[str]:
        return [*self._shape_features(), "recent_level", *MinorHolidayLift.FEATURES]

    def _shape_features(self) -> list[str]:
        return ["pulocationid", "hour", "day_type", "hour_of_day_type", "is_city_holiday",
                *_weather_columns(self.weather)]  # fmt: skip

    def _frame(self, rows: pd.DataFrame) -> pd.DataFrame:
        # A category, not a number: zone 132 is not "more" than zone 48.
        zones = pd.Categorical(rows.pulocationid, categories=self.zones)
        return rows[self._shape_features()].assign(pulocationid=zones)

    def fit(self, rows: pd.DataFrame, features: list[str]) -> GradientBoosting:
        from sklearn.ensemble import HistGradientBoostingRegressor  # seconds to import: only fitting tasks pay

        rows = rows[rows.recent_level > 0]
        self.minor_holidays = MinorHolidayLift.fit(rows)
        rows = rows[rows.is_minor_holiday == 0]
        # The trees take at most MAX_ZONE_CATEGORIES categories: the busiest zones are their own, the rest share
        # the missing category (their week's shape is learned together; each keeps its own level).
        busiest = rows.groupby("pulocationid").total_rides.sum().sort_values(ascending=False, kind="stable")
        self.zones = sorted(busiest.index[:MAX_ZONE_CATEGORIES].tolist())
        boosting = HistGradientBoostingRegressor(**self.params, categorical_features="from_dtype")
        self.model = boosting.fit(
            self._frame(rows), rows.total_rides / rows.recent_level, sample_weight=rows.recent_level
        )
        return self

    def predict(self, rows: pd.DataFrame, features: list[str]) -> np.ndarray:
        if self.minor_holidays is None:
            raise RuntimeError("GradientBoosting.predict before fit")  # an internal invariant: fitted, then forecast
        shape: np.ndarray = self.model.predict(self._frame(rows))
        forecast: np.ndarray = shape * rows.recent_level.fillna(0.0).to_numpy() * self.minor_holidays.of(rows)
        return forecast


@dataclass
class WeeklyProfile:
    """Each zone's mean rides per day type and hour over the training weeks, times the zone's recent level, times its
    minor-holiday lift on a minor holiday.

    The shape is averaged over every training day but the holidays (a city holiday counts as a Sunday when forecast);
    the level is the zone's rides over the last ``level_days`` known against what the shape expected of them,
    steadied by ``prior_rides`` on both sides so a quiet zone's level does not swing on a few rides. A minor holiday
    keeps its weekday's shape: its lift is the zone's rides on the minor holidays the training saw against the same
    hours of the weeks before, steadied by ``prior_rides`` toward every zone's lift together (1 when none was seen).
    """

    name: str = "profile"
    weather: str | None = None
    params: dict[str, Any] = field(default_factory=lambda: {"level_days": 14, "prior_rides": 50.0})
    shape: pd.Series | None = None
    level: pd.Series | None = None
    minor_holidays: MinorHolidayLift | None = None

    def used_features(self, features: list[str] | None = None) -> list[str]:
        return ["pulocationid", "day_type", "hour", *MinorHolidayLift.FEATURES]

    def fit(self, rows: pd.DataFrame, features: list[str]) -> WeeklyProfile:
        keys = ["pulocationid", "day_type", "hour"]
        ordinary = rows[rows.is_holiday == 0]
        self.shape = ordinary.groupby(keys).total_rides.mean().rename("typical")
        recent = ordinary[ordinary.pickup_hour > rows.pickup_hour.max() - pd.Timedelta(days=self.params["level_days"])]
        recent = recent.join(self.shape, on=keys)
        prior = self.params["prior_rides"]
        sums = recent.groupby("pulocationid")[["total_rides", "typical"]].sum() + prior
        self.level = (sums["total_rides"] / sums["typical"]).rename("level")
        self.minor_holidays = MinorHolidayLift.fit(rows, prior)
        return self

    def predict(self, rows: pd.DataFrame, features: list[str]) -> np.ndarray:
        if self.shape is None or self.level is None or self.minor_holidays is None:
            raise RuntimeError("WeeklyProfile.predict before fit")  # an internal invariant: candidates forecast fitted
        found = rows.join(self.shape, on=["pulocationid", "day_type", "hour"]).join(self.level, on="pulocationid")
        typical = (found["typical"].fillna(0.0) * found["level"].fillna(1.0)).to_numpy()
        forecast: np.ndarray = typical * self.minor_holidays.of(rows)
        return forecast


@dataclass
class Blend:
    """The mean of the weekly profile's and the boosting's forecasts: two ways of reading the weeks, whose errors
    partly cancel."""

    name: str = "blend"
    weather: str | None = None
    params: dict[str, Any] = field(default_factory=lambda: {"members": "profile, gbm"})
    members: list[Forecaster] = field(default_factory=list)

    def used_features(self, features: list[str] | None = None) -> list[str]:
        members: list[Forecaster] = [WeeklyProfile(), GradientBoosting()]
        return list(dict.fromkeys(name for member in members for name in member.used_features(features)))

    def fit(self, rows: pd.DataFrame, features: list[str]) -> Blend:
        self.members = [WeeklyProfile().fit(rows, features), GradientBoosting().fit(rows, features)]
        return self

    def predict(self, rows: pd.DataFrame, features: list[str]) -> np.ndarray:
        forecast: np.ndarray = np.mean([member.predict(rows, features) for member in self.members], axis=0)
        return forecast


def gbm_weather() -> GradientBoosting:
    return GradientBoosting(name="gbm_weather", weather="known")


def glm_perfect_weather() -> PoissonGlm:
    return PoissonGlm(name="glm_perfect_weather", weather="perfect")


def sees_hindsight(model: Forecaster) -> bool:
    """A fitted candidate told the target days' observed weather: a scenario, scored but never a forecast."""
    return model.weather == "perfect"
