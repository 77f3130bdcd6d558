"""The months the tests' sample source holds, and its trips per month (the embedded pipeline and the cluster
profile's demo ingest the same)."""

TEST_MONTHS = ["2024-12", "2025-01"]
TEST_TRIPS_PER_MONTH = 20_000
# The learned candidates of the tests' weather version (Dagster's training job): only weather models, so the
# version the lineage must lead to the weather through is one; the baseline trains with them.
WEATHER_VERSION_CANDIDATES = "glm_weather,gbm_weather,glm_perfect_weather"
