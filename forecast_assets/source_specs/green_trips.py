"""TLC's green-taxi (boro taxi) trip records: one Parquet file a month, published some weeks after the month ends.

Green taxis pick up street hails outside Manhattan's core and the airports, or are dispatched (``trip_type``). Their
files share yellow's columns, with ``lpep_`` times, ``ehail_fee`` (never filled since 2019) and no airport fee.
"""

from __future__ import annotations

import pyarrow as pa

from forecast_assets.source_specs.tlc_trips import trip_source
from forecast_assets.sources.tlc_format import TripLayout, TripSample
from taxi_core.wall_clock import wall_clock_doc

# The raw table's column types (Spark SQL). TLC's times are New York wall-clock times without a zone: TIMESTAMP_NTZ.
COLUMNS = {
    "vendorid": "int",
    "lpep_pickup_datetime": "timestamp_ntz",
    "lpep_dropoff_datetime": "timestamp_ntz",
    "store_and_fwd_flag": "string",
    "ratecodeid": "bigint",
    "pulocationid": "int",
    "dolocationid": "int",
    "passenger_count": "bigint",
    "trip_distance": "double",
    "fare_amount": "double",
    "extra": "double",
    "mta_tax": "double",
    "tip_amount": "double",
    "tolls_amount": "double",
    "ehail_fee": "double",
    "improvement_surcharge": "double",
    "total_amount": "double",
    "payment_type": "bigint",
    "trip_type": "bigint",
    "congestion_surcharge": "double",
    "cbd_congestion_fee": "double",
}
# What each column holds, after TLC's data dictionary for green-taxi trip records (amounts in US dollars).
DESCRIPTIONS = {
    "vendorid": "The LPEP provider that sent the record (1 Creative Mobile Technologies, 2 Curb Mobility, 6 Myle)",
    "lpep_pickup_datetime": wall_clock_doc("When the meter was engaged"),
    "lpep_dropoff_datetime": wall_clock_doc("When the meter was disengaged"),
    "store_and_fwd_flag": "Y when the vehicle held the record in memory before sending it (no connection), else N",
    "ratecodeid": "Rate in effect at the end of the trip (1 standard, 2 JFK, 3 Newark, 4 Nassau or Westchester, "
    "5 negotiated, 6 group ride, 99 unknown)",
    "pulocationid": "TLC taxi zone where the meter was engaged (nyc_taxi.taxi_zones.location_id)",
    "dolocationid": "TLC taxi zone where the meter was disengaged (nyc_taxi.taxi_zones.location_id)",
    "passenger_count": "Passengers in the vehicle, as the driver entered it",
    "trip_distance": "Trip distance in miles, as the taximeter reported it",
    "fare_amount": "Time-and-distance fare calculated by the meter",
    "extra": "Miscellaneous extras and surcharges",
    "mta_tax": "MTA tax, triggered by the metered rate in use",
    "tip_amount": "Tip; filled in for credit-card tips, cash tips are not included",
    "tolls_amount": "All tolls paid in the trip",
    "ehail_fee": "Fee for a trip hailed through an e-hail app (not filled since 2019)",
    "improvement_surcharge": "Improvement surcharge assessed on hailed trips at the flag drop",
    "total_amount": "Total charged to the passenger, cash tips not included",
    "payment_type": "How the passenger paid (1 credit card, 2 cash, 3 no charge, 4 dispute, 5 unknown, 6 voided trip)",
    "trip_type": "1 a street hail, 2 a dispatch (assigned by the base), as the driver entered it",
    "congestion_surcharge": "New York State congestion surcharge collected in the trip",
    "cbd_congestion_fee": "MTA Congestion Relief Zone toll per trip, charged from 5 January 2025",
}


def _published_schema(year: int) -> pa.Schema:
    """The schema TLC published for a year's files: codes and counts as floats in every year, ids as int64 until
    2023 and int32 from 2024, ``ehail_fee`` of Arrow type null until 2020."""
    ids: pa.DataType = pa.int64() if year <= 2023 else pa.int32()
    fields: list[tuple[str, pa.DataType]] = [
        ("VendorID", ids),
        ("lpep_pickup_datetime", pa.timestamp("us")),
        ("lpep_dropoff_datetime", pa.timestamp("us")),
        ("store_and_fwd_flag", pa.string()),
        ("RatecodeID", pa.float64()),
        ("PULocationID", ids),
        ("DOLocationID", ids),
        ("passenger_count", pa.float64()),
        ("trip_distance", pa.float64()),
        ("fare_amount", pa.float64()),
        ("extra", pa.float64()),
        ("mta_tax", pa.float64()),
        ("tip_amount", pa.float64()),
        ("tolls_amount", pa.float64()),
        ("ehail_fee", pa.null() if year <= 2020 else pa.float64()),
        ("improvement_surcharge", pa.float64()),
        ("total_amount", pa.float64()),
        ("payment_type", pa.float64()),
        ("trip_type", pa.float64()),
        ("congestion_surcharge", pa.float64()),
    ]
    if year >= 2025:
        fields.append(("cbd_congestion_fee", pa.float64()))
    return pa.schema(fields)


GREEN = TripLayout(
    service="green",
    columns=COLUMNS,
    descriptions=DESCRIPTIONS,
    pickup="lpep_pickup_datetime",
    dropoff="lpep_dropoff_datetime",
    optional=frozenset({"ehail_fee", "congestion_surcharge", "cbd_congestion_fee"}),
    published_schema=_published_schema,
    identity=("vendorid",),
    distance="trip_distance",
    charges=("fare_amount", "total_amount"),
    left_empty=frozenset({"ehail_fee"}),  # TLC has not filled the e-hail fee since 2019
    # Boro taxis: street hails outside Manhattan and the airports, about a fiftieth of yellow's trips (TLC's 2024
    # files: some 55 thousand green trips a month against 3 million yellow); a twentieth in the sample, so the
    # demo's months hold enough to audit. A street hail or a dispatch.
    sample=TripSample(
        share=0.05,
        stream=5,
        boroughs=frozenset({"Bronx", "Brooklyn", "Queens", "Staten Island"}),
        airports=False,
        choices={"trip_type": ((1, 2), (0.95, 0.05))},
    ),
)

SOURCE = trip_source(GREEN, name="green_trip", table="raw_green", file_asset="green_trip_files")
