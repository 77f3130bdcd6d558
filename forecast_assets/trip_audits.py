"""The audits of a month of TLC trip records: its calendar, its zones, its boroughs and its values, each held
to the published zone lookup, to the published months around it, or to how often real files carry the fault.

Every bound says where it came from: a rate seen in TLC's own files, or how far a damaged file lands from it.
Pure judges over what :mod:`forecast_assets.audit_run` measured; Spark only builds the aggregates and queries.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from forecast_assets.audits import (
    ERROR,
    WARN,
    Audit,
    AuditResult,
    Measured,
    MonthFacts,
    Rate,
    Repeats,
    count_of,
    no_null_keys,
    rate_audit,
    repeats,
    repeats_name,
    row_count_matches_source,
)
from forecast_assets.lakehouse.neighbours import NeighbourMonth
from taxi_core.months import MonthWindow

PICKUP, DROPOFF = "tpep_pickup_datetime", "tpep_dropoff_datetime"
PICKUP_ZONE, DROPOFF_ZONE = "pulocationid", "dolocationid"
# Real TLC files carry a few trips whose clock is off; tolerate them up to this share of the month.
OUTLIER_TOLERANCE = 0.001
# Beyond this share the file is not this month's data at all, and it is not published.
OUTSIDE_MONTH_LIMIT = 0.01
# Real files repeat a handful of trip records; a larger share is a file written twice over, not published.
DUPLICATE_LIMIT = 0.01
# The zones that together carry this share of recent months' trips are the usual ones...
USUAL_ZONES_TRIP_SHARE = 0.95
# ...and a month must have pickups in at least this share of them.
ZONE_COVERAGE_MIN = 0.9
# A month's rows against the median of its published neighbours: outside this range it is held back.
ROWS_AGAINST_RECENT = (0.5, 2.0)
RAW_YELLOW_KEYS = [PICKUP, PICKUP_ZONE]
# TLC publishes no trip id; a repeated record of all of these is a duplicated trip.
TRIP_RECORD = ["vendorid", PICKUP, DROPOFF, PICKUP_ZONE, DROPOFF_ZONE, "trip_distance", "total_amount"]

# Every id in real files is in TLC's lookup (264 and 265 name the unknown locations); a few strays warn.
UNKNOWN_ZONE_TOLERANCE = 0.0001
# A day against the month's typical day: the quietest real days (Christmas, a blizzard's travel ban) keep about
# a third of it; a day below this share is a file missing that day, not a quiet one...
DAY_REFUSED_BELOW = 0.2
# ...and a day below this share, a holiday or a storm, is published with a warning.
DAY_WARNED_BELOW = 0.5
# Hours are judged only when the month is busy enough that its quietest hour (4-5 am, a tenth of the average)
# cannot have no pickup by chance: at this many trips a day it expects over ten.
HOURS_JUDGED_FROM_TRIPS_A_DAY = 2400
# How far the month's trips per zone may lie from the neighbours' (total variation: half the summed absolute
# differences of the two shares). Real neighbouring months differ by a few hundredths; ids shifted by one, or
# trips filed under another zone, move most of the trips.
ZONE_MIX_REFUSED_ABOVE = 0.25
# A borough's trips against what its share in the neighbours predicts (judged where that is at least
# BOROUGH_JUDGED_FROM trips): outside this range a borough has gone missing or swallowed another's trips.
BOROUGH_TRIPS_AGAINST_RECENT = (1 / 3, 3.0)
BOROUGH_JUDGED_FROM = 30
# The share of a borough's usual zones (those with pickups in the neighbours) that must have pickups.
BOROUGH_ZONES_MIN = 0.5
BOROUGH_ZONES_JUDGED_FROM = 4
NEW_YORK = ZoneInfo("America/New_York")

NEGATIVE_FARES = Rate(0.02, "real files: 1.3-1.5% of fares, refunds and voided trips (2019-2026)")
BACKWARDS_TRIPS = Rate(OUTLIER_TOLERANCE, "real files: about 0.002%, meter clocks (56 of 2.96M in 2024-01)")
ABSURD_DISTANCES = Rate(0.001, "real files: about 0.003% over 200 miles, odometer errors (2019-2026)")
DAY_LONG_TRIPS = Rate(0.001, "real files: about 0.0005%, meters left running (36 of 7.05M in 2025-01..02)")
# No real taxi trip is longer than this, nor further than this many miles.
LONGEST_TRIP = timedelta(hours=24)
FURTHEST_TRIP_MILES = 500


@dataclass(frozen=True)
class TripCalendar:
    """The month's pickups inside the month, counted by zone, by day and by hour."""

    by_zone: Mapping[int, int]
    by_day: Mapping[date, int]
    by_hour: Mapping[datetime, int]


CALENDAR = "trip_calendar"


def _trip_calendar(rows: DataFrame, facts: MonthFacts) -> Mapping[str, Any]:
    """One grouping of the month by hour and pickup zone (at most ~200k groups) answers the zone, borough, day
    and hour audits together. Zones count every trip (where a trip starts does not depend on its clock); days
    and hours, the pickups inside the month."""
    window = facts.month
    counted = (
        rows.groupBy(F.date_trunc("hour", F.col(PICKUP)).alias("hour"), F.col(PICKUP_ZONE).alias("zone"))
        .count()
        .toPandas()
    )
    by_zone = counted.dropna(subset=["zone"]).groupby("zone")["count"].sum()
    inside = counted[(counted["hour"] >= window.start) & (counted["hour"] < window.end)]
    by_hour = inside.groupby("hour")["count"].sum()
    by_day: dict[date, int] = {}
    for hour, trips in by_hour.items():
        day = hour.date()
        by_day[day] = by_day.get(day, 0) + int(trips)
    return {
        CALENDAR: TripCalendar(
            by_zone={int(zone): int(trips) for zone, trips in by_zone.items()},
            by_day=by_day,
            by_hour={hour.to_pydatetime(): int(trips) for hour, trips in by_hour.items()},
        )
    }


def _calendar(measured: Measured) -> TripCalendar:
    found: TripCalendar = measured.values[CALENDAR]
    return found


OUTSIDE_MONTH = "pickups_outside_month"


def _outside_month(facts: MonthFacts) -> Mapping[str, Column]:
    pickup, window = F.col(PICKUP), facts.month
    return {OUTSIDE_MONTH: count_of((pickup < F.lit(window.start)) | (pickup >= F.lit(window.end)))}


def _pickups_inside_month(measured: Measured, facts: MonthFacts) -> AuditResult:
    total, outside, window = measured.rows, measured.count(OUTSIDE_MONTH), facts.month
    share = outside / total if total else 1.0
    not_this_month = share > OUTSIDE_MONTH_LIMIT
    return AuditResult(
        passed=share <= OUTLIER_TOLERANCE,
        severity=ERROR if not_this_month else WARN,
        description=(
            f"{share:.1%} of {total:,} pickups fall outside {window.month}: this is not {window.month}'s data"
            if not_this_month
            else f"{outside:,} of {total:,} pickups ({share:.2%}) fall outside {window.month}, more than the "
            f"{OUTLIER_TOLERANCE:.1%} of clock errors real files carry"
            if share > OUTLIER_TOLERANCE
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
            f"{extra:,} of {total:,} rows ({share:.1%}) repeat another trip record exactly, above the "
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
    trips = _pooled(neighbours)
    wanted, carried, usual = trip_share * sum(trips.values()), 0, set()
    for zone, count in sorted(trips.items(), key=lambda item: (-item[1], item[0])):
        if carried >= wanted:
            break
        usual.add(zone)
        carried += count
    return usual


def _pooled(neighbours: Sequence[NeighbourMonth]) -> dict[int, int]:
    trips: dict[int, int] = {}
    for neighbour in neighbours:
        for zone, count in neighbour.trips_by_zone.items():
            trips[zone] = trips.get(zone, 0) + count
    return trips


ZONES_WITH_PICKUPS = "zones_with_pickups"


def _zones_with_pickups(facts: MonthFacts) -> Mapping[str, Column]:
    return {ZONES_WITH_PICKUPS: F.collect_set(PICKUP_ZONE)}  # at most a few hundred ids; nulls are left out


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
            "missing_zones": _listed(missing),
            ZONES_WITH_PICKUPS: len(present),
            "compared_with": facts.compared_with(),
        },
    )


def _listed(values: Sequence[Any], most: int = 20) -> str:
    return ", ".join(map(str, values[:most])) + (f" ... ({len(values)} in all)" if len(values) > most else "")


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
            else f"{facts.month.month} has {total:,} rows, {ratio:.2f}x the median of {facts.compared_with()} "
            f"({typical:,.0f}); outside {low}x-{high}x the month is held back. Check the file is whole; publish a "
            "real change in demand by accepting this audit with a reason."
        ),
        metadata={
            "rows": total,
            "median_of_recent_months": typical,
            "ratio": ratio,
            "accepted_ratio": f"{low}-{high}",
            "compared_with": facts.compared_with(),
        },
    )


UNKNOWN_ZONE_TRIPS, UNKNOWN_PICKUP_IDS, UNKNOWN_DROPOFF_IDS = (
    "trips_with_unknown_zone", "unknown_pickup_zone_ids", "unknown_dropoff_zone_ids",
)  # fmt: skip


def _unknown_zones(facts: MonthFacts) -> Mapping[str, Column]:
    if facts.zones is None:
        return {}
    known = sorted(facts.zones.boroughs)

    def unknown(column: str) -> Column:
        return F.col(column).isNotNull() & ~F.col(column).isin(known)

    def some_ids(column: str) -> Column:
        return F.slice(F.array_sort(F.collect_set(F.when(unknown(column), F.col(column)))), 1, 20)

    return {
        UNKNOWN_ZONE_TRIPS: count_of(unknown(PICKUP_ZONE) | unknown(DROPOFF_ZONE)),
        UNKNOWN_PICKUP_IDS: some_ids(PICKUP_ZONE),
        UNKNOWN_DROPOFF_IDS: some_ids(DROPOFF_ZONE),
    }


def _zone_ids_known(measured: Measured, facts: MonthFacts) -> AuditResult:
    if facts.zones is None:
        return AuditResult(passed=True, metadata={"compared_with": "no zone lookup"})
    total, found = measured.rows, measured.count(UNKNOWN_ZONE_TRIPS)
    share = found / total if total else 0.0
    pickups, dropoffs = measured.values[UNKNOWN_PICKUP_IDS] or [], measured.values[UNKNOWN_DROPOFF_IDS] or []
    refused = share > UNKNOWN_ZONE_TOLERANCE
    ids = f"pickup ids {_listed(pickups) or 'none'}; dropoff ids {_listed(dropoffs) or 'none'}"
    return AuditResult(
        passed=found == 0,
        severity=ERROR if refused else WARN,
        description=(
            None
            if found == 0
            else f"{found:,} of {total:,} trips ({share:.2%}) name a zone id that {facts.zones.source} does not have "
            f"({ids})"
            + (
                ": the file's zone ids are damaged (shifted or renumbered). Ask for a clean file; if TLC has added "
                "zones, publish its new zone lookup (taxi_zones) first."
                if refused
                else "."
            )
        ),
        metadata={
            UNKNOWN_ZONE_TRIPS: found,
            "rows": total,
            "share": share,
            "refused_above_share": UNKNOWN_ZONE_TOLERANCE,
            UNKNOWN_PICKUP_IDS: _listed(pickups),
            UNKNOWN_DROPOFF_IDS: _listed(dropoffs),
            "compared_with": facts.zones.source,
        },
    )


def zone_mix_distance(month: Mapping[int, int], neighbours: Mapping[int, int]) -> float:
    """Total variation distance between two distributions of trips over zones: 0 alike, 1 nothing in common."""
    month_total, neighbours_total = sum(month.values()), sum(neighbours.values())
    if not month_total or not neighbours_total:
        return 0.0 if month_total == neighbours_total else 1.0
    zones = set(month) | set(neighbours)
    return sum(abs(month.get(z, 0) / month_total - neighbours.get(z, 0) / neighbours_total) for z in zones) / 2


def _zone_mix_like_recent_months(measured: Measured, facts: MonthFacts) -> AuditResult:
    if not facts.neighbours:
        return AuditResult(passed=True, metadata={"compared_with": facts.compared_with()})
    month, pooled = _calendar(measured).by_zone, _pooled(facts.neighbours)
    distance = zone_mix_distance(month, pooled)
    month_total, pooled_total = sum(month.values()) or 1, sum(pooled.values()) or 1
    moved = sorted(
        set(month) | set(pooled),
        key=lambda zone: -abs(month.get(zone, 0) / month_total - pooled.get(zone, 0) / pooled_total),
    )[:5]
    changes = ", ".join(
        f"zone {zone} {pooled.get(zone, 0) / pooled_total:.1%} -> {month.get(zone, 0) / month_total:.1%}"
        for zone in moved
    )
    passed = distance <= ZONE_MIX_REFUSED_ABOVE
    return AuditResult(
        passed=passed,
        description=(
            None
            if passed
            else f"{distance:.0%} of {facts.month.month}'s trips would have to move zone to match "
            f"{facts.compared_with()} (at most {ZONE_MIX_REFUSED_ABOVE:.0%}; neighbouring months differ by a few "
            f"percent). Largest changes in share: {changes}. The zone ids look shifted or relabelled: ask for a "
            "clean file."
        ),
        metadata={
            "distance": distance,
            "refused_above": ZONE_MIX_REFUSED_ABOVE,
            "largest_changes": changes,
            "compared_with": facts.compared_with(),
        },
    )


@dataclass(frozen=True)
class BoroughFigures:
    """A borough's pickups in the month against what its neighbours' share predicts."""

    borough: str
    trips: int
    expected_trips: float
    zones: int
    usual_zones: int

    @property
    def ratio(self) -> float:
        return self.trips / self.expected_trips if self.expected_trips else 1.0

    def faults(self) -> list[str]:
        low, high = BOROUGH_TRIPS_AGAINST_RECENT
        found = []
        if self.expected_trips >= BOROUGH_JUDGED_FROM and not low <= self.ratio <= high:
            found.append(
                f"{self.borough} has {self.trips:,} pickups where its share of the neighbours predicts "
                f"{self.expected_trips:,.0f} ({self.ratio:.2f}x; {low:.2f}x-{high:.0f}x accepted)"
            )
        if self.usual_zones >= BOROUGH_ZONES_JUDGED_FROM and self.zones < BOROUGH_ZONES_MIN * self.usual_zones:
            found.append(
                f"{self.borough} has pickups in {self.zones} of its {self.usual_zones} usual zones (at least "
                f"{BOROUGH_ZONES_MIN:.0%} needed)"
            )
        return found


def borough_figures(month: Mapping[int, int], facts: MonthFacts) -> list[BoroughFigures]:
    """Each borough of the lookup: the month's pickups and zones with pickups, against the neighbours'."""
    boroughs = facts.zones.boroughs if facts.zones else {}
    pooled = _pooled(facts.neighbours)
    month_total, pooled_total = sum(month.values()), sum(pooled.values())
    figures = []
    for borough in sorted(set(boroughs.values())):
        zones = {zone for zone, name in boroughs.items() if name == borough}
        usual = [sum(1 for zone in zones if neighbour.trips_by_zone.get(zone, 0) > 0) for neighbour in facts.neighbours]
        share = sum(pooled.get(zone, 0) for zone in zones) / pooled_total if pooled_total else 0.0
        figures.append(
            BoroughFigures(
                borough=borough,
                trips=sum(month.get(zone, 0) for zone in zones),
                expected_trips=share * month_total,
                zones=sum(1 for zone in zones if month.get(zone, 0) > 0),
                usual_zones=round(statistics.mean(usual)) if usual else 0,
            )
        )
    return figures


def _boroughs_like_recent_months(measured: Measured, facts: MonthFacts) -> AuditResult:
    if not facts.neighbours or facts.zones is None:
        return AuditResult(passed=True, metadata={"compared_with": facts.compared_with()})
    figures = borough_figures(_calendar(measured).by_zone, facts)
    faults = [fault for figure in figures for fault in figure.faults()]
    table = "; ".join(
        f"{f.borough}: {f.trips:,} trips ({f.ratio:.2f}x expected), {f.zones}/{f.usual_zones} zones" for f in figures
    )
    return AuditResult(
        passed=not faults,
        description=(
            None
            if not faults
            else f"{'; '.join(faults)}, against {facts.compared_with()}: the file lost a borough's trips or files "
            "them under other zones. Ask for a clean file."
        ),
        metadata={"boroughs": table, "compared_with": facts.compared_with(), "zones_from": facts.zones.source},
    )


def _days_of(window_start: datetime, days: int) -> list[date]:
    return [(window_start + timedelta(days=offset)).date() for offset in range(days)]


def missing_local_hours(start: datetime, end: datetime) -> set[datetime]:
    """The wall-clock hours that do not exist in New York (the hour skipped when clocks go forward)."""
    missing, hour = set(), start
    while hour < end:
        aware = hour.replace(tzinfo=NEW_YORK)
        if aware.astimezone(ZoneInfo("UTC")).astimezone(NEW_YORK).replace(tzinfo=None) != hour:
            missing.add(hour)
        hour += timedelta(hours=1)
    return missing


def _typical_day(by_day: Mapping[date, int], days: list[date], facts: MonthFacts) -> tuple[float, str]:
    """Trips on a typical day: the neighbours' median trips a day, or, with none published, the month's own
    median day (a median, so a missing week cannot drag it down)."""
    if facts.neighbours:
        per_day = [neighbour.rows / _days_in(neighbour.month) for neighbour in facts.neighbours]
        return statistics.median(per_day), f"the median day of {facts.compared_with()}"
    return float(statistics.median(by_day.get(day, 0) for day in days)), f"the median day of {facts.month.month}"


def _days_in(month: str) -> int:
    return MonthWindow.from_partition_key(month).days


def _every_day_has_its_trips(measured: Measured, facts: MonthFacts) -> AuditResult:
    window, calendar = facts.month, _calendar(measured)
    days = _days_of(window.start, window.days)
    typical, typical_from = _typical_day(calendar.by_day, days, facts)
    ratios = {day: calendar.by_day.get(day, 0) / typical if typical else 0.0 for day in days}
    empty_days = [day for day, ratio in ratios.items() if ratio < DAY_REFUSED_BELOW]
    quiet_days = [day for day, ratio in ratios.items() if DAY_REFUSED_BELOW <= ratio < DAY_WARNED_BELOW]
    judged_hours = typical >= HOURS_JUDGED_FROM_TRIPS_A_DAY
    skipped = missing_local_hours(window.start, window.end)
    hours = [window.start + timedelta(hours=offset) for offset in range(window.hours)] if judged_hours else []
    empty_hours = [
        hour
        for hour in hours
        if calendar.by_hour.get(hour, 0) == 0 and hour not in skipped and hour.date() not in empty_days
    ]
    faults = []
    if empty_days:
        faults.append(
            f"{len(empty_days)} of {len(days)} days have under {DAY_REFUSED_BELOW:.0%} of a typical day's trips "
            f"({typical:,.0f}, {typical_from}): {_day_ranges(empty_days, calendar.by_day)}"
        )
    if empty_hours:
        listed = _listed([f"{hour:%m-%d %H}:00" for hour in empty_hours], 10)
        faults.append(f"{len(empty_hours)} hours have no pickup at all: {listed}")
    warned = (
        f"{len(quiet_days)} quiet days ({DAY_REFUSED_BELOW:.0%}-{DAY_WARNED_BELOW:.0%} of a typical day, as on a "
        f"holiday or in a storm): {_day_ranges(quiet_days, calendar.by_day)}"
        if quiet_days
        else None
    )
    lowest = min(ratios.items(), key=lambda item: item[1]) if ratios else None
    return AuditResult(
        passed=not faults and not quiet_days,
        severity=ERROR if faults else WARN,
        description=(
            f"{'; '.join(faults)}. The file is missing part of the month: ask for the whole file." if faults else warned
        ),
        metadata={
            "days": len(days),
            "typical_day_trips": round(typical),
            "typical_day_from": typical_from,
            "days_under_refused_share": len(empty_days),
            "quiet_days": len(quiet_days),
            "lowest_day": f"{lowest[0]} ({lowest[1]:.2f}x)" if lowest else "",
            "refused_below": DAY_REFUSED_BELOW,
            "warned_below": DAY_WARNED_BELOW,
            "hours_without_pickups": len(empty_hours)
            if judged_hours
            else f"not judged (under {HOURS_JUDGED_FROM_TRIPS_A_DAY:,} trips a day)",
        },
    )


def _day_ranges(days: Sequence[date], trips: Mapping[date, int]) -> str:
    """Consecutive days as one range: ``02-22..02-28 (0-12 trips a day)``."""
    if not days:
        return ""
    runs: list[list[date]] = [[days[0]]]
    for day in days[1:]:
        if day - runs[-1][-1] == timedelta(days=1):
            runs[-1].append(day)
        else:
            runs.append([day])
    parts = []
    for run in runs:
        low, high = min(trips.get(d, 0) for d in run), max(trips.get(d, 0) for d in run)
        counts = f"{low:,}" if low == high else f"{low:,}-{high:,}"
        span = f"{run[0]:%Y-%m-%d}" if len(run) == 1 else f"{run[0]:%Y-%m-%d}..{run[-1]:%m-%d}"
        parts.append(f"{span} ({counts} trips{' a day' if len(run) > 1 else ''})")
    return ", ".join(parts)


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
    Audit(
        "raw_yellow_zone_ids_known",
        "Every pickup and dropoff zone id is in the published zone lookup (nyc_taxi.taxi_zones); more than "
        f"{UNKNOWN_ZONE_TOLERANCE:.2%} of trips with an unknown id and the month is not published.",
        True,
        _zone_ids_known,
        _unknown_zones,
    ),
    Audit(
        "raw_yellow_zone_mix_like_recent_months",
        "Trips spread over the zones as in the nearest published months: no more than "
        f"{ZONE_MIX_REFUSED_ABOVE:.0%} of them would have to move zone to match (ids shifted or relabelled).",
        True,
        _zone_mix_like_recent_months,
        query=_trip_calendar,
    ),
    Audit(
        "raw_yellow_boroughs_like_recent_months",
        f"Every borough, small ones included, has {BOROUGH_TRIPS_AGAINST_RECENT[0]:.2f}x-"
        f"{BOROUGH_TRIPS_AGAINST_RECENT[1]:.0f}x the pickups its share of the nearest published months predicts, "
        f"in at least {BOROUGH_ZONES_MIN:.0%} of its usual zones.",
        True,
        _boroughs_like_recent_months,
        query=_trip_calendar,
    ),
    Audit(
        "raw_yellow_every_day_has_its_trips",
        f"Every day of the month has at least {DAY_REFUSED_BELOW:.0%} of a typical day's trips (the nearest "
        f"published months'), and every hour has a pickup; a day under {DAY_WARNED_BELOW:.0%} (a holiday, a "
        "storm) warns.",
        True,
        _every_day_has_its_trips,
        query=_trip_calendar,
    ),
    rate_audit(
        "raw_yellow_no_negative_fares",
        "have a negative fare or total",
        lambda: (F.col("fare_amount") < 0) | (F.col("total_amount") < 0),
        "negative_fares",
        NEGATIVE_FARES,
    ),
    rate_audit(
        "raw_yellow_pickups_before_dropoffs",
        "end before they start",
        lambda: F.col(DROPOFF) < F.col(PICKUP),
        "dropoffs_before_pickups",
        BACKWARDS_TRIPS,
    ),
    rate_audit(
        "raw_yellow_distances_possible",
        f"have a negative distance or one over {FURTHEST_TRIP_MILES} miles",
        lambda: (F.col("trip_distance") < 0) | (F.col("trip_distance") > FURTHEST_TRIP_MILES),
        "impossible_distances",
        ABSURD_DISTANCES,
    ),
    rate_audit(
        "raw_yellow_durations_possible",
        f"last longer than {LONGEST_TRIP.total_seconds() / 3600:.0f} hours",
        lambda: F.col(DROPOFF) > F.col(PICKUP) + F.expr(f"INTERVAL {int(LONGEST_TRIP.total_seconds())} SECONDS"),
        "trips_over_a_day",
        DAY_LONG_TRIPS,
    ),
]
