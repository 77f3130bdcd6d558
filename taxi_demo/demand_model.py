"""The known demand process behind the sample source: zone rates, seasonality, weather, noise.

Because the process is known, the true hourly rate of every zone is recorded too, which gives
the best error any forecast can reach (the noise floor).
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import pandas as pd

from taxi_core.zones import BOROUGH_COUNTY_FIPS, Zone

# Relative demand by hour of day, midnight first: a night trough and an evening peak.
WEEKDAY_PROFILE = np.array(
    [0.45, 0.28, 0.18, 0.12, 0.12, 0.22, 0.50, 0.85, 1.05, 1.05, 1.00, 1.02,
     1.08, 1.08, 1.12, 1.18, 1.20, 1.35, 1.50, 1.45, 1.30, 1.20, 1.05, 0.75]
)  # fmt: skip
WEEKEND_PROFILE = np.array(
    [0.95, 0.85, 0.70, 0.50, 0.30, 0.20, 0.22, 0.35, 0.55, 0.75, 0.95, 1.05,
     1.10, 1.12, 1.12, 1.12, 1.12, 1.15, 1.20, 1.20, 1.15, 1.10, 1.05, 1.00]
)  # fmt: skip
DAY_OF_WEEK_FACTOR = np.array([0.90, 0.98, 1.02, 1.06, 1.10, 1.05, 0.88])  # Monday first
BOROUGH_WEIGHT = {
    "Manhattan": 6.0, "Queens": 0.5, "Brooklyn": 0.45, "Bronx": 0.12,
    "Staten Island": 0.02, "EWR": 0.08, "Unknown": 0.3, "N/A": 0.05,
}  # fmt: skip
AIRPORT_BOOST = 25.0
AVERAGE_HOURS_PER_MONTH = 365.25 * 24 / 12

# The weather effect: rain lifts demand up to +30 %, every degree below 5 C adds 1.5 %.
RAIN_EFFECT_PER_MM = 0.03
RAIN_EFFECT_CAP = 0.30
COLD_THRESHOLD_C = 5.0
COLD_EFFECT_PER_DEGREE = 0.015


@dataclass(frozen=True)
class DemandSpec:
    trips_per_month: int
    seed: int


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
        weights[index] *= BOROUGH_WEIGHT.get(zone.borough, 0.1)
        if zone.service_zone == "Airports":
            weights[index] *= AIRPORT_BOOST
    return weights / weights.sum()


def daily_weather(month: str, counties: list[str], seed: int) -> pd.DataFrame:
    """Daily prcp (mm), tavg, tmin, tmax (C) per county: one regional pattern plus local noise."""
    start = month_start(month)
    days = calendar.monthrange(start.year, start.month)[1]
    rng = month_seed(seed, month, stream=1)
    day_of_year = np.array([(start + timedelta(days=d)).timetuple().tm_yday for d in range(days)])
    seasonal = 12.5 - 11.0 * np.cos(2 * np.pi * (day_of_year - 20) / 365.25)
    regional_anomaly = np.cumsum(rng.normal(0, 1.6, days)) * 0.6
    wet_day = rng.random(days) < 0.32
    regional_rain = np.where(wet_day, rng.gamma(0.9, 9.0, days), 0.0)
    frames = []
    for county in counties:
        tavg = seasonal + regional_anomaly + rng.normal(0, 0.6, days)
        spread = np.abs(rng.normal(4.5, 1.0, days))
        rain = np.where(wet_day, regional_rain * rng.uniform(0.7, 1.3, days), 0.0)
        frames.append(
            pd.DataFrame(
                {
                    "county_fips": county,
                    "date": [start.date() + timedelta(days=d) for d in range(days)],
                    "prcp": rain.round(2),
                    "tavg": tavg.round(2),
                    "tmin": (tavg - spread).round(2),
                    "tmax": (tavg + spread).round(2),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def weather_multiplier(prcp: np.ndarray, tavg: np.ndarray) -> np.ndarray:
    rain = np.minimum(np.asarray(prcp) * RAIN_EFFECT_PER_MM, RAIN_EFFECT_CAP)
    cold = np.maximum(COLD_THRESHOLD_C - np.asarray(tavg), 0.0) * COLD_EFFECT_PER_DEGREE
    return 1.0 + rain + cold


def hourly_rates(
    month: str, zones: tuple[Zone, ...], weather: pd.DataFrame, spec: DemandSpec
) -> tuple[pd.DatetimeIndex, np.ndarray]:
    """Expected trips per (hour, zone) for a month: shape ``(hours, zones)``."""
    hours = month_hours(month)
    weekend = hours.day_of_week >= 5
    profile = np.where(weekend, WEEKEND_PROFILE[hours.hour], WEEKDAY_PROFILE[hours.hour])
    shape = profile * DAY_OF_WEEK_FACTOR[hours.day_of_week]
    reference = (5 * WEEKDAY_PROFILE.mean() * DAY_OF_WEEK_FACTOR[:5].mean()
                 + 2 * WEEKEND_PROFILE.mean() * DAY_OF_WEEK_FACTOR[5:].mean()) / 7  # fmt: skip
    per_hour = spec.trips_per_month / AVERAGE_HOURS_PER_MONTH
    base = np.outer(shape / reference, zone_shares(zones, spec.seed) * per_hour)

    by_county = weather.set_index(["county_fips", "date"])
    day_index = [d.date() for d in hours]
    effects = np.ones_like(base)
    for column, zone in enumerate(zones):
        county = BOROUGH_COUNTY_FIPS.get(zone.borough)
        if county is None or county not in by_county.index.get_level_values(0):
            continue
        county_days = by_county.loc[county].reindex(day_index)
        effects[:, column] = weather_multiplier(county_days["prcp"].to_numpy(), county_days["tavg"].to_numpy())
    return hours, base * effects


def truth_frame(hours: pd.DatetimeIndex, zones: tuple[Zone, ...], rates: np.ndarray) -> pd.DataFrame:
    """The true rate per hour and zone, in the layout of the actuals table."""
    return pd.DataFrame(
        {
            "pickup_hour": np.repeat(hours.values, len(zones)),
            "pulocationid": np.tile([z.location_id for z in zones], len(hours)).astype("int32"),
            "true_rate": rates.reshape(-1),
        }
    )
