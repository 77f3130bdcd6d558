"""What a month of a source with neighbours keeps of itself when it is published: its rows and trips per zone, for
the audits of the months around it (:mod:`forecast_assets.lakehouse.neighbours` reads it back)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import DataFrame

from forecast_assets.audits import Measured
from forecast_assets.lakehouse.neighbours import month_summary
from forecast_assets.trip_calendar import CALENDAR, PICKUP_ZONE, calendar_of
from forecast_assets.trip_weeks import pickups_by_hour_of_week

# The staged month's rows and what its audits measured of them -> the summary to record (JSON-able).
Summarise = Callable[[DataFrame, Measured], Mapping[str, Any]]


def summarised_by(zone_column: str) -> Summarise:
    """A month's rows and trips per ``zone_column``: from the audits' calendar of the month when they measured it
    (pickup zones, with its pickups by hour of the week and its drop-offs per zone; nothing more is read), else
    from one grouping of the staged rows by zone."""

    def summarise(rows: DataFrame, measured: Measured) -> Mapping[str, Any]:
        if zone_column == PICKUP_ZONE and CALENDAR in measured.values:
            calendar = calendar_of(measured)
            week = pickups_by_hour_of_week(calendar.by_hour)
            return month_summary(measured.rows, calendar.by_zone, week, calendar.dropoffs_by_zone)
        counted = rows.groupBy(zone_column).count().collect()
        zones = {int(row[zone_column]): int(row["count"]) for row in counted if row[zone_column] is not None}
        return month_summary(sum(int(row["count"]) for row in counted), zones)

    return summarise
