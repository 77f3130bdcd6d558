"""A month's trips in any TLC layout: Poisson counts per (hour, zone) from the city's true rates, each trip given
plausible TLC fields by role, and the layout's own columns drawn as its :class:`TripSample` declares."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from forecast_assets.sources.tlc_format import TripDraw, TripLayout, TripSample
from taxi_core.errors import PipelineError
from taxi_core.zones import Zone
from taxi_demo import city_facts, demand_model
from taxi_demo.demand_model import DemandSpec

# A layout's own columns are drawn from the stream of its trips plus this.
OWN_COLUMNS_STREAM = 1000
# Share of trips whose pickup clock is wrong and falls outside the file's month, as in real files.
OUT_OF_MONTH_SHARE = 2e-5
AIRPORT_ZONES = city_facts.AIRPORT_ZONES


class LayoutNotSampled(KeyError, PipelineError):
    """A TLC trip layout that declares no sample, or whose file has a column the sample cannot draw."""


def sample_of(layout: TripLayout) -> TripSample:
    if layout.sample is None:
        msg = (
            f"The TLC {layout.service} trip layout declares no sample: give its TripLayout a sample=TripSample(...) "
            "(its share of the city's demand, where it picks up, and the draws of its own columns)"
        )
        raise LayoutNotSampled(msg)
    return layout.sample


def serves(sample: TripSample, zone: Zone) -> bool:
    in_borough = sample.boroughs is None or zone.borough in sample.boroughs
    return in_borough and (sample.airports or zone.location_id not in AIRPORT_ZONES)


def layout_trips(
    month: str, zones: tuple[Zone, ...], hours: pd.DatetimeIndex, true_rate: np.ndarray, spec: DemandSpec,
    layout: TripLayout,
) -> pa.Table:  # fmt: skip
    """The month's trips of ``layout``'s service: its share of the city's trips, spread over the zones it serves as
    the city's demand is."""
    sample = sample_of(layout)
    served = np.array([serves(sample, zone) for zone in zones])
    served_rate = true_rate * served
    rate = served_rate * (sample.share * true_rate.sum() / served_rate.sum())
    return simulate_trips(month, zones, hours, rate, spec, layout, sample.stream)


def simulate_trips(
    month: str,
    zones: tuple[Zone, ...],
    hours: pd.DatetimeIndex,
    rates: np.ndarray,
    spec: DemandSpec,
    layout: TripLayout,
    stream: int = 2,
) -> pa.Table:
    """Draw Poisson trip counts per (hour, zone) and give each trip plausible TLC fields, in ``layout``'s file."""
    rng = demand_model.month_seed(spec.seed, month, stream=stream)
    counts = rng.poisson(rates)
    n = int(counts.sum())
    hour_index, zone_index = np.nonzero(counts)
    repeats = counts[hour_index, zone_index]
    hour_of_trip = np.repeat(hours.values[hour_index], repeats)
    location_ids = np.array([z.location_id for z in zones])
    pickup_zone = np.repeat(location_ids[zone_index], repeats)

    pickup = hour_of_trip + rng.integers(0, 3600, n).astype("timedelta64[s]")
    outliers = rng.random(n) < OUT_OF_MONTH_SHARE
    shift = rng.choice([-400, -40, 40, 400], size=outliers.sum()).astype("timedelta64[D]")
    pickup[outliers] = pickup[outliers] + shift

    distance = np.round(rng.lognormal(0.75, 0.75, n), 2)
    airport = np.isin(pickup_zone, AIRPORT_ZONES)
    distance[airport] += 12.0
    minutes = distance / rng.uniform(7, 16, n) * 60 + rng.exponential(3, n)
    dropoff = pickup + (minutes * 60).astype("timedelta64[s]")
    dropoff_zone = rng.choice(location_ids, size=n, p=demand_model.dropoff_shares(zones, spec.seed))

    year = demand_model.month_start(month).year
    payment = rng.choice([1, 2, 3, 4], size=n, p=[0.78, 0.19, 0.02, 0.01])
    fare = np.round(3.0 + 2.5 * distance + 0.7 * minutes, 2)
    extra = rng.choice([0.0, 1.0, 2.5], size=n, p=[0.5, 0.3, 0.2])
    tip = np.where(payment == 1, np.round(fare * rng.uniform(0.1, 0.3, n), 2), 0.0)
    tolls = np.where(airport & (rng.random(n) < 0.4), 6.94, 0.0)
    manhattan = np.isin(pickup_zone, [z.location_id for z in zones if z.borough == "Manhattan"])
    congestion = np.where(manhattan, 2.5, 0.0)
    airport_fee = np.where(airport, 1.75, 0.0)
    # The Congestion Relief Zone toll on trips that start or end in the zone, from its first day.
    cbd = np.isin(pickup_zone, city_facts.CBD_ZONES) | np.isin(dropoff_zone, city_facts.CBD_ZONES)
    priced = pickup >= np.datetime64(city_facts.CONGESTION_PRICING_START)
    cbd_fee = np.where(cbd & priced, city_facts.CBD_CONGESTION_FEE, 0.0)
    total = fare + extra + 0.5 + tip + tolls + 1.0 + congestion + airport_fee
    if year >= 2025:
        total = total + cbd_fee
    # Trips reported without a meter reading (payment type 0 in real files) lack these fields.
    unreported = rng.random(n) < 0.02

    order = np.argsort(pickup, kind="stable")
    columns = {
        "vendorid": rng.choice([1, 2], size=n, p=[0.3, 0.7]),
        layout.pickup: pickup,
        layout.dropoff: dropoff,
        "passenger_count": _nullable(rng.choice([1, 1, 1, 2, 3, 4], size=n), unreported),
        "trip_distance": distance,
        "ratecodeid": _nullable(np.where(pickup_zone == 132, 2, 1), unreported),
        "store_and_fwd_flag": _nullable(np.where(rng.random(n) < 0.005, "Y", "N"), unreported),
        "pulocationid": pickup_zone,
        "dolocationid": dropoff_zone,
        "payment_type": np.where(unreported, 0, payment),
        "fare_amount": fare,
        "extra": extra,
        "mta_tax": np.full(n, 0.5),
        "tip_amount": tip,
        "tolls_amount": tolls,
        "improvement_surcharge": np.full(n, 1.0),
        "total_amount": np.round(total, 2),
        "congestion_surcharge": _nullable(congestion, unreported),
        "airport_fee": _nullable(airport_fee, unreported),
        "cbd_congestion_fee": cbd_fee,
    }
    if layout.distance:
        columns[layout.distance] = distance
    draw = TripDraw(pickup, dropoff, minutes, distance, fare, tip, tolls, pickup_zone, dropoff_zone)
    columns |= _own_columns(layout, month, spec, stream, draw, unreported)
    schema = layout.published_schema(year)
    unknown = [field.name for field in schema if field.name.lower() not in columns and not pa.types.is_null(field.type)]
    if unknown:
        msg = (
            f"The sample source cannot write {layout.service} trips' columns {unknown}: draw them in its TripLayout's "
            "sample (TripSample.choices or drawn), or declare them left_empty"
        )
        raise LayoutNotSampled(msg)
    arrays = [
        pa.nulls(n)
        if pa.types.is_null(field.type)
        else pa.array(_take(columns[field.name.lower()], order), type=field.type, from_pandas=True)
        for field in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def _own_columns(
    layout: TripLayout, month: str, spec: DemandSpec, stream: int, draw: TripDraw, unreported: np.ndarray
) -> dict[str, pd.Series | np.ndarray]:
    """The columns only this layout has: its sample's draws, from a stream of their own (so a draw added to one
    layout changes no other file), its choices missing where the meter reported nothing; and the columns TLC leaves
    empty."""
    rng = demand_model.month_seed(spec.seed, month, stream=OWN_COLUMNS_STREAM + stream)
    sample = layout.sample or TripSample(share=0.0, stream=stream)
    n = len(draw.pickup)
    chosen: dict[str, pd.Series | np.ndarray] = {
        name: _nullable(rng.choice(np.array(values), size=n, p=weights), unreported)
        for name, (values, weights) in sample.choices.items()
    }
    drawn = {name: draw_column(draw, rng) for name, draw_column in sample.drawn.items()}
    empty = {name: _nullable(np.zeros(n), np.ones(n, dtype=bool)) for name in layout.left_empty}
    return chosen | drawn | empty


def _nullable(values: np.ndarray, missing: np.ndarray) -> pd.Series:
    series = pd.Series(values, dtype=object)
    series[missing] = None
    return series


def _take(values: np.ndarray | pd.Series, order: np.ndarray) -> np.ndarray:
    if isinstance(values, pd.Series):
        return values.iloc[order].to_numpy()
    return np.take(values, order)
