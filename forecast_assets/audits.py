"""The audits of a table's month (or of a whole table): one property each, with the numbers as metadata.

They run inside the table assets, on the month as staged before it is published (and on the
published month when a user executes the checks alone). Dagster-free: the assets declare each as a
check and turn each result into Dagster's, so a source's declaration stays light to import.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from forecast_assets.lakehouse.neighbours import NeighbourMonth
from forecast_assets.sources.noaa_format import VALUE_RANGES
from taxi_core.months import MonthWindow

# Real TLC files carry a few trips whose clock is off; tolerate them up to this share of the month.
OUTLIER_TOLERANCE = 0.001
# Beyond this share the file is not this month's data at all, and it is not published.
OUTSIDE_MONTH_LIMIT = 0.01
# Refunds and voided trips make about 1% of real TLC fares negative; more than this is suspect.
NEGATIVE_FARE_TOLERANCE = 0.02
# Real files repeat a handful of trip records; a larger share is a file written twice over, not published.
DUPLICATE_LIMIT = 0.01
# The zones that together carry this share of recent months' trips are the usual ones...
USUAL_ZONES_TRIP_SHARE = 0.95
# ...and a month must have pickups in at least this share of them.
ZONE_COVERAGE_MIN = 0.9
# A month's rows against the median of its published neighbours: outside this range it is held back.
ROWS_AGAINST_RECENT = (0.5, 2.0)
RAW_YELLOW_KEYS = ["tpep_pickup_datetime", "pulocationid"]
# TLC publishes no trip id; a repeated record of all of these is a duplicated trip.
TRIP_RECORD = ["vendorid", "tpep_pickup_datetime", "tpep_dropoff_datetime", "pulocationid", "dolocationid",
               "trip_distance", "total_amount"]  # fmt: skip
WEATHER_KEYS = ["county_fips", "date", "element"]
ACTUALS_KEYS = ["pickup_hour", "pulocationid"]


ERROR: Literal["error"] = "error"
WARN: Literal["warn"] = "warn"
Severity = Literal["error", "warn"]


@dataclass(frozen=True)
class AuditResult:
    """One audit's verdict: a failure of severity ``error`` holds a month back when its audit is blocking."""

    passed: bool
    metadata: Mapping[str, Any] = field(default_factory=dict)
    severity: Severity = ERROR
    description: str | None = None


@dataclass(frozen=True)
class MonthFacts:
    """What the source says the table should hold: for a month (``window``), or for the whole table (None)."""

    window: MonthWindow | None
    expected_rows: int | None = None
    # Published months near this one (nearest first), for the audits that compare a month with its neighbours.
    neighbours: tuple[NeighbourMonth, ...] = ()

    @property
    def month(self) -> MonthWindow:
        """The audited month, for the audits that only a monthly table has."""
        if self.window is None:
            raise ValueError("this audit compares a month with its calendar: declare it on a monthly source only")
        return self.window

    def compared_with(self) -> str:
        return ", ".join(neighbour.month for neighbour in self.neighbours) or "no published month yet"


Evaluate = Callable[[DataFrame, MonthFacts], AuditResult]


@dataclass(frozen=True)
class Audit:
    name: str
    description: str
    blocking: bool
    evaluate: Evaluate


def _count_where(rows: DataFrame, condition: Column) -> tuple[int, int]:
    counts = rows.agg(F.count(F.lit(1)).alias("rows"), F.sum(condition.cast("int")).alias("matching")).first()
    return int(counts["rows"]), int(counts["matching"] or 0)


def _null_keys(keys: list[str]) -> Evaluate:
    def evaluate(rows: DataFrame, facts: MonthFacts) -> AuditResult:
        counts = rows.select([F.sum(F.col(k).isNull().cast("int")).alias(k) for k in keys]).first()
        nulls = {k: int(counts[k] or 0) for k in keys}
        return AuditResult(passed=sum(nulls.values()) == 0, metadata={f"null_{k}": v for k, v in nulls.items()})

    return evaluate


def _duplicate_keys(keys: list[str], severity: Severity = ERROR) -> Evaluate:
    def evaluate(rows: DataFrame, facts: MonthFacts) -> AuditResult:
        duplicates = rows.groupBy(*keys).count().filter("count > 1")
        found = duplicates.agg(F.count(F.lit(1)).alias("keys"), F.sum("count").alias("rows")).first()
        return AuditResult(
            passed=found["keys"] == 0,
            severity=severity,
            metadata={"duplicate_keys": int(found["keys"]), "rows_with_duplicate_keys": int(found["rows"] or 0)},
        )

    return evaluate


def _row_count_matches_source(rows: DataFrame, facts: MonthFacts) -> AuditResult:
    table_rows = rows.count()
    expected = -1 if facts.expected_rows is None else facts.expected_rows
    return AuditResult(passed=table_rows == expected, metadata={"table_rows": table_rows, "source_rows": expected})


def _pickups_inside_month(rows: DataFrame, facts: MonthFacts) -> AuditResult:
    pickup, window = F.col("tpep_pickup_datetime"), facts.month
    total, outside = _count_where(rows, (pickup < F.lit(window.start)) | (pickup >= F.lit(window.end)))
    share = outside / total if total else 1.0
    not_this_month = share > OUTSIDE_MONTH_LIMIT
    return AuditResult(
        passed=share <= OUTLIER_TOLERANCE,
        severity=ERROR if not_this_month else WARN,
        description=(
            f"{share:.1%} of {total} pickups fall outside {window.month}: this is not {window.month}'s data"
            if not_this_month
            else None
        ),
        metadata={
            "rows": total,
            "pickups_outside_month": outside,
            "share": share,
            "tolerated_share": OUTLIER_TOLERANCE,
            "refused_above_share": OUTSIDE_MONTH_LIMIT,
        },
    )


def counted_warning(condition: Callable[[], Column], counted: str, tolerance: float) -> Evaluate:
    def evaluate(rows: DataFrame, facts: MonthFacts) -> AuditResult:
        total, found = _count_where(rows, condition())
        share = found / total if total else 0.0
        return AuditResult(
            passed=share <= tolerance,
            severity=WARN,
            metadata={counted: found, "rows": total, "share": share, "tolerated_share": tolerance},
        )

    return evaluate


def _duplicate_trips(rows: DataFrame, facts: MonthFacts) -> AuditResult:
    repeated = rows.groupBy(*TRIP_RECORD).count().filter("count > 1")
    found = repeated.agg(F.count(F.lit(1)).alias("records"), F.sum(F.col("count") - 1).alias("extra")).first()
    total = rows.count()
    records, extra = int(found["records"]), int(found["extra"] or 0)
    share = extra / total if total else 0.0
    over = share > DUPLICATE_LIMIT
    return AuditResult(
        passed=records == 0,
        severity=ERROR if over else WARN,
        description=(
            f"{extra} of {total} rows ({share:.1%}) repeat another trip record exactly, above the "
            f"{DUPLICATE_LIMIT:.0%} real files show: the file looks written twice over. Ask for a clean file."
            if over
            else None
        ),
        metadata={
            "repeated_records": records,
            "extra_copies": extra,
            "rows": total,
            "share": share,
            "refused_above_share": DUPLICATE_LIMIT,
        },
    )


def usual_zones(neighbours: Sequence[NeighbourMonth], trip_share: float = USUAL_ZONES_TRIP_SHARE) -> set[int]:
    """The busiest zones that together carry ``trip_share`` of the neighbours' trips."""
    trips: dict[int, int] = {}
    for neighbour in neighbours:
        for zone, count in neighbour.trips_by_zone.items():
            trips[zone] = trips.get(zone, 0) + count
    wanted, carried, usual = trip_share * sum(trips.values()), 0, set()
    for zone, count in sorted(trips.items(), key=lambda item: (-item[1], item[0])):
        if carried >= wanted:
            break
        usual.add(zone)
        carried += count
    return usual


def _zones_like_recent_months(rows: DataFrame, facts: MonthFacts) -> AuditResult:
    usual = usual_zones(facts.neighbours)
    if not usual:
        return AuditResult(passed=True, metadata={"compared_with": facts.compared_with()})
    zones = rows.where(F.col("pulocationid").isNotNull()).select("pulocationid").distinct()
    present = {row[0] for row in zones.collect()}
    covered = usual & present
    share = len(covered) / len(usual)
    passed = share >= ZONE_COVERAGE_MIN
    missing = sorted(usual - present)
    return AuditResult(
        passed=passed,
        description=(
            None
            if passed
            else f"{facts.month.month} has pickups in {len(covered)} of the {len(usual)} zones that carry "
            f"{USUAL_ZONES_TRIP_SHARE:.0%} of trips in {facts.compared_with()} (at least {ZONE_COVERAGE_MIN:.0%} "
            "needed): the file's zone ids look damaged. Ask for a clean file."
        ),
        metadata={
            "usual_zones": len(usual),
            "usual_zones_with_pickups": len(covered),
            "share": share,
            "required_share": ZONE_COVERAGE_MIN,
            "missing_zones": ", ".join(map(str, missing[:20])) + (" ..." if len(missing) > 20 else ""),
            "zones_with_pickups": len(present),
            "compared_with": facts.compared_with(),
        },
    )


def _rows_like_recent_months(rows: DataFrame, facts: MonthFacts) -> AuditResult:
    total = rows.count()
    if not facts.neighbours:
        return AuditResult(passed=True, metadata={"rows": total, "compared_with": facts.compared_with()})
    typical = statistics.median(neighbour.rows for neighbour in facts.neighbours)
    ratio = total / typical if typical else float("inf")
    low, high = ROWS_AGAINST_RECENT
    passed = low <= ratio <= high
    return AuditResult(
        passed=passed,
        description=(
            None
            if passed
            else f"{facts.month.month} has {total} rows, {ratio:.2f}x the median of {facts.compared_with()} "
            f"({typical:.0f}); outside {low}x-{high}x the month is held back. Check the file is whole; a real "
            "change in demand is published by raising the bounds."
        ),
        metadata={
            "rows": total,
            "median_of_recent_months": typical,
            "ratio": ratio,
            "accepted_ratio": f"{low}-{high}",
            "compared_with": facts.compared_with(),
        },
    )


def _weather_values_in_physical_range(rows: DataFrame, facts: MonthFacts) -> AuditResult:
    out_of_range = F.lit(False)
    for element, (low, high) in VALUE_RANGES.items():
        out_of_range = out_of_range | ((F.col("element") == element) & ~F.col("value").between(low, high))
    counts = rows.agg(
        F.sum(out_of_range.cast("int")).alias("out_of_range"),
        F.sum(F.col("value").isNull().cast("int")).alias("missing"),
    ).first()
    bad = int(counts["out_of_range"] or 0)
    return AuditResult(
        passed=bad == 0,
        metadata={
            "values_out_of_range": bad,
            "missing_values": int(counts["missing"] or 0),
            "ranges": str(VALUE_RANGES),
        },
    )


def _every_zone_has_every_hour(rows: DataFrame, facts: MonthFacts) -> AuditResult:
    hours = facts.month.hours
    per_zone = rows.groupBy("pulocationid").agg(F.countDistinct("pickup_hour").alias("hours"))
    summary = per_zone.agg(
        F.count(F.lit(1)).alias("zones"),
        F.sum((F.col("hours") != hours).cast("int")).alias("incomplete"),
        F.min("hours").alias("fewest"),
    ).first()
    zones, incomplete = int(summary["zones"]), int(summary["incomplete"] or 0)
    return AuditResult(
        passed=zones > 0 and incomplete == 0,
        metadata={
            "zones": zones,
            "zones_missing_hours": incomplete,
            "hours_in_month": hours,
            "fewest_hours_for_a_zone": int(summary["fewest"] or 0),
        },
    )


def no_null_keys(prefix: str, keys: list[str]) -> Audit:
    """Blocking: every row has each of ``keys``."""
    return Audit(f"{prefix}_no_null_keys", f"Every row has a {' and a '.join(keys)}.", True, _null_keys(keys))


def no_duplicate_keys(prefix: str, keys: list[str]) -> Audit:
    """Blocking: no two rows share ``keys``."""
    return Audit(f"{prefix}_no_duplicate_keys", f"At most one row per {', '.join(keys)}.", True, _duplicate_keys(keys))


def row_count_matches_source(prefix: str, description: str) -> Audit:
    """Blocking: the table (or its month) holds exactly as many rows as the staged source says."""
    return Audit(f"{prefix}_row_count_matches_source", description, True, _row_count_matches_source)


RAW_YELLOW_AUDITS = [
    row_count_matches_source("raw_yellow", "The month's partition holds exactly as many rows as the staged TLC file."),
    no_null_keys("raw_yellow", RAW_YELLOW_KEYS),
    Audit(
        "raw_yellow_no_duplicate_trips",
        f"No trip record appears twice: TLC files have a few true duplicates, so a few warn; more than "
        f"{DUPLICATE_LIMIT:.0%} of the rows and the month is not published.",
        True,
        _duplicate_trips,
    ),
    Audit(
        "raw_yellow_zones_like_recent_months",
        f"The month has pickups in at least {ZONE_COVERAGE_MIN:.0%} of the zones that carry "
        f"{USUAL_ZONES_TRIP_SHARE:.0%} of the trips of the nearest published months.",
        True,
        _zones_like_recent_months,
    ),
    Audit(
        "raw_yellow_rows_like_recent_months",
        f"The month's rows are {ROWS_AGAINST_RECENT[0]}x-{ROWS_AGAINST_RECENT[1]}x the median of the nearest "
        "published months.",
        True,
        _rows_like_recent_months,
    ),
    Audit(
        "raw_yellow_pickups_inside_month",
        f"Pickups fall inside the file's month: a few clock errors warn; more than {OUTSIDE_MONTH_LIMIT:.0%} "
        "outside (or an empty month) means the file is not this month's and it is not published.",
        True,
        _pickups_inside_month,
    ),
    Audit(
        "raw_yellow_no_negative_fares",
        f"Fares and totals are not negative (refunds and voids make a few; warns above {NEGATIVE_FARE_TOLERANCE:.0%}).",
        False,
        counted_warning(
            lambda: (F.col("fare_amount") < 0) | (F.col("total_amount") < 0), "negative_fares", NEGATIVE_FARE_TOLERANCE
        ),
    ),
    Audit(
        "raw_yellow_pickups_before_dropoffs",
        f"No trip ends before it starts (warns above {OUTLIER_TOLERANCE:.1%} of trips).",
        False,
        counted_warning(
            lambda: F.col("tpep_dropoff_datetime") < F.col("tpep_pickup_datetime"),
            "dropoffs_before_pickups",
            OUTLIER_TOLERANCE,
        ),
    ),
]
RAW_WEATHER_AUDITS = [
    row_count_matches_source("raw_weather", "One row per NYC county, day and element in the source files."),
    no_null_keys("raw_weather", WEATHER_KEYS),
    no_duplicate_keys("raw_weather", WEATHER_KEYS),
    Audit(
        "raw_weather_values_in_physical_range",
        "Precipitation and temperatures are physically possible; missing values are counted.",
        False,
        _weather_values_in_physical_range,
    ),
]
ACTUALS_AUDITS = [
    no_null_keys("actuals", ACTUALS_KEYS),
    no_duplicate_keys("actuals", ACTUALS_KEYS),
    Audit(
        "actuals_every_zone_has_every_hour",
        "Each zone has one row for every hour of the month, and no hour outside it.",
        True,
        _every_zone_has_every_hour,
    ),
]
