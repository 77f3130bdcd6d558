"""The months the tests' sample source holds, and its trips per month (the embedded pipeline and the cluster
profile's demo ingest the same)."""

TEST_MONTHS = ["2024-12", "2025-01"]
TEST_TRIPS_PER_MONTH = 20_000
