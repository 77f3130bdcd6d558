"""What a model version serves with, and its forecast of a day: every zone, each borough and the city, coherent.

A version is trained on the zones (its champion, chosen on the backtest) and, apart, on the borough and
city totals (the same candidate, fitted on the totals' own history). Serving a day, both forecast it from
what was published at its start (``daily.forecast_days``); the totals and the zones are then reconciled so
each total is the sum of its zones (``hierarchy.reconcile``), each series weighted by how well its model
fits it. The zones' intervals are the version's calibrated ones; a total's come from the totals model's
own errors over the version's held-out weeks, as a share of its forecast.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from flows.forecasting import backtest, daily, features, hierarchy
from flows.forecasting.hierarchy import HOUR, SERIES, VALUE, Hierarchy
from flows.forecasting.intervals import INTERVAL_COLUMNS, LEVELS, IntervalModel, bound_columns
from flows.forecasting.models import Forecaster
from flows.forecasting.publication import FEATURE_HISTORY, Inputs, PublicationRule
from taxi_core.errors import PipelineError
from taxi_core.zones import BOROUGH_SERIES_IDS, CITY_SERIES_ID

# A month's actuals are published once the month has ended (the sample source's way; TLC's own files come
# about two months later).
ACTUALS_MONTH_DELAY = 0
# The in-sample days whose errors weigh each series in the reconciliation.
RECONCILIATION_DAYS = 14
DAY = pd.Timedelta(days=1)
FORECAST_COLUMNS = [
    "forecast_day", "pickup_hour", "series", "level", "pulocationid", "borough", "forecast", *INTERVAL_COLUMNS,
    "model_forecast", "data_end",
]  # fmt: skip


class UnknownBorough(ValueError, PipelineError):
    """A zone's borough has no total series: the zone lookup names a borough the project does not know."""


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
    zone_intervals: IntervalModel
    total_spread: dict[str, dict[int, tuple[float, float]]]  # series -> level -> (low, high), shares of the forecast
    errors: pd.DataFrame  # unique_id, ds, y, forecast: in-sample, every series
    weather_delay_days: int
    uses_weather: bool

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


def total_id(series: str) -> int:
    """The id a borough's or the city's total is forecast under."""
    borough = hierarchy.borough_of(series)
    if borough is None:
        return CITY_SERIES_ID
    if borough not in BOROUGH_SERIES_IDS:
        raise UnknownBorough(
            f"borough {borough!r} of nyc_taxi.taxi_zones has no total series (known: {', '.join(BOROUGH_SERIES_IDS)}): "
            "add it to taxi_core/zones.py TOTAL_BOROUGHS"
        )
    return BOROUGH_SERIES_IDS[borough]


def totals_actuals(actuals: pd.DataFrame, boroughs: Mapping[int, str]) -> tuple[pd.DataFrame, dict[int, str]]:
    """Each borough's and the city's rides per hour, as the actuals' columns under their total ids; and each id's
    series."""
    frame, tree = hierarchy.series_frame(actuals, boroughs)
    totals = frame[frame[SERIES].map(tree.level_of) != "zone"]
    names = {total_id(series): series for series in totals[SERIES].unique()}
    ids = {series: identifier for identifier, series in names.items()}
    rows = pd.DataFrame(
        {
            "pickup_hour": totals[HOUR].to_numpy(),
            "pulocationid": totals[SERIES].map(ids).to_numpy(),
            "total_rides": totals[VALUE].to_numpy(),
        }
    )
    return rows, names


def _in_sample(model: Forecaster, inputs: Inputs, origin: pd.Timestamp, names: list[str]) -> pd.DataFrame:
    """The model's fit of the last days before ``origin``: ``pulocationid, ds, y, forecast``."""
    rows, _ = inputs.training_frame(origin)
    rows = rows[rows.pickup_hour >= origin - DAY * RECONCILIATION_DAYS]
    return pd.DataFrame(
        {"pulocationid": rows.pulocationid.to_numpy(), HOUR: rows.pickup_hour.to_numpy(),
         VALUE: rows.total_rides.to_numpy(dtype=float), "forecast": model.predict(rows, names)}
    )  # fmt: skip


def _spread(backtested: pd.DataFrame, names: Mapping[int, str]) -> dict[str, dict[int, tuple[float, float]]]:
    """Per total series, the quantiles of its out-of-sample error as a share of its forecast, per level."""
    relative = (backtested.total_rides - backtested.predicted) / backtested.predicted.clip(lower=1.0)
    spread = {}
    for identifier, shares in relative.groupby(backtested.pulocationid):
        tails = {level: ((1 - level / 100) / 2, 1 - (1 - level / 100) / 2) for level in LEVELS}
        spread[names[int(identifier)]] = {
            level: (float(np.quantile(shares, low)), float(np.quantile(shares, high)))
            for level, (low, high) in tails.items()
        }
    return spread


def fit_served(
    version: str,
    champion: str,
    make_model: Callable[[], Forecaster],
    zones: Inputs,
    origin: pd.Timestamp,
    boroughs: Mapping[int, str],
    zone_model_and_features: tuple[Forecaster, list[str]],
    zone_intervals: IntervalModel,
    held_out_weeks: Sequence[pd.Timestamp],
) -> ServedModel:
    """The version's served model: the zones' (fitted by the caller), the totals' fitted on ``zones``' actuals
    summed, its spread measured over ``held_out_weeks``, and every series' in-sample errors. A zone the lookup
    gives no borough is in no total, and not served."""
    served_boroughs = {zone: boroughs[zone] for zone in zones.zones if zone in boroughs}
    zone_actuals = zones.actuals[zones.actuals.pulocationid.isin(zones.zones)]
    total_rows, names = totals_actuals(zone_actuals, served_boroughs)
    totals = Inputs(total_rows, zones.weather, sorted(names), zones.horizon_hours, zones.start, zones.rule)
    total_model, total_features = backtest.fit_at(totals, origin, make_model)
    backtested = backtest.rolling_origin_backtest(totals, make_model, list(held_out_weeks))
    zone_model, zone_features = zone_model_and_features
    zone_errors = _in_sample(zone_model, zones, origin, zone_features)
    zone_errors = zone_errors[zone_errors.pulocationid.isin(served_boroughs)]
    zone_errors[SERIES] = [hierarchy.series_name(served_boroughs[zone], zone) for zone in zone_errors.pulocationid]
    total_errors = _in_sample(total_model, totals, origin, total_features)
    total_errors[SERIES] = total_errors.pulocationid.map(names)
    errors = pd.concat([zone_errors, total_errors], ignore_index=True).drop(columns=["pulocationid"])
    return ServedModel(
        version, champion, sorted(served_boroughs), served_boroughs, zone_model, zone_features, total_model,
        total_features, zone_intervals, _spread(backtested, names), errors, zones.rule.weather_delay_days,
        zones.weather is not None,
    )  # fmt: skip


def forecast(
    served: ServedModel,
    actuals: pd.DataFrame,
    weather: pd.DataFrame | None,
    days: Sequence[pd.Timestamp],
    known: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Each of ``days`` forecast by ``served`` from what was published at its start: every zone, borough and the
    city per hour (``FORECAST_COLUMNS``), reconciled, with intervals.

    ``known``: earlier days this version forecast from the same actuals (``FORECAST_COLUMNS``' rows), whose own
    forecasts stand in for the actuals not yet published instead of being made again (``daily.forecast_days``).
    """
    start, _ = served.reads_from(days)
    rule = served.rule
    zone_known, total_known = _known_by_model(known)
    zone_inputs = Inputs(actuals[actuals.pulocationid.isin(served.zones)], weather, served.zones, 24, start, rule)
    zone_days = daily.forecast_days(served.zone_model, zone_inputs, days, served.zone_features, zone_known)
    zone_days[SERIES] = [hierarchy.series_name(served.boroughs[zone], zone) for zone in zone_days.pulocationid]
    total_rows, names = totals_actuals(zone_inputs.actuals, served.boroughs)
    totals = Inputs(total_rows, weather, sorted(names), 24, start, rule)
    total_days = daily.forecast_days(served.total_model, totals, days, served.total_features, total_known)
    total_days[SERIES] = total_days.pulocationid.map(names)
    base = pd.concat([zone_days, total_days], ignore_index=True).rename(
        columns={"pickup_hour": HOUR, "predicted": "model_forecast"}
    )
    tree = served.hierarchy()
    base = base[base[SERIES].isin(tree.series)]
    reconciled = [
        hierarchy.reconcile(day_rows.rename(columns={"model_forecast": "forecast"}), served.errors, tree)
        for _, day_rows in base.groupby("forecast_origin")
    ]
    rows = base.merge(pd.concat(reconciled, ignore_index=True), on=[SERIES, HOUR], validate="one_to_one")
    rows = rows.assign(
        forecast_day=rows.forecast_origin.dt.normalize(),
        level=rows[SERIES].map(tree.level_of),
        pulocationid=rows[SERIES].map(hierarchy.zone_of).astype("Int64"),
        borough=rows[SERIES].map(hierarchy.borough_of),
    )
    rows = _with_intervals(served, rows).rename(columns={HOUR: "pickup_hour", SERIES: "series"})
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


def _with_intervals(served: ServedModel, rows: pd.DataFrame) -> pd.DataFrame:
    zones = rows.level == "zone"
    bounds = pd.DataFrame(index=rows.index, columns=INTERVAL_COLUMNS, dtype=float)
    zone_rows = rows[zones]
    bounds.loc[zones] = served.zone_intervals.bounds(
        zone_rows.forecast, zone_rows.borough, features.in_holiday_period(zone_rows[HOUR])
    ).to_numpy()
    for series, series_rows in rows[~zones].groupby(SERIES):
        for level, (low, high) in served.total_spread.get(str(series), {}).items():
            lower, upper = bound_columns(level)
            bounds.loc[series_rows.index, lower] = (series_rows.forecast * (1 + low)).clip(lower=0.0)
            bounds.loc[series_rows.index, upper] = series_rows.forecast * (1 + high)
    return pd.concat([rows, bounds], axis=1)
