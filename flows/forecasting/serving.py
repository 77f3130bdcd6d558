"""What a model version serves with, and its forecast of a day: every zone, each borough and the city, coherent.

A version is trained on the zones (its champion, chosen on the backtest) and, apart, on the borough and
city totals (the same candidate, fitted on the totals' own history). Serving a day, both forecast it from
what was published at its start (``daily.forecast_days``); the totals and the zones are then reconciled so
each total is the sum of its zones (``hierarchy.reconcile``), each series weighted by how well its model
fits it. Every level's intervals are calibrated on that level's reconciled backtest errors
(``levels.calibrate``): a borough's total from the reconciled total's own errors, a zone's from its borough's
zones, or below a few rides from the zones of its forecast's size.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from flows.forecasting import backtest, daily, hierarchy, levels
from flows.forecasting.hierarchy import HOUR, SERIES, Hierarchy
from flows.forecasting.intervals import INTERVAL_COLUMNS
from flows.forecasting.levels import LevelIntervals, UnknownBorough, total_id, totals_actuals
from flows.forecasting.models import Forecaster
from flows.forecasting.publication import FEATURE_HISTORY, Inputs, PublicationRule

__all__ = ["ServedModel", "UnknownBorough", "fit_served", "forecast", "total_id", "totals_actuals"]

# A month's actuals are published once the month has ended (the sample source's way; TLC's own files come
# about two months later).
ACTUALS_MONTH_DELAY = 0
DAY = pd.Timedelta(days=1)
FORECAST_COLUMNS = [
    "forecast_day", "pickup_hour", "series", "level", "pulocationid", "borough", "forecast", *INTERVAL_COLUMNS,
    "model_forecast", "data_end",
]  # fmt: skip


@dataclass(frozen=True)
class ServedModel:
    """Everything a version needs to forecast any day: both models, the zones, the intervals, the weights."""

    version: str
    champion: str
    zones: list[int]
    boroughs: dict[int, str]
    zone_model: Forecaster
    zone_features: list[str]
    total_model: Forecaster
    total_features: list[str]
    intervals: LevelIntervals
    fits: pd.DataFrame  # series, rms: each series' in-sample fit, which weighs it in the reconciliation
    weather_delay_days: int
    uses_weather: bool
    trained_through: pd.Timestamp  # the end of the actuals it was trained on (excluded): it serves no day before
    # The range a healthy day's zone coverage (80%) falls in, from the version's held-out days: the alarm's.
    coverage_band: tuple[float, float] | None = None
    # The range a healthy day's city bias falls in, from the same days.
    bias_band: tuple[float, float] | None = None

    @property
    def rule(self) -> PublicationRule:
        return PublicationRule(self.weather_delay_days, ACTUALS_MONTH_DELAY)

    def hierarchy(self) -> Hierarchy:
        one_hour = pd.DataFrame({"pickup_hour": pd.Timestamp(0), "pulocationid": self.zones, "total_rides": 0.0})
        return hierarchy.series_frame(one_hour, self.boroughs)[1]

    def reads_from(self, days: Sequence[pd.Timestamp]) -> tuple[pd.Timestamp, pd.Timestamp]:
        """The actuals' window the forecasts of ``days`` need: from the history the first day's features reach
        back to, to the end of what is published at the last day's start."""
        first = self.rule.actuals_through(min(days)).floor("D")
        return first - FEATURE_HISTORY - DAY, self.rule.actuals_through(max(days))


def fit_served(
    version: str,
    champion: str,
    make_model: Callable[[], Forecaster],
    zones: Inputs,
    origin: pd.Timestamp,
    boroughs: Mapping[int, str],
    zone_model_and_features: tuple[Forecaster, list[str]],
    intervals: LevelIntervals,
    coverage_band: tuple[float, float] | None = None,
    bias_band: tuple[float, float] | None = None,
) -> ServedModel:
    """The version's served model: the zones' (fitted by the caller), the totals' fitted on ``zones``' actuals
    summed, each series' in-sample fit, and ``intervals`` (calibrated on the version's reconciled backtest). A zone
    the lookup gives no borough is in no total, and not served."""
    served_boroughs = {zone: boroughs[zone] for zone in zones.zones if zone in boroughs}
    totals, total_names = levels.totals_inputs(zones, served_boroughs)
    total_model, total_features, total_history = backtest.fitted_at(totals, origin, make_model)
    zone_model, zone_features = zone_model_and_features
    names = levels.series_names(sorted(served_boroughs), served_boroughs, total_names)
    fits = pd.concat(
        [levels.fit_errors(zone_model, zones.training_frame(origin)[0], origin, zone_features),
         levels.fit_errors(total_model, total_history, origin, total_features)], ignore_index=True,
    )  # fmt: skip
    fits = fits[fits.pulocationid.isin(list(names))]
    fits = fits.assign(series=fits.pulocationid.map(names))[["series", "rms"]].reset_index(drop=True)
    return ServedModel(
        version, champion, sorted(served_boroughs), served_boroughs, zone_model, zone_features, total_model,
        total_features, intervals, fits, zones.rule.weather_delay_days, zones.weather is not None, origin,
        coverage_band, bias_band,
    )  # fmt: skip


def forecast(
    served: ServedModel,
    actuals: pd.DataFrame,
    weather: pd.DataFrame | None,
    days: Sequence[pd.Timestamp],
    known: pd.DataFrame | None = None,
    on_day: Callable[[str], None] = lambda where: None,
) -> pd.DataFrame:
    """Each of ``days`` forecast by ``served`` from what was published at its start: every zone, borough and the
    city per hour (``FORECAST_COLUMNS``), reconciled, with intervals.

    ``known``: earlier days this version forecast from the same actuals (``FORECAST_COLUMNS``' rows), whose own
    forecasts stand in for the actuals not yet published instead of being made again (``daily.forecast_days``).
    ``on_day`` hears where the forecast is (``zones, 2025-02-14``), for a long run's progress.
    """
    start, _ = served.reads_from(days)
    rule = served.rule
    zone_known, total_known = _known_by_model(known)
    zone_inputs = Inputs(actuals[actuals.pulocationid.isin(served.zones)], weather, served.zones, 24, start, rule)
    zone_days = daily.forecast_days(
        served.zone_model,
        zone_inputs,
        days,
        served.zone_features,
        zone_known,
        lambda day: on_day(f"zones, {day:%Y-%m-%d}"),
    )
    zone_days[SERIES] = [hierarchy.series_name(served.boroughs[zone], zone) for zone in zone_days.pulocationid]
    total_rows, names = totals_actuals(zone_inputs.actuals, served.boroughs)
    totals = Inputs(total_rows, weather, sorted(names), 24, start, rule)
    total_days = daily.forecast_days(
        served.total_model, totals, days, served.total_features, total_known,
        lambda day: on_day(f"totals, {day:%Y-%m-%d}"),
    )  # fmt: skip
    total_days[SERIES] = total_days.pulocationid.map(names)
    base = pd.concat([zone_days, total_days], ignore_index=True).rename(
        columns={"pickup_hour": HOUR, "predicted": "model_forecast"}
    )
    tree = served.hierarchy()
    base = base[base[SERIES].isin(tree.series)]
    errors = levels.reconciliation_errors(served.fits)
    reconciled = [
        hierarchy.reconcile(day_rows.rename(columns={"model_forecast": "forecast"}), errors, tree)
        for _, day_rows in base.groupby("forecast_origin")
    ]
    rows = base.merge(pd.concat(reconciled, ignore_index=True), on=[SERIES, HOUR], validate="one_to_one")
    rows = rows.assign(
        forecast_day=rows.forecast_origin.dt.normalize(),
        level=rows[SERIES].map(tree.level_of),
        pulocationid=rows[SERIES].map(hierarchy.zone_of).astype("Int64"),
        borough=rows[SERIES].map(hierarchy.borough_of),
    )
    rows = rows.rename(columns={HOUR: "pickup_hour", SERIES: "series"})
    rows = pd.concat([rows, served.intervals.bounds(rows)], axis=1)
    return rows[FORECAST_COLUMNS].sort_values(["forecast_day", "series", "pickup_hour"]).reset_index(drop=True)


def _known_by_model(known: pd.DataFrame | None) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """Earlier days' own model forecasts, the zones' and the totals', as ``daily.forecast_days`` takes them."""
    if known is None or known.empty:
        return None, None
    rows = known.assign(predicted=known.model_forecast)[["pickup_hour", "series", "level", "pulocationid",
                                                         "predicted", "data_end"]]  # fmt: skip
    zones = rows[rows.level == "zone"]
    totals = rows[rows.level != "zone"]
    totals = totals.assign(pulocationid=totals.series.map(total_id))
    return zones.drop(columns=["series", "level"]), totals.drop(columns=["series", "level"])
