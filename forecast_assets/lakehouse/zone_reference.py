"""The zones the audits hold data to: the zone lookup as ``main`` publishes it, and the zones published trips use.

A month's zone ids are checked against the published lookup, and a new lookup against the zones trips already
name, so neither can publish what the other contradicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from forecast_assets.lakehouse.table_state import table_state
from taxi_core.names import RAW_YELLOW, ZONES
from taxi_core.zones import load_zones


@dataclass(frozen=True)
class ZoneReference:
    """Each zone id's borough in the lookup the audits compare with, and where that lookup came from.

    ``trips_by_zone``: trips per zone id (pickups and dropoffs) over every published month, for the audits of a
    new lookup; empty for the trip audits, which do not need it.
    """

    boroughs: Mapping[int, str]
    source: str
    trips_by_zone: Mapping[int, int] = field(default_factory=dict)


def _published(spark: SparkSession, identifier: str) -> int | None:
    state = table_state(spark, identifier)
    return state.ref("main") if state is not None else None


def _published_boroughs(spark: SparkSession) -> tuple[int | None, dict[int, str]]:
    """The snapshot ``main`` holds of the lookup, and each zone id's borough in it (none before the first)."""
    snapshot = _published(spark, ZONES)
    if snapshot is None:
        return None, {}
    # A snapshot's rows never change: the months of a range (two trip tables each) read the lookup once.
    if snapshot not in _BOROUGHS_AT:
        rows = spark.table(ZONES).select("location_id", "borough").collect()
        _BOROUGHS_AT[snapshot] = {
            int(row["location_id"]): row["borough"] for row in rows if row["location_id"] is not None
        }
    return snapshot, dict(_BOROUGHS_AT[snapshot])


_BOROUGHS_AT: dict[int, dict[int, str]] = {}  # each zone id's borough, by the lookup's snapshot id


def published_lookup(spark: SparkSession) -> ZoneReference:
    """The published lookup; TLC's lookup shipped with the project until one is published."""
    snapshot, boroughs = _published_boroughs(spark)
    if boroughs:
        return ZoneReference(boroughs, f"{ZONES} (snapshot {snapshot})")
    shipped = {zone.location_id: zone.borough for zone in load_zones()}
    return ZoneReference(shipped, f"TLC's zone lookup shipped with the project ({ZONES} is not published yet)")


def published_lookup_and_trips(spark: SparkSession) -> ZoneReference:
    """The published lookup (empty before the first), and the trips per zone id of every published month."""
    snapshot, boroughs = _published_boroughs(spark)
    trips: dict[int, int] = {}
    if _published(spark, RAW_YELLOW) is not None:
        published = spark.table(RAW_YELLOW)
        ids = published.select(F.col("pulocationid").alias("zone")).unionAll(
            published.select(F.col("dolocationid").alias("zone"))
        )
        trips = {
            int(row["zone"]): int(row["count"])
            for row in ids.groupBy("zone").count().collect()
            if row["zone"] is not None
        }
    source = f"{ZONES} (snapshot {snapshot})" if snapshot is not None else f"{ZONES} (not published yet)"
    return ZoneReference(boroughs, f"{source} and the trips of {RAW_YELLOW}", trips)
