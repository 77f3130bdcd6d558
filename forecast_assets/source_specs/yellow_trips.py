"""TLC's yellow-taxi trip records: one Parquet file a month, published some weeks after the month ends."""

from __future__ import annotations

import pyarrow as pa

from forecast_assets.source_specs.tlc_trips import trip_source
from forecast_assets.sources.tlc_format import TripLayout, TripSample
from taxi_core.names import TRIP_FILES, TRIP_FOLDER
from taxi_core.wall_clock import wall_clock_doc

# The raw table's column types (Spark SQL), one per TLC column after normalisation. TLC's times are New York
# wall-clock times without a zone: TIMESTAMP_NTZ (Iceberg's timestamp without zone).
COLUMNS = {
    "vendorid": "int",
    "tpep_pickup_datetime": "timestamp_ntz",
    "tpep_dropoff_datetime": "timestamp_ntz",
    "passenger_count": "bigint",
    "trip_distance": "double",
    "ratecodeid": "bigint",
    "store_and_fwd_flag": "string",
    "pulocationid": "int",
    "dolocationid": "int",
    "payment_type": "bigint",
    "fare_amount": "double",
    "extra": "double",
    "mta_tax": "double",
    "tip_amount": "double",
    "tolls_amount": "double",
    "improvement_surcharge": "double",
    "total_amount": "double",
    "congestion_surcharge": "double",
    "airport_fee": "double",
    "cbd_congestion_fee": "double",
}
# What each column holds, after TLC's data dictionary for yellow-taxi trip records (amounts in US dollars).
DESCRIPTIONS = {
    "vendorid": "The TPEP provider that sent the record "
    "(1 Creative Mobile Technologies, 2 Curb Mobility, 6 Myle, 7 Helix)",
    "tpep_pickup_datetime": wall_clock_doc("When the meter was engaged"),
    "tpep_dropoff_datetime": wall_clock_doc("When the meter was disengaged"),
    "passenger_count": "Passengers in the vehicle, as the driver entered it",
    "trip_distance": "Trip distance in miles, as the taximeter reported it",
    "ratecodeid": "Rate in effect at the end of the trip (1 standard, 2 JFK, 3 Newark, 4 Nassau or Westchester, "
    "5 negotiated, 6 group ride, 99 unknown)",
    "store_and_fwd_flag": "Y when the vehicle held the record in memory before sending it (no connection), else N",
    "pulocationid": "TLC taxi zone where the meter was engaged (nyc_taxi.taxi_zones.location_id)",
    "dolocationid": "TLC taxi zone where the meter was disengaged (nyc_taxi.taxi_zones.location_id)",
    "payment_type": "How the passenger paid (0 flex fare, 1 credit card, 2 cash, 3 no charge, 4 dispute, 5 unknown, "
    "6 voided trip)",
    "fare_amount": "Time-and-distance fare calculated by the meter",
    "extra": "Miscellaneous extras and surcharges",
    "mta_tax": "MTA tax, triggered by the metered rate in use",
    "tip_amount": "Tip; filled in for credit-card tips, cash tips are not included",
    "tolls_amount": "All tolls paid in the trip",
    "improvement_surcharge": "Improvement surcharge assessed at the flag drop",
    "total_amount": "Total charged to the passenger, cash tips not included",
    "congestion_surcharge": "New York State congestion surcharge collected in the trip",
    "airport_fee": "Fee for pick-ups at LaGuardia and John F. Kennedy airports",
    "cbd_congestion_fee": "MTA Congestion Relief Zone toll per trip, charged from 5 January 2025",
}


def _published_schema(year: int) -> pa.Schema:
    """The schema TLC published for a year's files."""
    ids: pa.DataType
    counts: pa.DataType
    location: pa.DataType
    airport_type: pa.DataType
    if year <= 2023:
        ids, counts, airport = pa.int64(), pa.float64(), "airport_fee"
        location = pa.int64()
        # Files before 2021 were republished with an airport_fee column that is entirely empty.
        airport_type = pa.null() if year <= 2020 else pa.float64()
    else:
        ids, counts, airport = pa.int32(), pa.int64(), "Airport_fee"
        location = pa.int32()
        airport_type = pa.float64()
    fields: list[tuple[str, pa.DataType]] = [
        ("VendorID", ids),
        ("tpep_pickup_datetime", pa.timestamp("us")),
        ("tpep_dropoff_datetime", pa.timestamp("us")),
        ("passenger_count", counts),
        ("trip_distance", pa.float64()),
        ("RatecodeID", counts),
        ("store_and_fwd_flag", pa.string()),
        ("PULocationID", location),
        ("DOLocationID", location),
        ("payment_type", pa.int64()),
        ("fare_amount", pa.float64()),
        ("extra", pa.float64()),
        ("mta_tax", pa.float64()),
        ("tip_amount", pa.float64()),
        ("tolls_amount", pa.float64()),
        ("improvement_surcharge", pa.float64()),
        ("total_amount", pa.float64()),
        ("congestion_surcharge", pa.float64()),
        (airport, airport_type),
    ]
    if year >= 2025:
        fields.append(("cbd_congestion_fee", pa.float64()))
    return pa.schema(fields)


YELLOW = TripLayout(
    service="yellow",
    columns=COLUMNS,
    descriptions=DESCRIPTIONS,
    pickup="tpep_pickup_datetime",
    dropoff="tpep_dropoff_datetime",
    # congestion_surcharge appeared in 2019, airport_fee in 2021 (capitalised as Airport_fee from 2024),
    # cbd_congestion_fee in 2025.
    optional=frozenset({"congestion_surcharge", "airport_fee", "cbd_congestion_fee"}),
    published_schema=_published_schema,
    identity=("vendorid",),
    distance="trip_distance",
    charges=("fare_amount", "total_amount"),
    sample=TripSample(share=1.0, stream=2),
)

SOURCE = trip_source(YELLOW, name="trip", folder=TRIP_FOLDER, table="raw_yellow", file_asset=TRIP_FILES)

RAW_YELLOW = SOURCE.table
