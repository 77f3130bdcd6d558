"""The names every part of the project agrees on: tables, the model, the flow, the code location, the sources."""

NAMESPACE = "nyc_taxi"
RAW_YELLOW = f"{NAMESPACE}.raw_yellow"
RAW_WEATHER = f"{NAMESPACE}.raw_weather"
ACTUALS = f"{NAMESPACE}.yellow_rides_hourly_actuals"
FORECAST = f"{NAMESPACE}.yellow_rides_hourly_forecast"
# Every champion/challenger decision, newest last: which model version serves (flows/forecasting/registry.py).
MODEL_PROMOTIONS = f"{NAMESPACE}.model_promotions"
# Each day's forecast by the serving version (every zone, borough and the city), and each forecast day's score once
# its actuals are published (forecast_assets/assets/forecast_loop.py).
DAILY_FORECAST = f"{NAMESPACE}.yellow_rides_daily_forecast"
FORECAST_ACCURACY = f"{NAMESPACE}.forecast_accuracy"
# Each model version's live figures as the newest scoring left them, in the state folder: what `taxi-lineage model`
# reads without a table format's library.
LIVE_ACCURACY_FILE = "lineage/live_accuracy.json"
# TLC's zone lookup as published (forecast_assets/source_specs/taxi_zones.py): the forecast names its zones from it.
ZONES = f"{NAMESPACE}.taxi_zones"

MODEL_NAME = "forecast_model"
# A model version's hyperparameter naming the candidate it is (its champion), and the entry of its column lineage
# for what it learned to predict (every other entry is a feature): the flow records both, the lineage reads them.
MODEL_CANDIDATE_PARAM = "name"
MODEL_TARGET = "target"
FLOW_NAME = "TrainForecastModelFlow"
# The Dagster code location in workspace.yaml.
LOCATION_NAME = "taxi_demand"
CATALOG_NAME = "lakehouse"
TRIP_FILES = "taxi_trip_files"
WEATHER_FILES = "weather_files"
# The staging folders of the two sources' files.
TRIP_FOLDER, WEATHER_FOLDER = "taxi", "weather"
TOP_ZONES = 50

# The first month of TLC's yellow-taxi trip records.
TLC_FIRST_MONTH = "2009-01"
TLC_BASE_URL = "https://d37ci6vzurychx.cloudfront.net/trip-data"
NOAA_BASE_URL = "https://www.ncei.noaa.gov/data/nclimgrid-daily/access/averages"


def table_name(identifier: str) -> str:
    """``nyc_taxi.raw_yellow`` -> ``raw_yellow``."""
    return identifier.split(".", 1)[1]
