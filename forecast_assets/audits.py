"""The audits of a table's month (or of a whole table): one property each, with the numbers as metadata.

They run inside the table assets, on the month as staged before it is published (and on the
published month when a user executes the checks alone). Dagster-free: the assets declare each as a
check and turn each result into Dagster's, so a source's declaration stays light to import.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from forecast_assets.lakehouse.neighbours import NeighbourMonth
from forecast_assets.lakehouse.zone_reference import ZoneReference
from forecast_assets.sources.noaa_format import VALUE_RANGES
from taxi_core.errors import PipelineError
from taxi_core.figures import percent_text
from taxi_core.months import MonthWindow

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


class AuditNeedsAMonth(PipelineError):
    """A month's audit declared on a table written whole."""


@dataclass(frozen=True)
class MonthFacts:
    """What the source says the table should hold: for a month (``window``), or for the whole table (None)."""

    window: MonthWindow | None
    expected_rows: int | None = None
    # Published months near this one (nearest first), for the audits that compare a month with its neighbours.
    neighbours: tuple[NeighbourMonth, ...] = ()
    # The zones as published, for the audits that check ids against them or compare boroughs.
    zones: ZoneReference | None = None

    @property
    def month(self) -> MonthWindow:
        """The audited month, for the audits that only a monthly table has."""
        if self.window is None:
            msg = (
                "An audit of a month's calendar ran on a table written whole: declare it only in the audits of a "
                "monthly source (a SourceSpec with monthly=True)"
            )
            raise AuditNeedsAMonth(msg)
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


def listed(values: Sequence[Any], most: int = 20) -> str:
    """The first ``most`` values for a message, and how many there are in all when that is more."""
    return ", ".join(map(str, values[:most])) + (f" ... ({len(values)} in all)" if len(values) > most else "")


def count_of(condition: Column) -> Column:
    return F.sum(condition.cast("int"))


def _null_keys(keys: list[str]) -> tuple[Aggregates, Judge]:
    names = {key: f"null_{key}" for key in keys}

    def aggregates(facts: MonthFacts) -> Mapping[str, Column]:
        return {name: count_of(F.col(key).isNull()) for key, name in names.items()}

    def judge(measured: Measured, facts: MonthFacts) -> AuditResult:
        nulls = {name: measured.count(name) for name in names.values()}
        found = {key: nulls[name] for key, name in names.items() if nulls[name]}
        return AuditResult(
            passed=not found,
            description=(
                f"{' and '.join(f'{count:,} rows have no {key}' for key, count in found.items())} (of "
                f"{measured.rows:,}): every row needs one. Ask for a clean file."
                if found
                else None
            ),
            metadata=nulls,
        )

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
            description=(
                f"{found.keys:,} values of {', '.join(keys)} repeat, on {found.rows:,} rows: at most one row may "
                "carry each. Ask for a clean file."
                if found.keys
                else None
            ),
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
    if found is None:  # an invariant: an aggregate without grouping has exactly one row
        raise RuntimeError("The count of repeated keys returned no row")
    return Repeats(int(found["keys"]), int(found["rows"] or 0))


def _row_count_matches_source(measured: Measured, facts: MonthFacts) -> AuditResult:
    expected = -1 if facts.expected_rows is None else facts.expected_rows
    table_rows = measured.rows
    return AuditResult(
        passed=table_rows == expected,
        description=(
            None
            if table_rows == expected
            else f"the table holds {table_rows:,} rows where the staged file has {expected:,}: the read lost or "
            "added rows. Report it with the file."
        ),
        metadata={"table_rows": table_rows, "source_rows": expected},
    )


def counted_warning(
    name: str, description: str, condition: Callable[[], Column], counted: str, tolerance: float
) -> Audit:
    """Non-blocking: warns when over ``tolerance`` of the rows meet ``condition``; ``counted`` names their count."""

    def aggregates(facts: MonthFacts) -> Mapping[str, Column]:
        return {counted: count_of(condition())}

    def judge(measured: Measured, facts: MonthFacts) -> AuditResult:
        total, found = measured.rows, measured.count(counted)
        share = found / total if total else 0.0
        return AuditResult(
            passed=share <= tolerance,
            severity=WARN,
            metadata={
                counted: found,
                "rows": total,
                "share": percent_text(share),
                "tolerated_share": percent_text(tolerance),
            },
        )

    return Audit(name, description, False, judge, aggregates)


# A rate audit holds a month back when its share is this many times what real files show: an order of magnitude.
REFUSED_TIMES_TOLERATED = 10


@dataclass(frozen=True)
class Rate:
    """How often real files carry rows of a kind, and the share of a month's rows tolerated before it warns."""

    tolerated: float
    real: str  # the real files' rate it came from, for the check's description and metadata

    @property
    def refused_above(self) -> float:
        return self.tolerated * REFUSED_TIMES_TOLERATED


def rate_audit(name: str, what: str, condition: Callable[[], Column], counted: str, rate: Rate) -> Audit:
    """Blocking at an order of magnitude: warns when over ``rate.tolerated`` of the rows meet ``condition``, and
    holds the month back above ``rate.refused_above``; ``counted`` names their count, ``what`` says what they are."""

    def aggregates(facts: MonthFacts) -> Mapping[str, Column]:
        return {counted: count_of(condition())}

    def judge(measured: Measured, facts: MonthFacts) -> AuditResult:
        total, found = measured.rows, measured.count(counted)
        share = found / total if total else 0.0
        refused = share > rate.refused_above
        return AuditResult(
            passed=share <= rate.tolerated,
            severity=ERROR if refused else WARN,
            description=(
                None
                if share <= rate.tolerated
                else f"{found:,} of {total:,} rows ({share:.2%}) {what}, {share / rate.tolerated:.0f}x the "
                f"{rate.tolerated:.2%} tolerated ({rate.real})"
                + (": the values are damaged. Ask for a clean file." if refused else ".")
            ),
            metadata={
                counted: found,
                "rows": total,
                "share": percent_text(share),
                "tolerated_share": percent_text(rate.tolerated),
                "refused_above_share": percent_text(rate.refused_above),
                "real_files": rate.real,
            },
        )

    description = (
        f"Few rows {what}: {rate.real}; warns above {rate.tolerated:.2%} of the month and holds it back above "
        f"{rate.refused_above:.1%}."
    )
    return Audit(name, description, True, judge, aggregates)


OUT_OF_RANGE, MISSING_VALUES = "values_out_of_range", "missing_values"


def _weather_ranges(facts: MonthFacts) -> Mapping[str, Column]:
    out_of_range = F.lit(False)
    for element, (low, high) in VALUE_RANGES.items():
        out_of_range = out_of_range | ((F.col("element") == element) & ~F.col("value").between(low, high))
    return {OUT_OF_RANGE: count_of(out_of_range), MISSING_VALUES: count_of(F.col("value").isNull())}


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


def holds_back(audit: Audit, result: AuditResult) -> bool:
    """Whether ``result`` keeps the month from being published: a blocking audit failed with an error."""
    return audit.blocking and not result.passed and result.severity == ERROR


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
