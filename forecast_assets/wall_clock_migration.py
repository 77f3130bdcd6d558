"""``./run taxi migrate-times``: retype every table an older version wrote with timestamptz wall-clock columns.

The Spark tables are migrated by the pipeline too, when it next writes them; the forecast table, written by
the flow through pyiceberg (which cannot replace a table), only here.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from flows.forecasting.tables import FORECAST_SCHEMA
from forecast_assets.lakehouse.table_state import table_state
from forecast_assets.lakehouse.tables import HOURLY_ACTUALS, migrate_wall_clock
from forecast_assets.lakehouse.wall_clock import describe_columns, replace_with_wall_clock, zoned_columns
from forecast_assets.source_specs.yellow_trips import RAW_YELLOW
from taxi_core.names import FORECAST

FORECAST_PARTITIONED_BY = "days(pickup_hour)"


def migrate_forecast(spark: SparkSession, identifier: str = FORECAST) -> bool:
    """Retype the forecast table's ``pickup_hour`` if an older version wrote it as timestamptz."""
    state = table_state(spark, identifier)
    zoned = [] if state is None else zoned_columns(state, ["pickup_hour"])
    if not zoned:
        return False
    replace_with_wall_clock(spark, identifier, zoned, FORECAST_PARTITIONED_BY, {})
    describe_columns(spark, identifier, {field.name: field.doc for field in FORECAST_SCHEMA.fields})
    return True


def migrate_times(spark: SparkSession) -> list[str]:
    """Migrate each table that needs it; the identifiers of those migrated."""
    migrated = []
    for spec in (RAW_YELLOW, HOURLY_ACTUALS):
        state = table_state(spark, spec.identifier)
        if state is not None and migrate_wall_clock(spark, spec, state):
            describe_columns(spark, spec.identifier, spec.descriptions)
            migrated.append(spec.identifier)
    if migrate_forecast(spark):
        migrated.append(FORECAST)
    return migrated
