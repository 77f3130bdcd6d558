"""Turn NOAA county CSV rows (one per county, element and month) into one row per county-day."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, IntegerType, StringType, StructField, StructType

from forecast_assets.sources.noaa_format import COLUMNS, DAY_COLUMNS, MISSING_VALUE, NYC_COUNTY_FIPS

CSV_SCHEMA = StructType(
    [StructField(name, StringType()) for name in COLUMNS[:3]]
    + [StructField("year", IntegerType()), StructField("month", IntegerType()), StructField("element", StringType())]
    + [StructField(name, DoubleType()) for name in DAY_COLUMNS]
)
CSV_OPTIONS = {
    "header": "false",
    "ignoreLeadingWhiteSpace": "true",
    "ignoreTrailingWhiteSpace": "true",
    "mode": "FAILFAST",
}


def weather_long(rows: DataFrame) -> DataFrame:
    """NYC counties only; ``-999.99`` and the day columns past the month's end are dropped to null/rows."""
    nyc = rows.withColumn("county_fips", F.lpad(F.trim("region_code"), 5, "0")).filter(
        F.col("county_fips").isin(*NYC_COUNTY_FIPS)
    )
    long = nyc.unpivot(["county_fips", "year", "month", "element"], list(DAY_COLUMNS), "day_column", "value")
    day = F.substring("day_column", 5, 2).cast("int")
    first_of_month = F.make_date("year", "month", F.lit(1))
    return long.filter(day <= F.dayofmonth(F.last_day(first_of_month))).select(
        "county_fips",
        F.make_date("year", "month", day).alias("date"),
        F.lower(F.trim("element")).alias("element"),
        F.when(F.col("value") == MISSING_VALUE, None).otherwise(F.col("value")).alias("value"),
    )
