"""The TLC yellow-taxi Parquet layout as published, and how it drifted across years."""

from __future__ import annotations

import re

import pyarrow as pa

from taxi_core.wall_clock import wall_clock_doc

TRIP_FILE_TEMPLATE = "yellow_tripdata_{month}.parquet"
TRIP_FILE_NAME = re.compile(r"yellow_tripdata_(\d{4}-\d{2})\.parquet")

# Columns every yellow file since 2017 has, by their lower-cased names, and the type family a
# file must hold for each (the exact width drifted: int64 vs int32, double vs int64).
REQUIRED_COLUMNS: dict[str, str] = {
    "vendorid": "integer",
    "tpep_pickup_datetime": "timestamp",
    "tpep_dropoff_datetime": "timestamp",
    "passenger_count": "number",
    "trip_distance": "number",
    "ratecodeid": "number",
    "store_and_fwd_flag": "string",
    "pulocationid": "integer",
    "dolocationid": "integer",
    "payment_type": "number",
    "fare_amount": "number",
    "extra": "number",
    "mta_tax": "number",
    "tip_amount": "number",
    "tolls_amount": "number",
    "improvement_surcharge": "number",
    "total_amount": "number",
}
# Columns that appeared later: congestion_surcharge (2019), airport_fee (2021, capitalised as
# Airport_fee from 2024), cbd_congestion_fee (2025).
OPTIONAL_COLUMNS: dict[str, str] = {
    "congestion_surcharge": "number",
    "airport_fee": "number",
    "cbd_congestion_fee": "number",
}

TIMESTAMP_COLUMNS = ("tpep_pickup_datetime", "tpep_dropoff_datetime")

# The raw table's column types (Spark SQL), one per TLC column after normalisation. TLC's times are New York
# wall-clock times without a zone: TIMESTAMP_NTZ (Iceberg's timestamp without zone).
RAW_COLUMN_TYPES: dict[str, str] = {
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
RAW_COLUMN_DESCRIPTIONS: dict[str, str] = {
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


def trip_file_name(month: str) -> str:
    """``month`` is ``YYYY-MM``."""
    return TRIP_FILE_TEMPLATE.format(month=month)


def trip_file_month(name: str) -> str | None:
    """The ``YYYY-MM`` a trip file's name carries, or None for any other name."""
    found = TRIP_FILE_NAME.fullmatch(name)
    return found.group(1) if found else None


def published_schema(year: int) -> pa.Schema:
    """The schema TLC published for a year's files."""
    if year <= 2023:
        ids, counts, airport = pa.int64(), pa.float64(), "airport_fee"
        location = pa.int64()
        # Files before 2021 were republished with an airport_fee column that is entirely empty.
        airport_type = pa.null() if year <= 2020 else pa.float64()
    else:
        ids, counts, airport = pa.int32(), pa.int64(), "Airport_fee"
        location = pa.int32()
        airport_type = pa.float64()
    fields = [
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


def type_family(arrow_type: pa.DataType) -> str:
    if pa.types.is_null(arrow_type):
        return "null"
    if pa.types.is_integer(arrow_type):
        return "integer"
    if pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type):
        return "float"
    if pa.types.is_timestamp(arrow_type):
        return "timestamp"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    return str(arrow_type)


def schema_problems(schema: pa.Schema) -> list[str]:
    """What keeps a file's schema from loading into the raw table; empty when it loads.

    Accepted drift: any capitalisation (``Airport_fee``), any integer width, integers or floats for
    counts and amounts, timestamps in any unit, and columns of Arrow type ``null`` (a column TLC
    left entirely empty, like ``airport_fee`` in 2019-2021) when the column is optional.
    """
    found = {field.name.lower(): type_family(field.type) for field in schema}
    problems = [f"missing column {name!r}" for name in REQUIRED_COLUMNS if name not in found]
    for name, wanted in (REQUIRED_COLUMNS | OPTIONAL_COLUMNS).items():
        have = found.get(name)
        if have is None or (have == "null" and name in OPTIONAL_COLUMNS):
            continue
        if have == "null":
            problems.append(f"column {name!r} is entirely empty (Arrow type null), but every trip needs it")
            continue
        accepted = {"number": {"integer", "float"}}.get(wanted, {wanted})
        if have not in accepted:
            problems.append(f"column {name!r} is {have}, expected {wanted}")
    return problems


def unmapped_columns(schema: pa.Schema) -> list[str]:
    """Columns the file has that the raw table does not (a new TLC column, for example)."""
    return [f.name for f in schema if f.name.lower() not in RAW_COLUMN_TYPES]
