"""What the published months around a month look like: their row counts and trips per zone.

A month is audited against its neighbours because some damage only shows beside them: a file whose
trips all carry one zone, or a tenth of a month, is internally consistent.

Each month keeps a summary of itself when it is published (:func:`month_summary`: its rows and trips per zone), in
a table property that names the snapshot publishing it, so the neighbours are read from the table's metadata, not
from their rows: the same few kilobytes whatever the history. Boroughs are not kept: they follow from the zones,
under the zone lookup published when the audit runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from forecast_assets.lakehouse.snapshots import published_months, recorded_summary
from forecast_assets.lakehouse.table_reading import TableReading
from forecast_assets.lakehouse.tables import TableSpec
from taxi_core.months import MonthWindow

# Months on either side searched for published neighbours; the nearest few are kept.
SEARCH_MONTHS = 6
NEAREST = 3
ROWS, TRIPS_BY_ZONE = "rows", "trips-by-zone"
PICKUPS_BY_HOUR_OF_WEEK, DROPOFFS_BY_ZONE = "pickups-by-hour-of-week", "dropoffs-by-zone"
HOURS_IN_WEEK = 168


@dataclass(frozen=True)
class NeighbourMonth:
    """A published month near the audited one: its rows and its trips per zone; and, when it kept them (months
    published before they were kept did not), its pickups by hour of the week (Monday 0-1 am first) and its trips
    per drop-off zone."""

    month: str
    rows: int
    trips_by_zone: Mapping[int, int]
    pickups_by_hour_of_week: tuple[int, ...] | None = None
    dropoffs_by_zone: Mapping[int, int] | None = None


# Counts published months (``YYYY-MM``) from the table's rows: each one found, by month.
CountMonths = Callable[[Sequence[str]], Mapping[str, NeighbourMonth]]


def month_summary(
    rows: int,
    trips_by_zone: Mapping[int, int],
    pickups_by_hour_of_week: Sequence[int] | None = None,
    dropoffs_by_zone: Mapping[int, int] | None = None,
) -> dict[str, Any]:
    """What a month keeps of itself for its neighbours' audits, as recorded when it is published (JSON-able)."""
    summary: dict[str, Any] = {ROWS: rows, TRIPS_BY_ZONE: _by_zone_text(trips_by_zone)}
    if pickups_by_hour_of_week is not None:
        summary[PICKUPS_BY_HOUR_OF_WEEK] = [int(count) for count in pickups_by_hour_of_week]
    if dropoffs_by_zone is not None:
        summary[DROPOFFS_BY_ZONE] = _by_zone_text(dropoffs_by_zone)
    return summary


def _by_zone_text(trips: Mapping[int, int]) -> dict[str, int]:
    return {str(zone): count for zone, count in sorted(trips.items())}


def _by_zone(recorded: Mapping[str, Any]) -> dict[int, int]:
    return {int(zone): int(trips) for zone, trips in recorded.items()}


def neighbour_from_summary(month: str, summary: Mapping[str, Any]) -> NeighbourMonth:
    """A month as its summary recorded it; what an older summary did not keep is None."""
    week = summary.get(PICKUPS_BY_HOUR_OF_WEEK)
    dropoffs = summary.get(DROPOFFS_BY_ZONE)
    return NeighbourMonth(
        month,
        int(summary[ROWS]),
        _by_zone(summary[TRIPS_BY_ZONE]),
        tuple(int(count) for count in week) if week is not None and len(week) == HOURS_IN_WEEK else None,
        _by_zone(dropoffs) if dropoffs is not None else None,
    )


def _shifted(month: str, by: int) -> str:
    year, number = int(month[:4]), int(month[5:7]) - 1 + by
    return f"{year + number // 12:04d}-{number % 12 + 1:02d}"


def neighbour_months(
    state: TableReading, window: MonthWindow, count: CountMonths, nearest: int = NEAREST
) -> tuple[NeighbourMonth, ...]:
    """The ``nearest`` months published on ``main`` closest to ``window`` (either side, within ``SEARCH_MONTHS``),
    nearest first, as each recorded itself when it was published.

    A pure reading of one load of the table's metadata (a :class:`TableReading`: Spark's or pyiceberg's), with one
    walk of ``main``'s history for the snapshot that last wrote each month. A month with no summary for that
    snapshot (published before summaries were kept, so existing tables keep working) is counted from the table's
    rows by ``count``: those months alone, in one call.
    Partitions are keyed by the month's first day (``YYYY-MM-01``), as the monthly assets' are.
    """
    distance = {_shifted(window.month, by): abs(by) for by in range(-SEARCH_MONTHS, SEARCH_MONTHS + 1) if by}
    published = published_months(state, (f"{month}-01" for month in distance))
    closest = sorted((key[:7] for key in published), key=lambda month: (distance[month], month))[:nearest]
    kept: dict[str, NeighbourMonth] = {}
    for month in closest:
        summary = recorded_summary(state, f"{month}-01", published[f"{month}-01"])
        if summary is not None:
            kept[month] = neighbour_from_summary(month, summary)
    unkept = [month for month in closest if month not in kept]
    counted = count(unkept) if unkept else {}
    return tuple(found for month in closest if (found := kept.get(month) or counted.get(month)) is not None)


def counted_from_table(
    spark: SparkSession,
    spec: TableSpec,
    zone_column: str,
    pickup_time: str | None = None,
    dropoff_zone: str | None = None,
) -> CountMonths:
    """Published months counted from ``main``'s rows: their partitions grouped by month and zone, and, when the
    columns are given, by month, weekday and hour of ``pickup_time`` (pickups inside the month) and by month and
    ``dropoff_zone``: what a summary keeps.

    ``spec`` is partitioned by its ``YYYY-MM`` month column; a month with no rows is not in the answer.
    """
    month_column = spec.month_column
    if spec.month_column_kind != "text" or month_column is None:  # an invariant of the declarations
        raise ValueError(f"{spec.identifier}: neighbours are read from a YYYY-MM month column")

    def by_zone(rows: DataFrame, column: str) -> dict[str, dict[int, int]]:
        zones: dict[str, dict[int, int]] = {}
        for row in rows.groupBy(month_column, column).count().collect():
            if row[column] is not None:
                zones.setdefault(row[month_column], {})[int(row[column])] = int(row["count"])
        return zones

    def by_hour_of_week(rows: DataFrame, column: str) -> dict[str, list[int]]:
        inside = rows.where(F.date_format(column, "yyyy-MM") == F.col(month_column))
        # Spark numbers weekdays from Sunday (1); the summaries from Monday (0).
        hour = ((F.dayofweek(column) + 5) % 7) * 24 + F.hour(column)
        weeks: dict[str, list[int]] = {}
        for row in inside.groupBy(month_column, hour.alias("hour")).count().collect():
            weeks.setdefault(row[month_column], [0] * HOURS_IN_WEEK)[int(row["hour"])] = int(row["count"])
        return weeks

    def count(months: Sequence[str]) -> dict[str, NeighbourMonth]:
        rows = spark.table(spec.identifier).where(F.col(month_column).isin(list(months)))
        totals = {row[month_column]: int(row["count"]) for row in rows.groupBy(month_column).count().collect()}
        zones = by_zone(rows, zone_column)
        weeks = by_hour_of_week(rows, pickup_time) if pickup_time else {}
        dropoffs = by_zone(rows, dropoff_zone) if dropoff_zone else {}
        return {
            month: NeighbourMonth(
                month,
                total,
                zones.get(month, {}),
                tuple(weeks.get(month, [0] * HOURS_IN_WEEK)) if pickup_time else None,
                dropoffs.get(month, {}) if dropoff_zone else None,
            )
            for month, total in totals.items()
        }

    return count
