"""Which table columns the model's features, and so its forecasts, are computed from.

Each feature :func:`flows.forecasting.features.build_features` makes is traced to the columns of
the actuals or weather table it is computed from; the model's and the forecast table's column
lineage are derived from the features a model version actually used, so a version trained
without weather names no weather column.
"""

from __future__ import annotations

from collections import defaultdict

from bridge.translate.column_lineage import (
    DIRECT,
    IDENTITY,
    INDIRECT,
    TRANSFORMATION,
    ColumnLineage,
    ColumnOrigin,
    InputColumn,
    Transformation,
)
from flows.forecasting.features import CALENDAR_FEATURES, PERFECT_WEATHER_FEATURES, WEATHER_FEATURES
from flows.forecasting.intervals import INTERVAL_COLUMNS
from taxi_core.errors import PipelineError
from taxi_core.names import ACTUALS, MODEL_TARGET, RAW_WEATHER, ZONES

COMPUTED = Transformation(DIRECT, TRANSFORMATION)
# Lags and seasonal means are taken per zone, in hour order: a window over zone and hour.
PER_ZONE_IN_HOUR_ORDER = (
    ColumnOrigin(InputColumn(ACTUALS, "pickup_hour"), (Transformation(INDIRECT, "WINDOW"),)),
    ColumnOrigin(InputColumn(ACTUALS, "pulocationid"), (Transformation(INDIRECT, "WINDOW"),)),
)
# A weather value is the row of its element, joined to the zone's county and the hour's day.
WEATHER_ROWS = (
    ColumnOrigin(InputColumn(RAW_WEATHER, "element"), (Transformation(INDIRECT, "FILTER"),)),
    ColumnOrigin(InputColumn(RAW_WEATHER, "county_fips"), (Transformation(INDIRECT, "JOIN"),)),
    ColumnOrigin(InputColumn(RAW_WEATHER, "date"), (Transformation(INDIRECT, "JOIN"),)),
)


# A zone's name and borough are the lookup's row of the forecast's zone.
ZONE_JOIN = (
    ColumnOrigin(InputColumn(ZONES, "location_id"), (Transformation(INDIRECT, "JOIN"),)),
    ColumnOrigin(InputColumn(ACTUALS, "pulocationid"), (Transformation(INDIRECT, "JOIN"),)),
)


class UnknownFeature(ValueError, PipelineError):
    """A feature with no known source columns."""


# The actuals' own columns, which a candidate may read as they are (a trend reads the hour itself).
ACTUALS_COLUMNS = ("pulocationid", "pickup_hour", "total_rides")


def feature_origins(feature: str) -> tuple[ColumnOrigin, ...]:
    """The table columns one feature, or one column of the actuals a candidate reads as it is, is computed from."""
    if feature in ACTUALS_COLUMNS:
        return (ColumnOrigin(InputColumn(ACTUALS, feature), (Transformation(DIRECT, IDENTITY),)),)
    if feature in CALENDAR_FEATURES:
        return (ColumnOrigin(InputColumn(ACTUALS, "pickup_hour"), (COMPUTED,)),)
    if feature.startswith("lag_") or feature in ("seasonal_mean", "recent_level"):
        return (ColumnOrigin(InputColumn(ACTUALS, "total_rides"), (COMPUTED,)), *PER_ZONE_IN_HOUR_ORDER)
    if feature in WEATHER_FEATURES or feature in PERFECT_WEATHER_FEATURES:
        return (ColumnOrigin(InputColumn(RAW_WEATHER, "value"), (COMPUTED,)), *WEATHER_ROWS)
    msg = f"Feature {feature} has no known source columns: add it to flows/forecasting/column_lineage.py"
    raise UnknownFeature(msg)


# The column the model learned to predict: a model is computed from its target as much as from its features.
TARGET = MODEL_TARGET
LEARNED_TARGET = (ColumnOrigin(InputColumn(ACTUALS, "total_rides"), (COMPUTED,)),)


def model_lineage(features: list[str]) -> ColumnLineage:
    """The model's inputs: the target it learned and each feature, with the columns they are computed from."""
    return {TARGET: LEARNED_TARGET, **{feature: feature_origins(feature) for feature in features}}


def forecast_lineage(features: list[str]) -> ColumnLineage:
    """The forecast table's columns: the forecast from every feature's columns (and the target it learned).

    The intervals are the forecast widened by the backtest's errors, which are the same columns again.
    """
    merged: dict[InputColumn, set[Transformation]] = defaultdict(set)
    for origin in (*LEARNED_TARGET, *(o for feature in features for o in feature_origins(feature))):
        merged[origin.input].update(origin.transformations)
    forecast = tuple(ColumnOrigin(column, tuple(sorted(kinds))) for column, kinds in sorted(merged.items()))
    return {
        "pickup_hour": (ColumnOrigin(InputColumn(ACTUALS, "pickup_hour"), (COMPUTED,)),),
        "pulocationid": (ColumnOrigin(InputColumn(ACTUALS, "pulocationid"), (Transformation(DIRECT, IDENTITY),)),),
        "forecasted_total_rides": forecast,
        **{column: forecast for column in INTERVAL_COLUMNS},
        **{
            column: (ColumnOrigin(InputColumn(ZONES, column), (Transformation(DIRECT, IDENTITY),)), *ZONE_JOIN)
            for column in ("zone", "borough")
        },
    }
