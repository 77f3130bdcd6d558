"""Turn hourly actuals (and optionally daily weather) into a feature table for direct forecasting.

Every feature of a row is what is known at the forecast origin of that row: lags no shorter than the
horizon, and the observed weather of the newest day published by the origin (``WEATHER_FEATURES``).
The target day's own observed weather (``PERFECT_WEATHER_FEATURES``) is known only afterwards: it
serves a labelled perfect-weather scenario, never a forecast.
"""

from __future__ import annotations

import functools
import math

import pandas as pd
from pandas.tseries.holiday import AbstractHolidayCalendar, Holiday, USFederalHolidayCalendar

from taxi_core.zones import BOROUGH_COUNTY_FIPS, BOROUGH_SERIES_IDS, CITY_COUNTY_FIPS, CITY_SERIES_ID, load_zones

CALENDAR_FEATURES = [
    "hour", "day_of_week", "is_weekend", "hour_of_week", "is_holiday", "is_city_holiday", "is_minor_holiday",
    "day_type", "hour_of_day_type",
]  # fmt: skip
# The federal holidays on which New York's offices and most shops close: the city's demand follows a Sunday's.
CITY_HOLIDAYS = ("New Year's Day", "Memorial Day", "Independence Day", "Labor Day", "Thanksgiving Day", "Christmas Day")
# Election Day: a New York public holiday (its schools close), the Tuesday after the first Monday in November: the
# first Tuesday after November 1.
ELECTION_DAY = Holiday("Election Day", month=11, day=1, offset=pd.offsets.Week(weekday=1))


class NewYorkHolidays(AbstractHolidayCalendar):
    """The federal holidays and Election Day. Beside the city holidays above, they are the *minor* holidays (Martin
    Luther King Jr. Day, Presidents' Day, Juneteenth, Columbus Day, Veterans Day, Election Day): schools and
    government close, most offices stay open, and demand keeps its weekday's shape at a lower (or, at the airports,
    a higher) level."""

    rules = [*USFederalHolidayCalendar.rules, ELECTION_DAY]


SUNDAY = 6
# The days whose demand no training window teaches: a city holiday and the day either side (the eve's early
# departures, the Friday after Thanksgiving, the day off that bridges to a weekend), and Christmas Eve to New Year's
# Day. Each comes once a year, so a model has rarely seen its like; forecasts there are the least sure.
HOLIDAY_PERIOD_REACH_DAYS = 1
YEAR_END = ((12, 24), (1, 1))
OBSERVED_WEATHER = ["prcp", "tavg"]
WEATHER_FEATURES = ["prcp_known", "tavg_known"]
PERFECT_WEATHER_FEATURES = ["prcp_same_day", "tavg_same_day"]
# Lags shorter than the horizon are unknown when the forecast is made.
CANDIDATE_LAGS = (24, 48, 168, 336, 504)
SEASONAL_LAGS = (168, 336, 504)
LEVEL_HOURS = 168


def lags_for(horizon_hours: int) -> list[int]:
    return [lag for lag in CANDIDATE_LAGS if lag >= horizon_hours]


def weather_lag_days(origin_hour: int, horizon_hours: int, publication_delay_days: int) -> int:
    """Days between a target hour's day and the newest day of weather known at its origin.

    An origin at ``origin_hour`` forecasting ``horizon_hours`` ahead reaches ``ceil((origin_hour +
    horizon_hours) / 24)`` days past its own day, whose weather is not yet observed; a day's values are
    published ``publication_delay_days`` after it ends.
    """
    return math.ceil((origin_hour + horizon_hours) / 24) + publication_delay_days


def zone_counties() -> dict[int, str]:
    """Pickup zone -> NOAA county, through the zone's borough; a borough's total -> its county, the city's ->
    Manhattan's."""
    zones = {
        zone.location_id: BOROUGH_COUNTY_FIPS[zone.borough]
        for zone in load_zones()
        if zone.borough in BOROUGH_COUNTY_FIPS
    }
    totals = {BOROUGH_SERIES_IDS[borough]: county for borough, county in BOROUGH_COUNTY_FIPS.items()}
    return zones | totals | {CITY_SERIES_ID: CITY_COUNTY_FIPS}


def complete_grid(actuals: pd.DataFrame, zones: list[int], start: pd.Timestamp, end: pd.Timestamp) -> pd.DataFrame:
    """Every (zone, hour) in ``[start, end)``. An hour the actuals hold for any zone is published: a zone without a
    row in it had no ride (the table keeps a month's zones with a ride that month), so it counts 0. An hour they hold
    for no zone is NaN (the future, or a month not published)."""
    hours = pd.date_range(start, end, freq="h", inclusive="left")
    grid = pd.MultiIndex.from_product([zones, hours], names=["pulocationid", "pickup_hour"]).to_frame(index=False)
    found = grid.merge(actuals, on=["pulocationid", "pickup_hour"], how="left")
    published = found.pickup_hour.isin(actuals.pickup_hour.unique())
    found["total_rides"] = found.total_rides.mask(found.total_rides.isna() & published, 0)
    return found


def build_features(
    grid: pd.DataFrame, horizon_hours: int, weather: pd.DataFrame | None = None, weather_lag: int = 1
) -> tuple[pd.DataFrame, list[str]]:
    """Calendar, lag and seasonal features per (zone, hour); weather joins by the zone's county.

    ``weather_lag`` (:func:`weather_lag_days`) is how many days before its own day a row's known
    weather is; the perfect-weather columns are added too, for scenario candidates only.
    """
    frame = grid.sort_values(["pulocationid", "pickup_hour"]).reset_index(drop=True)
    by_zone = frame.groupby("pulocationid", sort=False)["total_rides"]
    lags = lags_for(horizon_hours)
    for lag in lags:
        frame[f"lag_{lag}"] = by_zone.shift(lag)
    seasonal = [f"lag_{lag}" for lag in SEASONAL_LAGS if lag in lags]
    frame["seasonal_mean"] = frame[seasonal].mean(axis=1)
    # The zone's mean hourly rides over the last week known at the origin: its level, smoothed.
    known = by_zone.shift(horizon_hours).groupby(frame.pulocationid, sort=False)
    frame["recent_level"] = known.rolling(LEVEL_HOURS, min_periods=24).mean().droplevel(0)
    frame["hour"] = frame.pickup_hour.dt.hour
    frame["day_of_week"] = frame.pickup_hour.dt.day_of_week
    frame["is_weekend"] = (frame.day_of_week >= 5).astype(int)
    frame["hour_of_week"] = frame.day_of_week * 24 + frame.hour
    frame["is_holiday"] = _holidays(frame.pickup_hour)
    frame["is_city_holiday"] = _holidays(frame.pickup_hour, CITY_HOLIDAYS)
    frame["is_minor_holiday"] = frame.is_holiday - frame.is_city_holiday
    # A day's type: its day of the week, or Sunday on a city holiday.
    frame["day_type"] = frame.day_of_week.where(frame.is_city_holiday == 0, SUNDAY)
    frame["hour_of_day_type"] = frame.day_type * 24 + frame.hour
    features = ["pulocationid", *CALENDAR_FEATURES, *(f"lag_{lag}" for lag in lags), "seasonal_mean", "recent_level"]
    if weather is not None:
        frame = _join_weather(frame, weather, weather_lag)
        features += [*WEATHER_FEATURES, *PERFECT_WEATHER_FEATURES]
    return frame, features


@functools.cache
def _new_york_holidays(first_year: int, last_year: int) -> pd.Series:
    """The holidays (day -> name) of whole years. Applying the calendar's rules takes pandas ~15 ms, and a backtest
    builds features about a hundred times over the same years."""
    first, last = pd.Timestamp(first_year, 1, 1), pd.Timestamp(last_year, 12, 31)
    holidays: pd.Series = NewYorkHolidays().holidays(first, last, return_name=True)
    return holidays


def new_york_holidays(first: pd.Timestamp, last: pd.Timestamp) -> pd.Series:
    """The holidays (day -> name) of the years from ``first`` to ``last``, days outside them included."""
    return _new_york_holidays(first.year, last.year)


def _holidays(hours: pd.Series, names: tuple[str, ...] | None = None) -> pd.Series:
    """1 on the holidays (of ``names``, if given), else 0."""
    days = hours.dt.normalize()
    if days.empty:
        return pd.Series(0, index=hours.index)
    holidays = new_york_holidays(days.min(), days.max())
    if names is not None:
        holidays = holidays[holidays.isin(names)]
    flags: pd.Series = days.isin(holidays.index).astype(int)
    return flags


def in_holiday_period(hours: pd.Series) -> pd.Series:
    """Whether each hour falls on a city holiday, a day next to one, or between Christmas Eve and New Year's Day."""
    days = pd.to_datetime(hours).dt.normalize()
    if days.empty:
        return pd.Series(False, index=hours.index)
    reach = HOLIDAY_PERIOD_REACH_DAYS
    calendar = new_york_holidays(days.min() - pd.Timedelta(days=reach), days.max() + pd.Timedelta(days=reach))
    holidays = calendar[calendar.isin(CITY_HOLIDAYS)].index
    near = [holiday + pd.Timedelta(days=shift) for holiday in holidays for shift in range(-reach, reach + 1)]
    (first_month, first_day), (last_month, last_day) = YEAR_END
    month_day = days.dt.month * 100 + days.dt.day
    year_end = (month_day >= first_month * 100 + first_day) | (month_day <= last_month * 100 + last_day)
    return days.isin(near) | year_end


def _join_weather(frame: pd.DataFrame, weather: pd.DataFrame, lag_days: int) -> pd.DataFrame:
    """The weather known at the origin (``lag_days`` before the row's day) and the row's day's own, by county.

    A known day missing from the table takes the newest observed day before it, never a later one; a
    row's own day has its observed weather or none (a day not yet published stays empty).
    """
    counties = zone_counties()
    frame["county_fips"] = frame.pulocationid.map(counties)
    frame["date"] = frame.pickup_hour.dt.normalize()
    days = pd.date_range(weather.date.min(), frame.date.max(), freq="D")
    observed = weather.set_index(["county_fips", "date"])[OBSERVED_WEATHER].unstack("county_fips").reindex(days)
    if not isinstance(observed, pd.DataFrame):
        raise TypeError("the weather did not unstack to a frame")  # an internal invariant: several columns do
    filled = _long(observed.ffill())
    known = filled.assign(date=filled.date + pd.Timedelta(days=lag_days))
    known = known.rename(columns=dict(zip(OBSERVED_WEATHER, WEATHER_FEATURES, strict=True)))
    same_day = _long(observed).rename(columns=dict(zip(OBSERVED_WEATHER, PERFECT_WEATHER_FEATURES, strict=True)))
    joined = frame.merge(known, on=["county_fips", "date"], how="left").merge(
        same_day, on=["county_fips", "date"], how="left"
    )
    return joined.drop(columns=["county_fips", "date"])


def _long(wide: pd.DataFrame) -> pd.DataFrame:
    return wide.stack("county_fips", future_stack=True).rename_axis(["date", "county_fips"]).reset_index()


def training_rows(frame: pd.DataFrame, features: list[str]) -> pd.DataFrame:
    """Rows with a known target; each model leaves out the rows missing what it needs."""
    return frame.dropna(subset=["total_rides"])
