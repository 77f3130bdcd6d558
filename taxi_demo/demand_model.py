"""The known demand process behind the sample source, built from public facts about NYC yellow taxis.

Every parameter lives in :mod:`taxi_demo.city_facts`, with its source. The hourly rate of a zone is::

    rate(hour, zone) = level(month) * share(zone) * week_shape(type(zone), hour) * holiday(hour, zone)
                       * clock(hour) * congestion_pricing(hour, zone) * trend(hour)
                       * event(hour, zone) * weather(day, zone) * day_shock(day) * zone_day_noise(day, zone)

``clock`` is New York's wall clock: 0 for the hour skipped when clocks go forward, 2 for the hour repeated when
they go back. The month's ``level`` is TLC's published trips of that month (or the trend's), scaled so that
``trips_per_month`` is the mean month of 2024; the month's calendar is normalised to it in expectation.

Two rates are recorded per hour and zone:

* ``true_rate``: the Poisson rate the trips were drawn from (the noise floor's truth);
* ``expected_rate``: what an oracle forecasts at a day-ahead origin that knows this process and the calendar
  (holidays, clock changes, congestion pricing, seasons, trend), but not the day's weather beyond its
  climatological expectation for that date, nor the day shock, the zone-day noise or which nights have events:
  each of those is replaced by its expectation (weather: its mean effect over the climatology of the date;
  events: one plus the event probability times its lift; shocks and noise: 1).
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from taxi_core.errors import PipelineError
from taxi_core.zones import BOROUGH_COUNTY_FIPS, Zone
from taxi_demo import city_facts as facts

ZONE_TYPES = ("office", "nightlife", "residential", "outer", "airport")
MANHATTAN_COUNTY = BOROUGH_COUNTY_FIPS["Manhattan"]
NEW_YORK = ZoneInfo(facts.TIME_ZONE)
# Climatology samples for the expected weather effect of a date (common random numbers: a smooth expectation).
CLIMATE_SAMPLES = 4000


class SampleMonthUnavailable(PipelineError):
    """A month the sample source cannot write; the message names the month and the months it can."""


@dataclass(frozen=True)
class DemandSpec:
    trips_per_month: int
    seed: int


@dataclass(frozen=True)
class MonthRates:
    """A month's hours (wall clock) and its rates per (hour, zone): shape ``(hours, zones)``."""

    hours: pd.DatetimeIndex
    true_rate: np.ndarray
    expected_rate: np.ndarray


def month_start(month: str) -> datetime:
    return datetime.strptime(month, "%Y-%m")


def month_hours(month: str) -> pd.DatetimeIndex:
    start = month_start(month)
    days = calendar.monthrange(start.year, start.month)[1]
    return pd.date_range(start, periods=days * 24, freq="h")


def month_seed(seed: int, month: str, stream: int) -> np.random.Generator:
    start = month_start(month)
    return np.random.default_rng([seed, start.year, start.month, stream])


def zone_shares(zones: tuple[Zone, ...], seed: int) -> np.ndarray:
    """Heavy-tailed share of all trips per zone, stable for a seed."""
    rng = np.random.default_rng([seed, 0])
    weights = rng.lognormal(mean=0.0, sigma=1.2, size=len(zones))
    for index, zone in enumerate(zones):
        weights[index] *= facts.BOROUGH_WEIGHT.get(zone.borough, 0.1)
        if zone.service_zone in ("Airports", "EWR") or zone.location_id in facts.AIRPORT_ZONES:
            weights[index] *= facts.AIRPORT_BOOST
    return weights / float(weights.sum())


def dropoff_shares(zones: tuple[Zone, ...], seed: int) -> np.ndarray:
    """Share of all trips ending in each zone: the pickups' shares leaned the way real trips lean."""
    weights = zone_shares(zones, seed).copy()
    for index, zone in enumerate(zones):
        airport = zone.service_zone in ("Airports", "EWR") or zone.location_id in facts.AIRPORT_ZONES
        weights[index] *= facts.AIRPORT_DROPOFF_FACTOR if airport else facts.DROPOFF_FACTOR.get(zone.borough, 1.0)
    return weights / float(weights.sum())


def zone_type(zone: Zone) -> str:
    if zone.location_id in facts.AIRPORT_ZONES:
        return "airport"
    if zone.location_id in facts.NIGHTLIFE_ZONES:
        return "nightlife"
    if zone.location_id in facts.OFFICE_ZONES:
        return "office"
    return "residential" if zone.borough == "Manhattan" else "outer"


# --- the monthly level and trend ----------------------------------------------------------------------------


def _trend(day: date) -> float:
    return float((1 + facts.ANNUAL_GROWTH) ** ((day - facts.TREND_ORIGIN).days / 365.25))


def published_level(month: str) -> float:
    """TLC's yellow trips of the month: as published, or the reference year's same month moved by the trend."""
    if month in facts.PUBLISHED_MONTHLY_TRIPS:
        return float(facts.PUBLISHED_MONTHLY_TRIPS[month])
    start = month_start(month)
    reference = facts.PUBLISHED_MONTHLY_TRIPS[f"{facts.REFERENCE_YEAR}-{start.month:02d}"]
    middle = date(start.year, start.month, 15)
    return reference * _trend(middle) / _trend(date(facts.REFERENCE_YEAR, start.month, 15))


def reference_mean_month() -> float:
    prefix = f"{facts.REFERENCE_YEAR}-"
    year = [trips for month, trips in facts.PUBLISHED_MONTHLY_TRIPS.items() if month.startswith(prefix)]
    return sum(year) / len(year)


# --- the calendar: holidays and the wall clock ---------------------------------------------------------------


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    first = date(year, month, 1)
    return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))


def _last_weekday(year: int, month: int, weekday: int) -> date:
    last = date(year, month, calendar.monthrange(year, month)[1])
    return last - timedelta(days=(last.weekday() - weekday) % 7)


@cache
def holidays(year: int) -> tuple[dict[date, float], dict[date, float]]:
    """Day factors of the holidays of a year: (city, airports)."""
    city, air = facts.HOLIDAY_CITY, facts.HOLIDAY_AIRPORT
    thanksgiving = _nth_weekday(year, 11, 3, 4)
    memorial, labor = _last_weekday(year, 5, 0), _nth_weekday(year, 9, 0, 1)
    july_4 = date(year, 7, 4)
    in_city = {
        thanksgiving: city["thanksgiving"],
        thanksgiving + timedelta(days=1): city["black_friday"],
        date(year, 12, 24): city["christmas_eve"],
        date(year, 12, 25): city["christmas"],
        date(year, 12, 31): city["new_years_eve"],
        date(year, 1, 1): city["new_years_day"],
        july_4: city["july_4"],
        memorial: city["memorial_day"],
        labor: city["labor_day"],
    }
    mlk, presidents = _nth_weekday(year, 1, 0, 3), _nth_weekday(year, 2, 0, 3)
    in_city |= {
        mlk: city["mlk_day"],
        presidents: city["presidents_day"],
        date(year, 6, 19): city["juneteenth"],
        _nth_weekday(year, 10, 0, 2): city["columbus_day"],
        date(year, 11, 11): city["veterans_day"],
        _nth_weekday(year, 11, 0, 1) + timedelta(days=1): city["election_day"],  # the Tuesday after the first Monday
    }
    for day in range(26, 31):
        in_city[date(year, 12, day)] = city["quiet_week"]
    at_airports = {
        thanksgiving - timedelta(days=1): air["thanksgiving_eve"],
        thanksgiving: air["thanksgiving"],
        thanksgiving + timedelta(days=3): air["thanksgiving_sunday"],
        date(year, 12, 25): air["christmas"],
        date(year, 1, 1): air["new_year_return"],
        date(year, 1, 2): air["new_year_return"],
        memorial - timedelta(days=3): air["holiday_friday"],
        memorial: air["holiday_monday"],
        labor - timedelta(days=3): air["holiday_friday"],
        labor: air["holiday_monday"],
        july_4 - timedelta(days=1): air["holiday_friday"],
        mlk: air["long_weekend_monday"],
        presidents: air["long_weekend_monday"],
    }
    for day in range(20, 24):
        at_airports[date(year, 12, day)] = air["christmas_rush"]
    return in_city, at_airports


def clock_hours(hours: pd.DatetimeIndex) -> np.ndarray:
    """How many real hours each wall-clock hour holds in New York: 0 (skipped), 1, or 2 (repeated)."""
    counts = np.ones(len(hours))
    for index, stamp in enumerate(hours):
        if stamp.month not in (3, 11) or stamp.hour not in (1, 2) or stamp.day > 14:
            continue
        wall = stamp.to_pydatetime()
        first = wall.replace(tzinfo=NEW_YORK, fold=0)
        if first.astimezone(UTC).astimezone(NEW_YORK).replace(tzinfo=None) != wall:
            counts[index] = 0.0
        elif first.utcoffset() != wall.replace(tzinfo=NEW_YORK, fold=1).utcoffset():
            counts[index] = 2.0
    return counts


# --- the weather --------------------------------------------------------------------------------------------


def _day_normals(days: list[date]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Normal daily mean temperature (interpolated between mid-months), wet-day probability and wet-day amount."""
    tavg, wet, amount = [], [], []
    mids = np.array([-15.5, *(15.5 + 30.4 * np.arange(12)), 380.0])
    table = np.concatenate([[facts.NORMAL_TAVG_C[-1]], facts.NORMAL_TAVG_C, [facts.NORMAL_TAVG_C[0]]])
    for day in days:
        month_days = calendar.monthrange(day.year, day.month)[1]
        tavg.append(np.interp(day.timetuple().tm_yday, mids, table))
        wet.append(facts.NORMAL_WET_DAYS[day.month - 1] / month_days)
        amount.append(facts.NORMAL_PRCP_MM[day.month - 1] / facts.NORMAL_WET_DAYS[day.month - 1])
    return np.array(tavg), np.array(wet), np.array(amount)


@cache
def _regional_streams(seed: int, days: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The region's daily temperature anomaly, wet-day draw and rain-amount draw from the fixed origin on: a
    prefix of the same streams whatever the length asked, so a month never depends on other months."""
    rng_anomaly = np.random.default_rng([seed, 101])
    rng_wet = np.random.default_rng([seed, 102])
    rng_amount = np.random.default_rng([seed, 103])
    shocks = rng_anomaly.standard_normal(days)
    anomaly = np.empty(days)
    phi = facts.ANOMALY_PERSISTENCE
    scale = facts.ANOMALY_SD_C * np.sqrt(1 - phi**2)
    level = shocks[0] * facts.ANOMALY_SD_C if days else 0.0
    for index in range(days):
        level = phi * level + scale * shocks[index] if index else level
        anomaly[index] = level
    return anomaly, rng_wet.random(days), rng_amount.exponential(1.0, days)


def daily_weather(month: str, counties: list[str], seed: int) -> pd.DataFrame:
    """Daily prcp (mm), tavg, tmin, tmax (C) per county: NYC's climate by date, one regional pattern with memory
    across days, and local noise."""
    start = month_start(month).date()
    days = calendar.monthrange(start.year, start.month)[1]
    dates = [start + timedelta(days=d) for d in range(days)]
    offset = (start - facts.WEATHER_ORIGIN).days
    if offset < 0:
        msg = (
            f"The sample source cannot write {month}: its weather starts at {facts.WEATHER_ORIGIN:%Y-%m}; "
            f"choose --months from {facts.WEATHER_ORIGIN:%Y-%m} on"
        )
        raise SampleMonthUnavailable(msg)
    anomaly, wet_draw, amount_draw = (stream[offset:] for stream in _regional_streams(seed, offset + days))
    normal_tavg, wet_probability, wet_amount = _day_normals(dates)
    wet_day = wet_draw < wet_probability
    regional_rain = np.where(wet_day, amount_draw * wet_amount, 0.0)
    rng = month_seed(seed, month, stream=1)
    frames = []
    for county in counties:
        tavg = normal_tavg + anomaly + rng.normal(0, 0.6, days)
        spread = np.abs(rng.normal(facts.DIURNAL_RANGE_C / 2, 1.0, days))
        rain = np.where(wet_day, regional_rain * rng.uniform(0.7, 1.3, days), 0.0)
        frames.append(
            pd.DataFrame(
                {
                    "county_fips": county,
                    "date": dates,
                    "prcp": rain.round(2),
                    "tavg": tavg.round(2),
                    "tmin": (tavg - spread).round(2),
                    "tmax": (tavg + spread).round(2),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def weather_multiplier(prcp: np.ndarray, tavg: np.ndarray, response: np.ndarray) -> np.ndarray:
    """Demand against a dry mild day: rain (and light snow) lift it by the zone's ``response``, heavy snow cuts it
    everywhere, cold lifts it a little where rain does."""
    prcp, tavg, response = np.asarray(prcp), np.asarray(tavg), np.asarray(response)
    snow = (tavg <= 0.0) & (prcp > 0.0)
    lift = np.minimum(prcp * facts.RAIN_EFFECT_PER_MM, facts.RAIN_EFFECT_CAP)
    lift = np.where(snow & (prcp > facts.SNOW_LIGHT_MM), 0.0, lift)
    cut = facts.SNOW_CUT_MAX * np.clip(
        (prcp - facts.SNOW_HEAVY_MM) / (facts.SNOW_CUT_FULL_MM - facts.SNOW_HEAVY_MM), 0.0, 1.0
    )
    cut = np.where(snow, cut, 0.0)
    cold = np.maximum(facts.COLD_THRESHOLD_C - tavg, 0.0) * facts.COLD_EFFECT_PER_DEGREE * (response > 0)
    return (1.0 + response * lift + cold) * (1.0 - cut)


def expected_weather_multiplier(dates: list[date], response: np.ndarray) -> np.ndarray:
    """The mean weather effect over the climatology of each date, per response: shape ``(days, len(response))``."""
    rng = np.random.default_rng(20_240_101)  # fixed: the climatology, not a year's weather
    anomaly = rng.standard_normal(CLIMATE_SAMPLES) * np.hypot(facts.ANOMALY_SD_C, 0.6)
    wet_draw = rng.random(CLIMATE_SAMPLES)
    amount = rng.exponential(1.0, CLIMATE_SAMPLES) * rng.uniform(0.7, 1.3, CLIMATE_SAMPLES)
    normal_tavg, wet_probability, wet_amount = _day_normals(dates)
    unique, inverse = np.unique(response, return_inverse=True)
    out = np.empty((len(dates), len(unique)))
    for index in range(len(dates)):
        tavg = normal_tavg[index] + anomaly
        prcp = np.where(wet_draw < wet_probability[index], amount * wet_amount[index], 0.0)
        out[index] = weather_multiplier(prcp[:, None], tavg[:, None], unique[None, :]).mean(axis=0)
    return out[:, inverse]


# --- the month's rates --------------------------------------------------------------------------------------


def _week_shapes(hours: pd.DatetimeIndex) -> np.ndarray:
    """Relative demand per hour for each zone type: shape ``(hours, types)``."""
    weekend = np.asarray(hours.day_of_week >= 5)
    hour, dow = np.asarray(hours.hour), np.asarray(hours.day_of_week)
    shapes = np.empty((len(hours), len(ZONE_TYPES)))
    for index, kind in enumerate(ZONE_TYPES):
        weekday_profile, weekend_profile = (np.asarray(p) / np.mean(p) for p in facts.HOUR_PROFILES[kind])
        week = np.asarray(facts.DAY_OF_WEEK[kind]) / np.mean(facts.DAY_OF_WEEK[kind])
        shapes[:, index] = np.where(weekend, weekend_profile[hour], weekday_profile[hour]) * week[dow]
    return shapes


def _holiday_factors(hours: pd.DatetimeIndex, airport: np.ndarray) -> np.ndarray:
    days = [stamp.date() for stamp in hours[::24]]
    in_city, at_airports = holidays(days[0].year)
    city = np.repeat([in_city.get(day, 1.0) for day in days], 24)
    air = np.repeat([at_airports.get(day, 1.0) for day in days], 24)
    night = np.isin(np.asarray(hours.hour), facts.NEW_YEAR_NIGHT_HOURS) & np.asarray(
        (hours.month == 1) & (hours.day == 1)
    )
    city = city * np.where(night, facts.NEW_YEAR_NIGHT_FACTOR / facts.HOLIDAY_CITY["new_years_day"], 1.0)
    return np.where(airport[None, :], air[:, None], city[:, None])


def hourly_rates(month: str, zones: tuple[Zone, ...], weather: pd.DataFrame, spec: DemandSpec) -> MonthRates:
    """The month's true and expected rates per (hour, zone)."""
    hours = month_hours(month)
    days = [stamp.date() for stamp in hours[::24]]
    n_days = len(days)
    day_of_hour = np.repeat(np.arange(n_days), 24)
    ids = np.array([zone.location_id for zone in zones])
    types = np.array([ZONE_TYPES.index(zone_type(zone)) for zone in zones])
    airport = types == ZONE_TYPES.index("airport")

    calendar_rate = _calendar_rates(month, zones, spec.seed)

    # Events: which nights is drawn; the oracle knows only the chance.
    rng_events = month_seed(spec.seed, month, stream=3)
    event_hour = np.isin(np.asarray(hours.hour), facts.EVENT_HOURS)
    actual_events, expected_events = np.ones_like(calendar_rate), np.ones_like(calendar_rate)
    for venue, (chance, season, lift) in sorted(facts.EVENT_VENUES.items()):
        nights = rng_events.random(n_days) < chance
        column = np.flatnonzero(ids == venue)
        if column.size == 0 or month_start(month).month not in season:
            continue
        actual_events[:, column[0]] = np.where(event_hour & nights[day_of_hour], 1 + lift, 1.0)
        expected_events[:, column[0]] = np.where(event_hour, 1 + chance * lift, 1.0)

    # Weather: each zone reads its borough's county (the airports, EWR and unknown zones Manhattan's, for snow).
    response = np.array([0.0 if is_airport else facts.RAIN_RESPONSE.get(zone.borough, 0.0)
                         for zone, is_airport in zip(zones, airport, strict=True)])  # fmt: skip
    counties = [BOROUGH_COUNTY_FIPS.get(zone.borough, MANHATTAN_COUNTY) for zone in zones]
    counties = [county if county in set(weather.county_fips) else MANHATTAN_COUNTY for county in counties]
    table = weather.pivot(index="date", columns="county_fips")
    prcp = table["prcp"].reindex(index=days)[counties].to_numpy()
    tavg = table["tavg"].reindex(index=days)[counties].to_numpy()
    actual_weather = weather_multiplier(prcp, tavg, response[None, :])
    expected_weather = expected_weather_multiplier(days, response)

    rng_noise = month_seed(spec.seed, month, stream=4)
    day_shock = np.exp(rng_noise.normal(-(facts.DAY_SHOCK_SD**2) / 2, facts.DAY_SHOCK_SD, n_days))
    shape = 1 / facts.ZONE_DAY_NOISE_CV**2
    zone_day = rng_noise.gamma(shape, 1 / shape, (n_days, len(zones)))

    daily_scale = _daily_scale(month, zones, spec)[day_of_hour, None]
    expected = calendar_rate * daily_scale * expected_events * expected_weather[day_of_hour]
    true = (calendar_rate * daily_scale) * actual_events * (actual_weather * day_shock[:, None] * zone_day)[day_of_hour]
    return MonthRates(hours, true, expected)


def _calendar_rates(month: str, zones: tuple[Zone, ...], seed: int) -> np.ndarray:
    """Each (hour, zone)'s relative rate from the calendar alone: week shape, holidays, clock, pricing, trend."""
    hours = month_hours(month)
    day_of_hour = np.repeat(np.arange(len(hours) // 24), 24)
    ids = np.array([zone.location_id for zone in zones])
    types = np.array([ZONE_TYPES.index(zone_type(zone)) for zone in zones])
    airport = types == ZONE_TYPES.index("airport")
    rates: np.ndarray = _week_shapes(hours)[:, types] * zone_shares(zones, seed)[None, :]
    rates *= _holiday_factors(hours, airport)
    rates *= clock_hours(hours)[:, None]
    priced = np.asarray(hours >= pd.Timestamp(facts.CONGESTION_PRICING_START))
    cbd = np.isin(ids, facts.CBD_ZONES)
    rates *= np.where(priced[:, None] & cbd[None, :], 1 + facts.CBD_DEMAND_CHANGE, 1.0)
    days = [stamp.date() for stamp in hours[::24]]
    rates *= np.array([_trend(day) for day in days])[day_of_hour, None]
    return rates


@cache
def _month_scale(month: str, zones: tuple[Zone, ...], spec: DemandSpec) -> float:
    """The factor that makes the month's expected trips TLC's published trips of that month, at the sample's scale."""
    hours = month_hours(month)
    days = [stamp.date() for stamp in hours[::24]]
    ids = np.array([zone.location_id for zone in zones])
    types = np.array([ZONE_TYPES.index(zone_type(zone)) for zone in zones])
    airport = types == ZONE_TYPES.index("airport")
    response = np.array([0.0 if is_airport else facts.RAIN_RESPONSE.get(zone.borough, 0.0)
                         for zone, is_airport in zip(zones, airport, strict=True)])  # fmt: skip
    event_hour = np.isin(np.asarray(hours.hour), facts.EVENT_HOURS)
    events = np.ones((len(hours), len(zones)))
    for venue, (chance, season, lift) in facts.EVENT_VENUES.items():
        if month_start(month).month in season:
            events[:, ids == venue] = np.where(event_hour, 1 + chance * lift, 1.0)[:, None]
    day_of_hour = np.repeat(np.arange(len(days)), 24)
    weather = expected_weather_multiplier(days, response)[day_of_hour]
    expected = (_calendar_rates(month, zones, spec.seed) * weather * events).sum()
    return float(spec.trips_per_month / reference_mean_month() * published_level(month) / expected)


def _daily_scale(month: str, zones: tuple[Zone, ...], spec: DemandSpec) -> np.ndarray:
    """Each day's scale, moving linearly between the months' scales at their middles: demand does not jump at
    midnight on the first of a month, though each month's total keeps close to TLC's (within about 2%)."""
    start = pd.Period(month, freq="M")
    middles, scales = [], []
    for offset in (-1, 0, 1):
        period = start + offset
        first = period.start_time
        middles.append(first + (period.end_time - first) / 2)
        scales.append(_month_scale(f"{period:%Y-%m}", zones, spec))
    days = month_hours(month)[::24] + pd.Timedelta(hours=12)
    elapsed = np.asarray((days - middles[0]) / pd.Timedelta(days=1))
    anchors = np.asarray([(middle - middles[0]) / pd.Timedelta(days=1) for middle in middles])
    return np.asarray(np.interp(elapsed, anchors, scales))


def truth_frame(rates: MonthRates, zones: tuple[Zone, ...]) -> pd.DataFrame:
    """The true and the expected rate per hour and zone, in the layout of the actuals table."""
    hours = rates.hours
    return pd.DataFrame(
        {
            "pickup_hour": np.repeat(hours.values, len(zones)),
            "pulocationid": np.tile([z.location_id for z in zones], len(hours)).astype("int32"),
            "true_rate": rates.true_rate.reshape(-1),
            "expected_rate": rates.expected_rate.reshape(-1),
        }
    )
