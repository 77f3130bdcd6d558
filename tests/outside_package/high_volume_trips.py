"""TLC's high-volume for-hire trips (``fhvhv_tripdata``) as a source of another package: one declaration, registered
through the ``taxi_forecast.sources`` entry-point group by the tests that install it.

No ``VendorID``, ``trip_distance``, ``fare_amount`` or ``total_amount``; ``hvfhs_license_num``, ``request_datetime``,
``trip_miles``, ``base_passenger_fare`` and ``driver_pay`` instead. Its sample draws a request some minutes before
each pickup and the driver's pay from the fare.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from forecast_assets.source_specs.tlc_trips import trip_source
from forecast_assets.sources.tlc_format import TripDraw, TripLayout, TripSample

COLUMNS = {
    "hvfhs_license_num": "string",
    "dispatching_base_num": "string",
    "request_datetime": "timestamp_ntz",
    "pickup_datetime": "timestamp_ntz",
    "dropoff_datetime": "timestamp_ntz",
    "pulocationid": "int",
    "dolocationid": "int",
    "trip_miles": "double",
    "trip_time": "bigint",
    "base_passenger_fare": "double",
    "tolls": "double",
    "driver_pay": "double",
    "cbd_congestion_fee": "double",
}


def published_schema(year: int) -> pa.Schema:
    fields = [
        ("hvfhs_license_num", pa.string()),
        ("dispatching_base_num", pa.string()),
        ("request_datetime", pa.timestamp("us")),
        ("pickup_datetime", pa.timestamp("us")),
        ("dropoff_datetime", pa.timestamp("us")),
        ("PULocationID", pa.int32()),
        ("DOLocationID", pa.int32()),
        ("trip_miles", pa.float64()),
        ("trip_time", pa.int64()),
        ("base_passenger_fare", pa.float64()),
        ("tolls", pa.float64()),
        ("driver_pay", pa.float64()),
    ]
    return pa.schema(fields + ([("cbd_congestion_fee", pa.float64())] if year >= 2025 else []))


def _requested(draw: TripDraw, rng: np.random.Generator) -> np.ndarray:
    return draw.pickup - rng.integers(60, 900, len(draw.pickup)).astype("timedelta64[s]")


SAMPLE = TripSample(
    share=1.0,
    stream=7,
    choices={
        "hvfhs_license_num": (("HV0003", "HV0005"), (0.7, 0.3)),
        "dispatching_base_num": (("B03404", "B03406"), (0.6, 0.4)),
    },
    drawn={
        "request_datetime": _requested,
        "trip_time": lambda draw, rng: (draw.minutes * 60).astype("int64"),
        "base_passenger_fare": lambda draw, rng: draw.fare,
        "tolls": lambda draw, rng: draw.tolls,
        "driver_pay": lambda draw, rng: np.round(draw.fare * 0.75, 2),
    },
)


def layout(**changes: Any) -> TripLayout:
    declared = {
        "service": "fhvhv",
        "columns": COLUMNS,
        "descriptions": {name: name for name in COLUMNS},
        "pickup": "pickup_datetime",
        "dropoff": "dropoff_datetime",
        "optional": frozenset({"cbd_congestion_fee"}),
        "published_schema": published_schema,
        "identity": ("hvfhs_license_num",),
        "distance": "trip_miles",
        "charges": ("base_passenger_fare", "driver_pay"),
        "sample": SAMPLE,
    }
    return TripLayout(**(declared | changes))


HIGH_VOLUME = layout()
SOURCE = trip_source(HIGH_VOLUME, name="fhvhv_trip", table="raw_fhvhv", file_asset="fhvhv_trip_files")
