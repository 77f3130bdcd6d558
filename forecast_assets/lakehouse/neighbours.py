"""What the published months around a month look like: their row counts and trips per zone.

A month is audited against its neighbours because some damage only shows beside them: a file whose
trips all carry one zone, or a tenth of a month, is internally consistent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from forecast_assets.lakehouse.tables import TableSpec
from taxi_core.months import MonthWindow

# Months on either side searched for published neighbours; the nearest few are kept.
SEARCH_MONTHS = 6
NEAREST = 3


@dataclass(frozen=True)
class NeighbourMonth:
    """A published month near the audited one: its rows and its trips per zone."""

    month: str
    rows: int
    trips_by_zone: Mapping[int, int]


def _shifted(month: str, by: int) -> str:
    year, number = int(month[:4]), int(month[5:7]) - 1 + by
    return f"{year + number // 12:04d}-{number % 12 + 1:02d}"


def neighbour_months(
    spark: SparkSession, spec: TableSpec, window: MonthWindow, zone_column: str, nearest: int = NEAREST
) -> tuple[NeighbourMonth, ...]:
    """The ``nearest`` months published on ``main`` closest to ``window`` (either side), nearest first.

    Reads two columns of at most ``2 * SEARCH_MONTHS`` partitions of a table partitioned by its ``YYYY-MM`` column,
    which exists (write-audit-publish opened it first).
    """
    month_column = spec.month_column
    if spec.month_column_kind != "text" or month_column is None:  # an invariant of the declarations
        raise ValueError(f"{spec.identifier}: neighbours are read from a YYYY-MM month column")
    distance = {_shifted(window.month, by): abs(by) for by in range(-SEARCH_MONTHS, SEARCH_MONTHS + 1) if by}
    counts = (
        spark.table(spec.identifier)
        .where(F.col(month_column).isin(list(distance)))
        .groupBy(month_column, zone_column)
        .count()
        .collect()
    )
    by_month: dict[str, dict[int, int]] = {}
    for row in counts:
        zones = by_month.setdefault(row[month_column], {})
        if row[zone_column] is not None:
            zones[int(row[zone_column])] = int(row["count"])
    rows = {row[month_column]: 0 for row in counts}
    for row in counts:
        rows[row[month_column]] += int(row["count"])
    closest = sorted(by_month, key=lambda month: (distance[month], month))
    return tuple(NeighbourMonth(month, rows[month], by_month[month]) for month in closest[:nearest])
