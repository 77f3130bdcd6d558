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


@dataclass(frozen=True)
class Repeats:
    """Key values found on more than one row, and the rows that carry them."""

    keys: int
    rows: int


@dataclass(frozen=True)
class Measured:
    """What was measured of a month's rows, by name: every audit's aggregates, from one pass shared by all of
    them, and what the few audits that need their own query (a grouping) found."""

    values: Mapping[str, Any]

    @property
    def rows(self) -> int:
        return int(self.values[ROWS])

    def count(self, name: str) -> int:
        return int(self.values[name] or 0)


ROWS = "rows"
Aggregates = Callable[[MonthFacts], Mapping[str, Column]]
# An audit's own query of the rows, for what one aggregate pass cannot tell (repeated keys, hours per zone).
Query = Callable[[DataFrame, MonthFacts], Mapping[str, Any]]
Judge = Callable[[Measured, MonthFacts], AuditResult]


def no_aggregates(facts: MonthFacts) -> Mapping[str, Column]:
    return {}


@dataclass(frozen=True)
class Audit:
    """One property of a month: the aggregates it needs (named uniquely across audits) and any query of its own,
    and a pure ``judge`` of what they measured."""

    name: str
    description: str
    blocking: bool
    judge: Judge
    aggregates: Aggregates = no_aggregates
    query: Query | None = None


def _count_of(condition: Column) -> Column:
    return F.sum(condition.cast("int"))


def _null_keys(keys: list[str]) -> tuple[Aggregates, Judge]:
    names = {key: f"null_{key}" for key in keys}

    def aggregates(facts: MonthFacts) -> Mapping[str, Column]:
        return {name: _count_of(F.col(key).isNull()) for key, name in names.items()}

    def judge(measured: Measured, facts: MonthFacts) -> AuditResult:
        nulls = {name: measured.count(name) for name in names.values()}
        return AuditResult(passed=sum(nulls.values()) == 0, metadata=nulls)

    return aggregates, judge


KEY_HASH = "_key_hash"


def repeats_name(keys: Sequence[str]) -> str:
    return f"repeated_{'_'.join(keys)}"


def _duplicate_keys(keys: list[str], severity: Severity = ERROR) -> tuple[Query, Judge]:
    name = repeats_name(keys)

    def query(rows: DataFrame, facts: MonthFacts) -> Mapping[str, Any]:
        return {name: repeats(rows, keys)}

    def judge(measured: Measured, facts: MonthFacts) -> AuditResult:
        found: Repeats = measured.values[name]
        return AuditResult(
            passed=found.keys == 0,
            severity=severity,
            metadata={"duplicate_keys": found.keys, "rows_with_duplicate_keys": found.rows},
        )

    return query, judge


def repeats(rows: DataFrame, keys: Sequence[str]) -> Repeats:
    """How many ``keys`` values repeat, and on how many rows.

    A 64-bit hash of the keys finds the candidates: one number per row comes back to the driver as Arrow (8
    bytes a row: 27 MB for a month of 3.4M trips) and numpy sorts it there, which takes half the time of
    Spark shuffling and sorting the same numbers across its tasks. Only the rows whose hash repeats, true
    repeats and the rare collision, are then grouped by the keys themselves in Spark, so the answer is exact;
    with no repeated hash (a clean month) that second pass is not run at all.
    """
    import numpy as np  # here: a source's declaration imports this module and needs neither
    import pandas as pd

    with_hash = rows.select(*keys, F.xxhash64(*keys).alias(KEY_HASH))
    hashes = np.sort(with_hash.select(KEY_HASH).toPandas()[KEY_HASH].to_numpy())
    repeated_hashes = np.unique(hashes[1:][hashes[1:] == hashes[:-1]])
    if repeated_hashes.size == 0:
        return Repeats(0, 0)
    wanted = rows.sparkSession.createDataFrame(pd.DataFrame({KEY_HASH: repeated_hashes}))
    candidates = with_hash.join(wanted, KEY_HASH, "left_semi")
    repeated = candidates.groupBy(*keys).count().where("count > 1")
    found = repeated.agg(F.count(F.lit(1)).alias("keys"), F.sum("count").alias("rows")).first()
    return Repeats(int(found["keys"]), int(found["rows"] or 0))


def _row_count_matches_source(measured: Measured, facts: MonthFacts) -> AuditResult:
    expected = -1 if facts.expected_rows is None else facts.expected_rows
    table_rows = measured.rows
    return AuditResult(passed=table_rows == expected, metadata={"table_rows": table_rows, "source_rows": expected})


OUTSIDE_MONTH = "pickups_outside_month"


def _outside_month(facts: MonthFacts) -> Mapping[str, Column]:
    pickup, window = F.col("tpep_pickup_datetime"), facts.month
    return {OUTSIDE_MONTH: _count_of((pickup < F.lit(window.start)) | (pickup >= F.lit(window.end)))}


def _pickups_inside_month(measured: Measured, facts: MonthFacts) -> AuditResult:
    total, outside, window = measured.rows, measured.count(OUTSIDE_MONTH), facts.month
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
            OUTSIDE_MONTH: outside,
            "share": share,
            "tolerated_share": OUTLIER_TOLERANCE,
            "refused_above_share": OUTSIDE_MONTH_LIMIT,
        },
    )


def counted_warning(
    name: str, description: str, condition: Callable[[], Column], counted: str, tolerance: float
) -> Audit:
    """Non-blocking: warns when over ``tolerance`` of the rows meet ``condition``; ``counted`` names their count."""

    def aggregates(facts: MonthFacts) -> Mapping[str, Column]:
        return {counted: _count_of(condition())}

    def judge(measured: Measured, facts: MonthFacts) -> AuditResult:
        total, found = measured.rows, measured.count(counted)
        share = found / total if total else 0.0
        return AuditResult(
            passed=share <= tolerance,
            severity=WARN,
            metadata={counted: found, "rows": total, "share": share, "tolerated_share": tolerance},
        )

    return Audit(name, description, False, judge, aggregates)


def _duplicate_trips(measured: Measured, facts: MonthFacts) -> AuditResult:
    found: Repeats = measured.values[repeats_name(TRIP_RECORD)]
    total = measured.rows
    records, extra = found.keys, found.rows - found.keys
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


ZONES_WITH_PICKUPS = "zones_with_pickups"


def _zones_with_pickups(facts: MonthFacts) -> Mapping[str, Column]:
    return {ZONES_WITH_PICKUPS: F.collect_set("pulocationid")}  # at most a few hundred ids; nulls are left out


def _zones_like_recent_months(measured: Measured, facts: MonthFacts) -> AuditResult:
    usual = usual_zones(facts.neighbours)
    if not usual:
        return AuditResult(passed=True, metadata={"compared_with": facts.compared_with()})
    present = {int(zone) for zone in measured.values[ZONES_WITH_PICKUPS]}
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
            ZONES_WITH_PICKUPS: len(present),
            "compared_with": facts.compared_with(),
        },
    )


def _rows_like_recent_months(measured: Measured, facts: MonthFacts) -> AuditResult:
    total = measured.rows
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


OUT_OF_RANGE, MISSING_VALUES = "values_out_of_range", "missing_values"


def _weather_ranges(facts: MonthFacts) -> Mapping[str, Column]:
    out_of_range = F.lit(False)
    for element, (low, high) in VALUE_RANGES.items():
        out_of_range = out_of_range | ((F.col("element") == element) & ~F.col("value").between(low, high))
    return {OUT_OF_RANGE: _count_of(out_of_range), MISSING_VALUES: _count_of(F.col("value").isNull())}


def _weather_values_in_physical_range(measured: Measured, facts: MonthFacts) -> AuditResult:
    bad = measured.count(OUT_OF_RANGE)
    return AuditResult(
        passed=bad == 0,
        metadata={OUT_OF_RANGE: bad, MISSING_VALUES: measured.count(MISSING_VALUES), "ranges": str(VALUE_RANGES)},
    )


ZONE_HOURS = "hours_per_zone"


def _hours_per_zone(rows: DataFrame, facts: MonthFacts) -> Mapping[str, Any]:
    per_zone = rows.groupBy("pulocationid").agg(F.countDistinct("pickup_hour").alias("hours")).collect()
    return {ZONE_HOURS: {row["pulocationid"]: int(row["hours"]) for row in per_zone}}


def _every_zone_has_every_hour(measured: Measured, facts: MonthFacts) -> AuditResult:
    hours = facts.month.hours
    per_zone: Mapping[int, int] = measured.values[ZONE_HOURS]
    zones = len(per_zone)
    incomplete = sum(1 for count in per_zone.values() if count != hours)
    return AuditResult(
        passed=zones > 0 and incomplete == 0,
        metadata={
            "zones": zones,
            "zones_missing_hours": incomplete,
            "hours_in_month": hours,
            "fewest_hours_for_a_zone": min(per_zone.values(), default=0),
        },
    )


def no_null_keys(prefix: str, keys: list[str]) -> Audit:
    """Blocking: every row has each of ``keys``."""
    aggregates, judge = _null_keys(keys)
    return Audit(f"{prefix}_no_null_keys", f"Every row has a {' and a '.join(keys)}.", True, judge, aggregates)


def no_duplicate_keys(prefix: str, keys: list[str]) -> Audit:
    """Blocking: no two rows share ``keys``."""
    query, judge = _duplicate_keys(keys)
    return Audit(f"{prefix}_no_duplicate_keys", f"At most one row per {', '.join(keys)}.", True, judge, query=query)


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
        query=lambda rows, facts: {repeats_name(TRIP_RECORD): repeats(rows, TRIP_RECORD)},
    ),
    Audit(
        "raw_yellow_zones_like_recent_months",
        f"The month has pickups in at least {ZONE_COVERAGE_MIN:.0%} of the zones that carry "
        f"{USUAL_ZONES_TRIP_SHARE:.0%} of the trips of the nearest published months.",
        True,
        _zones_like_recent_months,
        _zones_with_pickups,
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
        _outside_month,
    ),
    counted_warning(
        "raw_yellow_no_negative_fares",
        f"Fares and totals are not negative (refunds and voids make a few; warns above {NEGATIVE_FARE_TOLERANCE:.0%}).",
        lambda: (F.col("fare_amount") < 0) | (F.col("total_amount") < 0),
        "negative_fares",
        NEGATIVE_FARE_TOLERANCE,
    ),
    counted_warning(
        "raw_yellow_pickups_before_dropoffs",
        f"No trip ends before it starts (warns above {OUTLIER_TOLERANCE:.1%} of trips).",
        lambda: F.col("tpep_dropoff_datetime") < F.col("tpep_pickup_datetime"),
        "dropoffs_before_pickups",
        OUTLIER_TOLERANCE,
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
        _weather_ranges,
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
        query=_hours_per_zone,
    ),
]
