"""Rides per pickup hour for every zone with a ride (or the busiest), every hour of the month present."""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from forecast_assets.lakehouse.wall_clock import WALL_CLOCK_TYPE, wall_clock


def busiest_zones(counts: DataFrame, eligible_zones: list[int], top_n: int | None) -> DataFrame:
    """The ``top_n`` zones by rides (every zone with a ride when ``None``), ties broken by zone id so the choice
    is repeatable; from the hourly ``counts``, so the trips are read once."""
    # One SQL list, not a py4j literal per zone (some 260 of them, 4 round trips each).
    zones = ", ".join(str(int(zone)) for zone in eligible_zones)
    eligible = F.expr(f"pulocationid IN ({zones})") if zones else F.lit(False)
    rides = counts.filter(eligible).groupBy("pulocationid").agg(F.sum("total_rides").alias("rides"))
    if top_n is None:
        return rides.select("pulocationid")
    return rides.orderBy(F.desc("rides"), F.asc("pulocationid")).limit(top_n).select("pulocationid")


def hourly_actuals(
    spark: SparkSession,
    trips: DataFrame,
    month_start: datetime,
    month_end: datetime,
    eligible_zones: list[int],
    top_n: int | None,
) -> DataFrame:
    """``pickup_hour, pulocationid, total_rides`` with zeros for hours without a ride.

    Hours are New York wall-clock hours, as TLC records the trips: the spring-forward day's 02:00 hour has no
    trips (0 rides) and the fall-back day's 01:00 hour counts two real hours of them.
    """
    pickup = F.col("tpep_pickup_datetime")
    in_month = trips.filter((pickup >= wall_clock(month_start)) & (pickup < wall_clock(month_end)))
    # date_trunc answers a zoned TIMESTAMP; in the UTC session, cast back it is the wall-clock hour.
    hour = F.date_trunc("hour", pickup).cast(WALL_CLOCK_TYPE)
    counts = in_month.groupBy(hour.alias("pickup_hour"), "pulocationid").agg(F.count(F.lit(1)).alias("total_rides"))
    hours = spark.sql(
        "SELECT explode(sequence(to_timestamp_ntz(:start), to_timestamp_ntz(:end) - INTERVAL 1 HOUR, INTERVAL 1 HOUR))"
        " AS pickup_hour",
        args={"start": month_start.isoformat(sep=" "), "end": month_end.isoformat(sep=" ")},
    )
    grid = hours.crossJoin(F.broadcast(busiest_zones(counts, eligible_zones, top_n)))
    return grid.join(counts, ["pickup_hour", "pulocationid"], "left").select(
        "pickup_hour",
        F.col("pulocationid").cast("int").alias("pulocationid"),
        F.coalesce("total_rides", F.lit(0)).cast("bigint").alias("total_rides"),
    )
