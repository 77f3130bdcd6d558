"""The months the tests' sample source holds, and its trips per month (the embedded pipeline and the cluster
profile's demo ingest the same)."""

TEST_MONTHS = ["2024-12", "2025-01"]
TEST_TRIPS_PER_MONTH = 20_000
# The learned candidates of the tests' weather version (Dagster's training job): only weather models, so the
# version the lineage must lead to the weather through is one; the baseline trains with them.
WEATHER_VERSION_CANDIDATES = "glm_weather,gbm_weather,glm_perfect_weather"


# The trip columns the audits read: identity, times, zones, distance, charges, and the columns that tell a year.
AUDITED_COLUMNS = {
    "vendorid", "tpep_pickup_datetime", "tpep_dropoff_datetime", "pulocationid", "dolocationid", "trip_distance",
    "fare_amount", "total_amount", "congestion_surcharge", "airport_fee", "cbd_congestion_fee",
}  # fmt: skip


def read_trips(path):
    """A sample yellow trip file's audited columns as the raw table names them (lower case), read with pyarrow; a
    column the file's year lacks is empty."""
    import numpy as np
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    wanted = [name for name in table.column_names if name.lower() in AUDITED_COLUMNS]
    trips = table.select(wanted).to_pandas().rename(columns=str.lower)
    for column in AUDITED_COLUMNS - set(trips.columns):
        trips[column] = np.nan
    return trips
