"""The audits of a month of TLC trip records: its calendar, its zones, its boroughs and its values, each held
to the published zone lookup, to the published months around it, or to how often real files carry the fault.

Every bound says where it came from: a rate seen in TLC's own files, or how far a damaged file lands from it.
Pure judges over what :mod:`forecast_assets.audit_run` measured; Spark only builds the aggregates and queries.
The calendar's audit lives in :mod:`forecast_assets.trip_calendar`, the zones' in :mod:`forecast_assets.trip_zones`.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from datetime import timedelta

from pyspark.sql import Column
from pyspark.sql import functions as F

from forecast_assets.audits import (
    ERROR,
    WARN,
    Aggregates,
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
from forecast_assets.lakehouse.wall_clock import wall_clock
from forecast_assets.sources.tlc_format import TripLayout
from forecast_assets.trip_calendar import (
    DAY_REFUSED_BELOW,
    DAY_WARNED_BELOW,
    DROPOFF_ZONE,
    PICKUP_ZONE,
    every_day_has_its_trips,
    trip_calendar,
)
from forecast_assets.trip_direction import LEAN_REFUSED_BELOW, direction_like_recent_months
from forecast_assets.trip_layout_year import layout_of_its_year
from forecast_assets.trip_weeks import (
    REPEATED_BELOW_CHANCE,
    SHIFT_EXPLAINS_BELOW,
    no_repeated_days,
    week_like_recent_months,
)
from forecast_assets.trip_zones import (
    BOROUGH_TRIPS_AGAINST_RECENT,
    BOROUGH_ZONES_MIN,
    PSEUDO_ZONE_DROPOFFS,
    PSEUDO_ZONE_PICKUPS,
    UNKNOWN_ZONE_TOLERANCE,
    USUAL_ZONES_TRIP_SHARE,
    ZONE_COVERAGE_MIN,
    ZONE_MIX_REFUSED_ABOVE,
    boroughs_like_recent_months,
    pseudo_zones_at_their_rate,
    unknown_zones,
    zone_ids_known,
    zone_mix_like_recent_months,
    zones_like_recent_months,
    zones_with_pickups,
)
from taxi_core import figures
from taxi_core.figures import percent_text

# Real TLC files carry a few trips whose clock is off; tolerate them up to this share of the month.
OUTLIER_TOLERANCE = 0.001
# Beyond this share the file is not this month's data at all, and it is not published.
OUTSIDE_MONTH_LIMIT = 0.01
# Real files repeat a handful of trip records; a larger share is a file written twice over, not published.
DUPLICATE_LIMIT = 0.01
# A month's rows against the median of its published neighbours: outside this range it is held back.
ROWS_AGAINST_RECENT = (0.5, 2.0)

NEGATIVE_FARES = Rate(0.02, "real files: 1.3-1.5% of fares, refunds and voided trips (2019-2026)")
BACKWARDS_TRIPS = Rate(OUTLIER_TOLERANCE, "real files: about 0.002%, meter clocks (56 of 2.96M in 2024-01)")
ABSURD_DISTANCES = Rate(0.001, "real files: about 0.003% over 200 miles, odometer errors (2019-2026)")
DAY_LONG_TRIPS = Rate(0.001, "real files: about 0.0005%, meters left running (36 of 7.05M in 2025-01..02)")
# No real taxi trip is longer than this, nor further than this many miles.
LONGEST_TRIP = timedelta(hours=24)
FURTHEST_TRIP_MILES = 500


OUTSIDE_MONTH = "pickups_outside_month"


def trip_record(layout: TripLayout) -> list[str]:
    """TLC publishes no trip id; a repeated record of all of these (the layout's identity, times, zones, distance
    and charges) is a duplicated trip."""
    distance = [layout.distance] if layout.distance else []
    return [*layout.identity, *layout.timestamp_columns, PICKUP_ZONE, DROPOFF_ZONE, *distance, *layout.charges]


def _negative(columns: tuple[str, ...]) -> Column:
    found = F.lit(False)
    for column in columns:
        found = found | (F.col(column) < 0)
    return found


def _outside_month(layout: TripLayout) -> Aggregates:
    def aggregates(facts: MonthFacts) -> Mapping[str, Column]:
        pickup, window = F.col(layout.pickup), facts.month
        return {OUTSIDE_MONTH: count_of((pickup < wall_clock(window.start)) | (pickup >= wall_clock(window.end)))}

    return aggregates


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
            "share": percent_text(share),
            "tolerated_share": percent_text(OUTLIER_TOLERANCE),
            "refused_above_share": percent_text(OUTSIDE_MONTH_LIMIT),
        },
    )


def _duplicate_trips(measured: Measured, facts: MonthFacts, record: list[str]) -> AuditResult:
    found: Repeats = measured.values[repeats_name(record)]
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
            "share": percent_text(share),
            "refused_above_share": percent_text(DUPLICATE_LIMIT),
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
            else f"{facts.month.month} has {total:,} rows, {ratio:.2f}x the median of {facts.compared_with()} "
            f"({typical:,.0f}); outside {low}x-{high}x the month is held back. Check the file is whole; publish a "
            "real change in demand by accepting this audit with a reason."
        ),
        metadata={
            "rows": total,
            "median_of_recent_months": round(typical),
            "ratio": figures.ratio(ratio),
            "accepted_ratio": f"{low}-{high}",
            "compared_with": facts.compared_with(),
        },
    )


def _distance_audits(table: str, layout: TripLayout) -> list[Audit]:
    """The distance audit, for a layout that records how far a trip went."""
    distance = layout.distance
    if distance is None:
        return []
    return [
        rate_audit(
            f"{table}_distances_possible",
            f"have a negative distance or one over {FURTHEST_TRIP_MILES} miles",
            lambda: (F.col(distance) < 0) | (F.col(distance) > FURTHEST_TRIP_MILES),
            "impossible_distances",
            ABSURD_DISTANCES,
        )
    ]


def trip_audits(table: str, layout: TripLayout) -> list[Audit]:
    """The audits of a month of a trip table (``raw_yellow``, named ``raw_yellow_*``) of the given layout."""
    pickup, dropoff, record = layout.pickup, layout.dropoff, trip_record(layout)
    calendar = trip_calendar(layout.pickup)  # one query object: the audits sharing it run it once
    layout_aggregates, layout_judge = layout_of_its_year(layout)
    return [
        row_count_matches_source(table, "The month's partition holds exactly as many rows as the staged TLC file."),
        no_null_keys(table, [pickup, PICKUP_ZONE]),
        Audit(
            f"{table}_no_duplicate_trips",
            f"No trip record appears twice: TLC files have a few true duplicates, so a few warn; more than "
            f"{DUPLICATE_LIMIT:.0%} of the rows and the month is not published.",
            True,
            lambda measured, facts: _duplicate_trips(measured, facts, record),
            query=lambda rows, facts: {repeats_name(record): repeats(rows, record)},
        ),
        Audit(
            f"{table}_zones_like_recent_months",
            f"The month has pickups in at least {ZONE_COVERAGE_MIN:.0%} of the zones that carry "
            f"{USUAL_ZONES_TRIP_SHARE:.0%} of the trips of the nearest published months (of those its trips would "
            "show pickups in by chance).",
            True,
            zones_like_recent_months,
            zones_with_pickups,
        ),
        Audit(
            f"{table}_rows_like_recent_months",
            f"The month's rows are {ROWS_AGAINST_RECENT[0]}x-{ROWS_AGAINST_RECENT[1]}x the median of the nearest "
            "published months.",
            True,
            _rows_like_recent_months,
        ),
        Audit(
            f"{table}_pickups_inside_month",
            f"Pickups fall inside the file's month: a few clock errors warn; more than {OUTSIDE_MONTH_LIMIT:.0%} "
            "outside (or an empty month) means the file is not this month's and it is not published.",
            True,
            _pickups_inside_month,
            _outside_month(layout),
        ),
        Audit(
            f"{table}_zone_ids_known",
            "Every pickup and dropoff zone id is in the published zone lookup (nyc_taxi.taxi_zones); more than "
            f"{UNKNOWN_ZONE_TOLERANCE:.2%} of trips with an unknown id and the month is not published.",
            True,
            zone_ids_known,
            unknown_zones,
        ),
        Audit(
            f"{table}_zone_mix_like_recent_months",
            "Trips spread over the zones as in the nearest published months: no more than "
            f"{ZONE_MIX_REFUSED_ABOVE:.0%} of them would have to move zone to match (ids shifted or relabelled).",
            True,
            zone_mix_like_recent_months,
            query=calendar,
        ),
        Audit(
            f"{table}_boroughs_like_recent_months",
            f"Every borough, small ones included, has {BOROUGH_TRIPS_AGAINST_RECENT[0]:.2f}x-"
            f"{BOROUGH_TRIPS_AGAINST_RECENT[1]:.0f}x the pickups its share of the nearest published months predicts, "
            f"in at least {BOROUGH_ZONES_MIN:.0%} of the zones that share would show pickups in by chance.",
            True,
            boroughs_like_recent_months,
            query=calendar,
        ),
        Audit(
            f"{table}_every_day_has_its_trips",
            f"Every day of the month has at least {DAY_REFUSED_BELOW:.0%} of a typical day's trips (the nearest "
            f"published months'), and every hour has a pickup; a day under {DAY_WARNED_BELOW:.0%} by more than chance "
            "(a holiday, a storm) warns.",
            True,
            every_day_has_its_trips,
            query=calendar,
        ),
        Audit(
            f"{table}_week_like_recent_months",
            "The month's pickups by weekday and hour fit the nearest published months' week as dated: when moving "
            f"them by days or hours brings them under {SHIFT_EXPLAINS_BELOW}x the distance, by more than chance, "
            "the month is re-dated or its clocks are off and it is not published.",
            True,
            week_like_recent_months,
            query=calendar,
        ),
        Audit(
            f"{table}_no_repeated_days",
            "No day repeats another's pickups zone by zone and hour by hour (under "
            f"{REPEATED_BELOW_CHANCE}x the difference chance predicts for two days): a copied day or week is not "
            "published.",
            True,
            no_repeated_days,
            query=calendar,
        ),
        Audit(
            f"{table}_direction_like_recent_months",
            "Trips lean from pickup to drop-off zone as in the nearest published months (airports and Manhattan "
            f"start more trips than they end, the boroughs end more); a month leaning below {LEAN_REFUSED_BELOW}x "
            "their way (pickup and drop-off swapped) is not published.",
            True,
            direction_like_recent_months,
            query=calendar,
        ),
        Audit(
            f"{table}_pseudo_zones_at_their_rate",
            "Trips in TLC's zones for unknown and out-of-city places (264, 265) stay near real files' share: over "
            f"{PSEUDO_ZONE_PICKUPS.tolerated:.0%} of pickups or {PSEUDO_ZONE_DROPOFFS.tolerated:.0%} of drop-offs "
            f"warns, over {PSEUDO_ZONE_PICKUPS.refused_above:.0%} holds the month back ({PSEUDO_ZONE_PICKUPS.real}).",
            True,
            pseudo_zones_at_their_rate,
            query=calendar,
        ),
        Audit(
            f"{table}_layout_of_its_year",
            "The month's file has the columns TLC's files of its year carry (cbd_congestion_fee from 2025): "
            "a month with another year's layout warns, naming the years it belongs to.",
            False,
            layout_judge,
            layout_aggregates,
        ),
        rate_audit(
            f"{table}_no_negative_fares",
            f"have a negative {' or '.join(layout.charges)}",
            lambda: _negative(layout.charges),
            "negative_fares",
            NEGATIVE_FARES,
        ),
        rate_audit(
            f"{table}_pickups_before_dropoffs",
            "end before they start",
            lambda: F.col(dropoff) < F.col(pickup),
            "dropoffs_before_pickups",
            BACKWARDS_TRIPS,
        ),
        *_distance_audits(table, layout),
        rate_audit(
            f"{table}_durations_possible",
            f"last longer than {LONGEST_TRIP.total_seconds() / 3600:.0f} hours",
            lambda: F.col(dropoff) > F.col(pickup) + F.expr(f"INTERVAL {int(LONGEST_TRIP.total_seconds())} SECONDS"),
            "trips_over_a_day",
            DAY_LONG_TRIPS,
        ),
    ]
