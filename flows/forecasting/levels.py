"""What a version serves, evaluated as it is served: every zone, each borough's total and the city, reconciled, each
level's intervals calibrated on that level's own reconciled errors.

A candidate is backtested on every zone the version serves and, with the same refits, on the borough and city totals
(:func:`backtest_series`). Each refit's forecasts are reconciled as serving reconciles them, weighted by each
series' in-sample fit at that refit (:func:`reconciled`). Intervals are then calibrated per level on the reconciled
errors of the hours before the day they are used on (:func:`calibrate`): the zones grouped by borough and, below a
few rides, by the forecast's size (counts near zero miss like counts, not like their borough); each total on its own
errors, read as a day's shared shock and its hours' noise (:mod:`~flows.forecasting.day_shocks`): a total's hours
miss together. The held-out weeks are scored per level and per borough (:func:`evaluate`), which is what a version's
cards, metadata and ``taxi-lineage model`` report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from flows.forecasting import backtest, hierarchy
from flows.forecasting.day_shocks import TotalIntervals, fit_totals
from flows.forecasting.features import in_holiday_period
from flows.forecasting.hierarchy import HOUR, SERIES, VALUE, Hierarchy
from flows.forecasting.intervals import (
    LEVELS,
    RECENCY_HALF_LIFE,
    IntervalModel,
    NoErrorsToCalibrateOn,
    count_aware_groups,
    fit_intervals,
    inside,
    nested,
)
from flows.forecasting.models import Forecaster
from flows.forecasting.publication import Inputs
from taxi_core.errors import PipelineError
from taxi_core.zones import BOROUGH_SERIES_IDS, CITY_SERIES_ID

# The in-sample days whose errors weigh each series in the reconciliation.
RECONCILIATION_DAYS = 14
DAY = pd.Timedelta(days=1)
ALL = "all"


class UnknownBorough(ValueError, PipelineError):
    """A zone's borough has no total series: the zone lookup names a borough the project does not know."""


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
    totals = hierarchy.totals(actuals, boroughs)
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


def totals_inputs(zones: Inputs, boroughs: Mapping[int, str]) -> tuple[Inputs, dict[int, str]]:
    """``zones``' actuals summed per borough and for the city, as inputs of their own; and each total id's series."""
    served = {zone: boroughs[zone] for zone in zones.zones if zone in boroughs}
    rows, names = totals_actuals(zones.actuals[zones.actuals.pulocationid.isin(list(served))], served)
    return Inputs(rows, zones.weather, sorted(names), zones.horizon_hours, zones.start, zones.rule), names


def fit_errors(model: Forecaster, history: pd.DataFrame, origin: pd.Timestamp, names: list[str]) -> pd.DataFrame:
    """How well a model fitted at ``origin`` on ``history`` fits each of its series over the days before it: one row
    per series (``pulocationid, rms``), the root mean square of its in-sample errors, which weighs the series in the
    reconciliation (minimum trace's ``wls_var`` uses exactly that mean square)."""
    rows = history[history.pickup_hour >= origin - DAY * RECONCILIATION_DAYS]
    squared = (rows.total_rides.to_numpy(dtype=float) - model.predict(rows, names)) ** 2
    rms = pd.Series(squared, index=rows.pulocationid.to_numpy()).groupby(level=0).mean() ** 0.5
    return rms.rename_axis("pulocationid").rename("rms").reset_index()


def reconciliation_errors(fits: pd.DataFrame) -> pd.DataFrame:
    """Per-series fit errors (``series, rms``) as the reconciler reads in-sample errors: two hours per series whose
    errors are plus and minus its root mean square, so their variance (and mean square) is the series' own."""
    hours = [pd.Timestamp(0), pd.Timestamp(0) + pd.Timedelta(hours=1)]
    return pd.concat(
        [pd.DataFrame({SERIES: fits.series.to_numpy(), HOUR: hour, VALUE: sign * fits.rms.to_numpy(), "forecast": 0.0})
         for hour, sign in zip(hours, (1.0, -1.0), strict=True)], ignore_index=True,
    )  # fmt: skip


def series_names(zones: Sequence[int], boroughs: Mapping[int, str], totals: Mapping[int, str]) -> dict[int, str]:
    """Every forecast id's series: a zone's ``city/<borough>/<zone>``, a total's own name."""
    return {zone: hierarchy.series_name(boroughs[zone], zone) for zone in zones if zone in boroughs} | dict(totals)


@dataclass(frozen=True)
class SeriesBacktest:
    """One candidate's backtest of every series a version serves (zones and totals), and each refit's fit errors."""

    forecasts: pd.DataFrame  # series, pickup_hour, origin, forecast_origin, predicted, total_rides
    fits: pd.DataFrame  # origin, series, rms


def backtest_series(
    zones: Inputs,
    boroughs: Mapping[int, str],
    make_model: Callable[[], Forecaster],
    origins: list[pd.Timestamp],
    zone_backtest: pd.DataFrame,
    zone_fits: pd.DataFrame,
) -> SeriesBacktest:
    """The totals backtested with the same refits as the zones (``zone_backtest``, ``zone_fits`` from
    :func:`backtest.rolling_origin_backtest` with :func:`fit_errors` at each refit), all named as series."""
    totals, total_names = totals_inputs(zones, boroughs)
    total_fits: list[pd.DataFrame] = []

    def keep_fit(origin: pd.Timestamp, model: Forecaster, names: list[str], history: pd.DataFrame) -> None:
        total_fits.append(fit_errors(model, history, origin, names).assign(origin=origin))

    total_backtest = backtest.rolling_origin_backtest(totals, make_model, origins, on_fit=keep_fit)
    names = series_names(zones.zones, boroughs, total_names)
    forecasts = pd.concat([zone_backtest, total_backtest], ignore_index=True)
    forecasts = forecasts[forecasts.pulocationid.isin(list(names))]
    forecasts = forecasts.assign(series=forecasts.pulocationid.map(names))
    fits = pd.concat([zone_fits, *total_fits], ignore_index=True)
    fits = fits[fits.pulocationid.isin(list(names))]
    fits = fits.assign(series=fits.pulocationid.map(names))
    columns = ["series", "pickup_hour", "origin", "forecast_origin", "predicted", "total_rides"]
    return SeriesBacktest(forecasts[columns].reset_index(drop=True), fits[["origin", "series", "rms"]])


def zone_backtest(
    zones: Inputs,
    make_model: Callable[[], Forecaster],
    origins: list[pd.Timestamp],
    on_origin: Callable[[backtest.OriginScore], None] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``zones`` backtested (:func:`backtest.rolling_origin_backtest`) and each refit's fit errors (``origin,
    pulocationid, rms``), which weigh the series in the reconciliation."""
    fits: list[pd.DataFrame] = []

    def keep_fit(origin: pd.Timestamp, model: Forecaster, names: list[str], history: pd.DataFrame) -> None:
        fits.append(fit_errors(model, history, origin, names).assign(origin=origin))

    found = backtest.rolling_origin_backtest(zones, make_model, origins, on_origin=on_origin, on_fit=keep_fit)
    return found, pd.concat(fits, ignore_index=True)


def backtest_served(
    zones: Inputs, boroughs: Mapping[int, str], make_model: Callable[[], Forecaster], origins: list[pd.Timestamp]
) -> SeriesBacktest:
    """Every served zone and total backtested with the same refits, each refit's fit errors kept."""
    found, fits = zone_backtest(zones, make_model, origins)
    return backtest_series(zones, boroughs, make_model, origins, found, fits)


def tree_of(series: Sequence[str]) -> Hierarchy:
    """The hierarchy of the zone series among ``series``."""
    zones = [name for name in series if hierarchy.zone_of(name) is not None]
    boroughs = {int(hierarchy.zone_of(name) or 0): str(hierarchy.borough_of(name)) for name in zones}
    one_hour = pd.DataFrame({"pickup_hour": pd.Timestamp(0), "pulocationid": list(boroughs), "total_rides": 0.0})
    return hierarchy.series_frame(one_hour, boroughs)[1]


def reconciled(series: SeriesBacktest, origins: Sequence[pd.Timestamp] | None = None) -> pd.DataFrame:
    """The backtest's forecasts made coherent refit by refit, as serving makes each day's: ``series, pickup_hour,
    origin, forecast_origin, model_forecast, forecast, total_rides, level, borough``.

    A zone without actuals in some hours (a month it had no ride) is scored only where it has them: the hours of a
    refit are reconciled in groups, each over the series present in all of its hours (a month's zones, mostly)."""
    wanted = series.forecasts if origins is None else series.forecasts[series.forecasts.origin.isin(list(origins))]
    rows = []
    for origin, refit in wanted.groupby("origin"):
        fits = series.fits[series.fits.origin == origin]
        present = refit.groupby("pickup_hour").series.agg(lambda names: ",".join(sorted(names)))
        for members, hours in present.groupby(present):
            part = refit[refit.pickup_hour.isin(hours.index)]
            rows.append(_reconciled_part(part, tree_of(str(members).split(",")), fits))
    found = pd.concat(rows, ignore_index=True)
    names = found.series.unique().tolist()  # each name read once, not once per hour
    tree = tree_of(names)
    level = {name: tree.level_of(name) for name in names}
    borough = {name: hierarchy.borough_of(name) for name in names}
    return found.assign(level=found.series.map(level), borough=found.series.map(borough))


def _reconciled_part(refit: pd.DataFrame, tree: Hierarchy, fits: pd.DataFrame) -> pd.DataFrame:
    """One refit's hours made coherent over ``tree``; a series the refit's fit saw no hour of weighs as its level's
    median series."""
    refit = refit[refit.series.isin(tree.series)]
    base = refit.rename(columns={"series": SERIES, "pickup_hour": HOUR, "predicted": "forecast"})
    weights = fits.set_index("series").rms.reindex(tree.series)
    level = pd.Series(tree.series, index=tree.series).map(tree.level_of)
    weights = weights.fillna(weights.groupby(level).transform("median")).fillna(weights.median())
    errors = reconciliation_errors(weights.rename_axis("series").reset_index())
    coherent = hierarchy.reconcile(base, errors, tree).rename(columns={SERIES: "series", HOUR: "pickup_hour"})
    return refit.rename(columns={"predicted": "model_forecast"}).merge(
        coherent, on=["series", "pickup_hour"], validate="one_to_one"
    )


@dataclass(frozen=True)
class LevelIntervals:
    """The intervals a version serves with: the zones' (by borough, and by size below a few rides) and the totals'
    (each its own day's shock and hours' noise), each calibrated on its level's reconciled errors. A version trained
    before the totals' day shocks keeps the totals' scaled-error quantiles (an ``IntervalModel``)."""

    zones: IntervalModel
    totals: TotalIntervals | IntervalModel

    def bounds(self, rows: pd.DataFrame) -> pd.DataFrame:
        """``lower_80, upper_80, lower_95, upper_95`` for ``rows`` (``series, level, borough, pickup_hour,
        forecast``), aligned to their index; each holds the forecast, the 80% inside the 95%, none below zero."""
        columns = []
        holiday = in_holiday_period(rows.pickup_hour)
        for is_zone, model in ((True, self.zones), (False, self.totals)):
            part = rows[(rows.level == "zone") == is_zone]
            if part.empty:
                continue
            found = model.bounds(part.forecast, _groups(part), holiday[part.index])
            columns.append(found.set_axis(part.index))
        return nested(pd.concat(columns).reindex(rows.index), rows.forecast)

    def as_metadata(self) -> dict[str, str]:
        zone_groups = sorted(group for group in self.zones.by_group if group != "all zones")
        total_groups = sorted(group for group in self.totals.by_group if group != "all zones")
        found = {"interval_zone_groups": ", ".join(zone_groups), "interval_total_groups": ", ".join(total_groups)}
        if isinstance(self.totals, TotalIntervals):
            found["interval_total_day_shock_sd_pct"] = self.totals.spread_summary()
        return found


def _groups(rows: pd.DataFrame) -> pd.Series:
    """Each row's calibration group: a zone's borough (or its size band, for small forecasts); a total's series."""
    if (rows.level == "zone").all():
        return count_aware_groups(rows.borough, rows.forecast)
    return rows.series.astype(str)


def calibrate(rows: pd.DataFrame, day: pd.Timestamp) -> LevelIntervals:
    """The intervals a day starting at ``day`` uses: ``rows``' (:func:`reconciled`) errors of the hours before it,
    holiday periods left out, each weighted by how recent it is."""
    known = rows[rows.pickup_hour < day].dropna(subset=["total_rides"])
    if known.empty:
        raise NoErrorsToCalibrateOn(f"no reconciled backtest forecast with an actual before {day} to calibrate on")
    ordinary = known[~in_holiday_period(known.pickup_hour).to_numpy()]
    if ordinary.empty:
        ordinary = known
    elapsed: pd.Series[pd.Timedelta] = day - ordinary.pickup_hour
    age = (elapsed / RECENCY_HALF_LIFE).to_numpy(dtype=float)
    weights = pd.Series(0.5**age, index=ordinary.index)
    zones = ordinary[ordinary.level == "zone"]
    totals = ordinary[ordinary.level != "zone"]
    return LevelIntervals(
        fit_intervals(zones.forecast, zones.total_rides, _groups(zones), weights[zones.index]),
        fit_totals(totals, weights[totals.index]),
    )


def with_intervals(rows: pd.DataFrame, history: pd.DataFrame) -> pd.DataFrame:
    """``rows`` (reconciled forecasts) with each day's intervals calibrated on ``history``'s hours before that day."""
    parts = []
    for day, day_rows in rows.groupby(rows.pickup_hour.dt.normalize()):
        parts.append(pd.concat([day_rows, calibrate(history, pd.Timestamp(day)).bounds(day_rows)], axis=1))
    return pd.concat(parts).sort_index()


def evaluate(
    reconciled_by_candidate: Callable[[str], pd.DataFrame],
    champions: Mapping[pd.Timestamp, str],
    naive: pd.DataFrame,
) -> pd.DataFrame:
    """Each held-out week (``champions``: its start -> the champion chosen before it) served as a version serves:
    the champion's reconciled forecasts, each day's intervals calibrated on its reconciled errors before that day;
    with naive's forecast of the same series and hour (``naive``: ``series, pickup_hour, predicted``)."""
    weeks = []
    for week, champion in champions.items():
        history = reconciled_by_candidate(champion)
        rows = history[history.origin == week]
        weeks.append(with_intervals(rows, history).assign(champion=champion))
    scored = pd.concat(weeks, ignore_index=True)
    paired = naive.rename(columns={"predicted": "naive"})[["series", "pickup_hour", "naive"]]
    return scored.merge(paired, on=["series", "pickup_hour"], how="left")


def by_level(rows: pd.DataFrame) -> pd.DataFrame:
    """Per level and borough (``all`` for a whole level): hours, MAE, naive's MAE, their ratio, each interval's
    coverage, and the share of hours whose 80% interval is the narrowest a count allows (``{0}`` or a point)."""
    rows = rows.assign(
        error=(rows.forecast - rows.total_rides).abs(),
        naive_error=(rows.naive - rows.total_rides).abs(),
        **{f"inside_{level}": inside(rows, level) for level in LEVELS},
    )
    tables = []
    for level, level_rows in rows.groupby("level", sort=False):
        level = str(level)
        tables.append(_figures(level_rows.assign(borough=ALL), level))
        if level != "city":
            tables.append(_figures(level_rows, level))
    table = pd.concat(tables, ignore_index=True)
    # Zones first, then the boroughs' totals, then the city; each level's whole before its boroughs.
    order = table.level.map({"zone": 0, "borough": 1, "city": 2}) * 2 + (table.borough != ALL)
    table = table.assign(order=order).sort_values(["order", "borough"], kind="stable")
    return table.drop(columns="order").reset_index(drop=True)


def _figures(rows: pd.DataFrame, level: str) -> pd.DataFrame:
    grouped = rows.groupby("borough")
    table = pd.DataFrame(
        {
            "hours": grouped.size(),
            "series": grouped.series.nunique(),
            "rides_per_hour": grouped.total_rides.mean(),
            "mae": grouped.error.mean(),
            "naive_mae": grouped.naive_error.mean(),
            **{f"coverage_{band}": grouped[f"inside_{band}"].mean() for band in LEVELS},
        }
    )
    table["ratio_to_naive"] = table.mae / table.naive_mae.where(table.naive_mae > 0)
    return table.reset_index().assign(level=level)


def summary(table: pd.DataFrame) -> dict[str, float]:
    """The per-level figures a model version is known by: each level's held-out MAE ratio and 80%/95% coverage."""
    figures = {}
    for row in table[table.borough == ALL].to_dict("records"):
        figures[f"held_out_{row['level']}_mae_vs_naive"] = round(float(row["ratio_to_naive"]), 4)
        for band in LEVELS:
            figures[f"held_out_{row['level']}_coverage_{band}"] = round(float(row[f"coverage_{band}"]), 4)
    covered = table[table.level != "city"].coverage_80.to_numpy(dtype=float)
    if len(covered):
        figures["held_out_coverage_80_furthest_group"] = round(float(covered[abs(covered - 0.8).argmax()]), 4)
    return figures


# A healthy day's figure strays from the held-out days' centre by at most this many of their standard deviations (a
# normal day-to-day spread: outside it on about 1 day in 370), and never by less than its level's least half-width.
BAND_DEVIATIONS = 3.0
LEAST_BAND = 0.02
LEAST_BIAS_BAND = 0.05
MAD_TO_SD = 1.4826


def coverage_band(rows: pd.DataFrame, level: str = "zone") -> tuple[float, float]:
    """The range a healthy day's share of ``level``-hours inside their 80% interval falls in, from the held-out days
    (``rows`` of :func:`evaluate`): the alarm's range, calibrated to how much a day's coverage varies at that level.
    Holiday-period days count: their intervals are widened on purpose, and their coverage is a healthy day's."""
    mine = rows[rows.level == level]
    daily = inside(mine, 80).groupby(mine.pickup_hour.dt.normalize()).mean()
    centre = float(daily.mean())
    half = max(BAND_DEVIATIONS * float(daily.std(ddof=1)) if len(daily) > 1 else 0.0, LEAST_BAND)
    return round(max(centre - half, 0.0), 4), round(min(centre + half, 1.0), 4)


def bias_band(rows: pd.DataFrame, level: str = "city") -> tuple[float, float]:
    """The range a healthy day's bias of ``level`` (its forecast rides minus its rides, as a share of its rides)
    falls in, from the held-out days (``rows`` of :func:`evaluate`).

    A shock day (a storm, a holiday) is what this alarm is for, so the range is read from the ordinary days, around
    their median and with their median absolute deviation: one such day among 28 does not widen it for the rest."""
    mine = rows[rows.level == level]
    ordinary = mine[~in_holiday_period(mine.pickup_hour).to_numpy()]
    read = ordinary if len(ordinary) else mine
    sums = read.groupby(read.pickup_hour.dt.normalize())[["forecast", "total_rides"]].sum()
    bias = (sums.forecast - sums.total_rides) / sums.total_rides.clip(lower=1.0)
    centre = float(bias.median())
    half = max(BAND_DEVIATIONS * MAD_TO_SD * float((bias - centre).abs().median()), LEAST_BIAS_BAND)
    return round(centre - half, 4), round(centre + half, 4)
