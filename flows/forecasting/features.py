"""Turn hourly actuals (and optionally daily weather) into a feature table for direct forecasting."""

from __future__ import annotations

import pandas as pd

from taxi_core.zones import BOROUGH_COUNTY_FIPS, load_zones

CALENDAR_FEATURES = ["hour", "day_of_week", "is_weekend"]
WEATHER_FEATURES = ["prcp", "tavg"]
# Lags shorter than the horizon are unknown when the forecast is made.
CANDIDATE_LAGS = (24, 48, 168, 336, 504)
SEASONAL_LAGS = (168, 336, 504)


def lags_for(horizon_hours: int) -> list[int]:
    return [lag for lag in CANDIDATE_LAGS if lag >= horizon_hours]


def zone_counties() -> dict[int, str]:
    """Pickup zone -> NOAA county, through the zone's borough."""
    return {
        zone.location_id: BOROUGH_COUNTY_FIPS[zone.borough]
        for zone in load_zones()
        if zone.borough in BOROUGH_COUNTY_FIPS
    }


def complete_grid(actuals: pd.DataFrame, zones: list[int], start: pd.Timestamp, end: pd.Timestamp) -> pd.DataFrame:
    """Every (zone, hour) in ``[start, end)``; hours without actuals are NaN (the future, or a gap)."""
    hours = pd.date_range(start, end, freq="h", inclusive="left")
    grid = pd.MultiIndex.from_product([zones, hours], names=["pulocationid", "pickup_hour"]).to_frame(index=False)
    return grid.merge(actuals, on=["pulocationid", "pickup_hour"], how="left")


def build_features(
    grid: pd.DataFrame, horizon_hours: int, weather: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, list[str]]:
    """Calendar, lag and seasonal features per (zone, hour); weather joins by the zone's county."""
    frame = grid.sort_values(["pulocationid", "pickup_hour"]).reset_index(drop=True)
    by_zone = frame.groupby("pulocationid", sort=False)["total_rides"]
    lags = lags_for(horizon_hours)
    for lag in lags:
        frame[f"lag_{lag}"] = by_zone.shift(lag)
    seasonal = [f"lag_{lag}" for lag in SEASONAL_LAGS if lag in lags]
    frame["seasonal_mean"] = frame[seasonal].mean(axis=1)
    frame["hour"] = frame.pickup_hour.dt.hour
    frame["day_of_week"] = frame.pickup_hour.dt.day_of_week
    frame["is_weekend"] = (frame.day_of_week >= 5).astype(int)
    features = ["pulocationid", *CALENDAR_FEATURES, *(f"lag_{lag}" for lag in lags), "seasonal_mean"]
    if weather is not None:
        frame = _join_weather(frame, weather)
        features += WEATHER_FEATURES
    return frame, features


def _join_weather(frame: pd.DataFrame, weather: pd.DataFrame) -> pd.DataFrame:
    """Same-day observed weather; days past the table take the last observed day per county."""
    counties = zone_counties()
    frame["county_fips"] = frame.pulocationid.map(counties)
    frame["date"] = frame.pickup_hour.dt.normalize()
    days = pd.date_range(weather.date.min(), frame.date.max(), freq="D")
    filled = (
        weather.set_index(["county_fips", "date"])[WEATHER_FEATURES]
        .unstack("county_fips")
        .reindex(days)
        .ffill()
        .stack("county_fips", future_stack=True)
        .rename_axis(["date", "county_fips"])
        .reset_index()
    )
    return frame.merge(filled, on=["county_fips", "date"], how="left").drop(columns=["county_fips", "date"])


def training_rows(frame: pd.DataFrame, features: list[str]) -> pd.DataFrame:
    """Rows with a known target and every lag present."""
    lag_columns = [f for f in features if f.startswith("lag_")]
    return frame.dropna(subset=["total_rides", *lag_columns])
