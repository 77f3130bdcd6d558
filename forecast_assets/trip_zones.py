"""A trip month's zones: its ids against the published zone lookup, and its zone mix and boroughs against the
published months around it. Ids shifted by one keep the usual zones covered and a borough with 1% of the trips
hardly moves a count, so each is judged on its own."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from forecast_assets.audits import ERROR, WARN, AuditResult, Measured, MonthFacts, Rate, count_of, listed
from forecast_assets.lakehouse.neighbours import NeighbourMonth
from forecast_assets.trip_calendar import DROPOFF_ZONE, PICKUP_ZONE, calendar_of
from taxi_core.figures import percent_text, ratio

# The zones that together carry this share of recent months' trips are the usual ones...
USUAL_ZONES_TRIP_SHARE = 0.95
# ...and a month must have pickups in at least this share of those chance expects to show them: each usual zone
# with the probability of at least one pickup at its share of the neighbours' trips (all of them, on a real month;
# fewer for a small source, whose quieter usual zones see a trip or two a month).
ZONE_COVERAGE_MIN = 0.9
# Every id in real files is in TLC's lookup (264 and 265 name the unknown locations); a few strays warn.
UNKNOWN_ZONE_TOLERANCE = 0.0001
# How far the month's trips per zone may lie from the neighbours' (total variation: half the summed absolute
# differences of the two shares). The sample's neighbouring months differ by 0.014, its ids shifted by one by 0.70.
ZONE_MIX_REFUSED_ABOVE = 0.25
# A borough's trips against what its share in the neighbours predicts (judged where that is at least
# BOROUGH_JUDGED_FROM trips): outside this range a borough has gone missing or swallowed another's trips.
BOROUGH_TRIPS_AGAINST_RECENT = (1 / 3, 3.0)
BOROUGH_JUDGED_FROM = 30
# The share of the zones a borough is expected to show pickups in that must have them. A zone's pickups in a month
# vary like a Poisson count of its share of the neighbours' trips, so the zones expected to show are the sum over
# the borough's zones of the chance of at least one pickup: a source with few trips there (green taxis on Staten
# Island: a handful a month in a test's sample) is expected to show few, and is judged only from this many...
BOROUGH_ZONES_MIN = 0.5
BOROUGH_ZONES_JUDGED_FROM = 4
# ...and only when so few zones showing is beyond chance: the count of zones with a pickup is a sum of each zone's
# chance, and at most this likely to fall so low (eight trips over eight zones show in two about one month in
# thirty, in none one in three thousand).
BOROUGH_ZONES_CHANCE = 0.001


# TLC's lookup names locations that are no borough: 264 and 265 ("Unknown" trips, and trips outside the city, named
# "N/A" or "Outside of NYC" in later lookups). Their trips are judged by their own share, never as a borough's.
PSEUDO_BOROUGHS = frozenset({"Unknown", "N/A", "Outside of NYC"})


def pseudo_zones(boroughs: Mapping[int, str]) -> set[int]:
    """The lookup's zones that are no borough's (:data:`PSEUDO_BOROUGHS`)."""
    return {zone for zone, borough in boroughs.items() if borough in PSEUDO_BOROUGHS}


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


def pooled(counts: Iterable[Mapping[int, int]]) -> dict[int, int]:
    """Trips per zone summed over several months' counts."""
    trips: dict[int, int] = {}
    for month in counts:
        for zone, count in month.items():
            trips[zone] = trips.get(zone, 0) + count
    return trips


def _pooled(neighbours: Sequence[NeighbourMonth]) -> dict[int, int]:
    return pooled(neighbour.trips_by_zone for neighbour in neighbours)


ZONES_WITH_PICKUPS = "zones_with_pickups"


def zones_with_pickups(facts: MonthFacts) -> Mapping[str, Column]:
    return {ZONES_WITH_PICKUPS: F.collect_set(PICKUP_ZONE)}  # at most a few hundred ids; nulls are left out


def zones_like_recent_months(measured: Measured, facts: MonthFacts) -> AuditResult:
    usual = usual_zones(facts.neighbours)
    if not usual:
        return AuditResult(passed=True, metadata={"compared_with": facts.compared_with()})
    present = {int(zone) for zone in measured.values[ZONES_WITH_PICKUPS]}
    covered = usual & present
    trips = _pooled(facts.neighbours)
    total = sum(trips.values())
    expected = sum(1 - math.exp(-trips.get(zone, 0) / total * measured.rows) for zone in usual) if total else 0.0
    share = len(covered) / expected if expected else 1.0
    passed = share >= ZONE_COVERAGE_MIN
    missing = sorted(usual - present)
    return AuditResult(
        passed=passed,
        description=(
            None
            if passed
            else f"{facts.month.month} has pickups in {len(covered)} of the {len(usual)} zones that carry "
            f"{USUAL_ZONES_TRIP_SHARE:.0%} of trips in {facts.compared_with()}, where its {measured.rows:,} trips "
            f"would show pickups in {expected:.0f} (at least {ZONE_COVERAGE_MIN:.0%} needed): the file's zone ids "
            "look damaged. Ask for a clean file."
        ),
        metadata={
            "usual_zones": len(usual),
            "usual_zones_with_pickups": len(covered),
            "usual_zones_expected_with_pickups": round(expected, 1),
            "share": percent_text(share),
            "required_share": percent_text(ZONE_COVERAGE_MIN),
            "missing_zones": listed(missing),
            ZONES_WITH_PICKUPS: len(present),
            "compared_with": facts.compared_with(),
        },
    )


UNKNOWN_ZONE_TRIPS, UNKNOWN_PICKUP_IDS, UNKNOWN_DROPOFF_IDS = (
    "trips_with_unknown_zone", "unknown_pickup_zone_ids", "unknown_dropoff_zone_ids",
)  # fmt: skip


def unknown_zones(facts: MonthFacts) -> Mapping[str, Column]:
    if facts.zones is None:
        return {}
    # One SQL expression: ``isin`` sends each of the 265 ids to the JVM as a call of its own (0.13 s a column).
    known = ", ".join(str(int(zone)) for zone in sorted(facts.zones.boroughs))

    def unknown(column: str) -> Column:
        return F.col(column).isNotNull() & ~F.expr(f"`{column}` IN ({known})")

    def some_ids(column: str) -> Column:
        return F.slice(F.array_sort(F.collect_set(F.when(unknown(column), F.col(column)))), 1, 20)

    return {
        UNKNOWN_ZONE_TRIPS: count_of(unknown(PICKUP_ZONE) | unknown(DROPOFF_ZONE)),
        UNKNOWN_PICKUP_IDS: some_ids(PICKUP_ZONE),
        UNKNOWN_DROPOFF_IDS: some_ids(DROPOFF_ZONE),
    }


def zone_ids_known(measured: Measured, facts: MonthFacts) -> AuditResult:
    if facts.zones is None:
        return AuditResult(passed=True, metadata={"compared_with": "no zone lookup"})
    total, found = measured.rows, measured.count(UNKNOWN_ZONE_TRIPS)
    share = found / total if total else 0.0
    pickups, dropoffs = measured.values[UNKNOWN_PICKUP_IDS] or [], measured.values[UNKNOWN_DROPOFF_IDS] or []
    refused = share > UNKNOWN_ZONE_TOLERANCE
    ids = f"pickup ids {listed(pickups) or 'none'}; dropoff ids {listed(dropoffs) or 'none'}"
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
            "share": percent_text(share),
            "refused_above_share": percent_text(UNKNOWN_ZONE_TOLERANCE),
            UNKNOWN_PICKUP_IDS: listed(pickups),
            UNKNOWN_DROPOFF_IDS: listed(dropoffs),
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


def zone_mix_like_recent_months(measured: Measured, facts: MonthFacts) -> AuditResult:
    if not facts.neighbours:
        return AuditResult(passed=True, metadata={"compared_with": facts.compared_with()})
    month, pooled = calendar_of(measured).by_zone, _pooled(facts.neighbours)
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
            "distance": ratio(distance),
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
    expected_zones: float
    zone_chances: tuple[float, ...] = ()  # each zone's chance of at least one pickup

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
        expected = self.expected_zones
        few = expected >= BOROUGH_ZONES_JUDGED_FROM and self.zones < BOROUGH_ZONES_MIN * expected
        chance = at_most(self.zones, self.zone_chances)
        if few and chance < BOROUGH_ZONES_CHANCE:
            found.append(
                f"{self.borough} has pickups in {self.zones} zones where its trips in the neighbours predict "
                f"{expected:.0f} (at least {BOROUGH_ZONES_MIN:.0%} needed; by chance alone {chance:.1g})"
            )
        return found


def at_most(count: int, chances: tuple[float, ...]) -> float:
    """The chance that at most ``count`` of independent events with ``chances`` happen (1 with none given)."""
    if not chances:
        return 1.0
    # The distribution of how many happen, one event at a time: O(events^2) for a borough's few dozen zones.
    happened = [1.0]
    for chance in chances:
        happened = [
            (happened[k] if k < len(happened) else 0.0) * (1 - chance) + (happened[k - 1] * chance if k else 0.0)
            for k in range(len(happened) + 1)
        ]
    return float(sum(happened[: count + 1]))


def borough_figures(month: Mapping[int, int], month_total: int, facts: MonthFacts) -> list[BoroughFigures]:
    """Each borough of the lookup: the month's pickups and zones with pickups, against what the month's trips
    (``month_total``, every trip: one with no zone is missing from its borough) at the neighbours' shares predict.
    Trips in the lookup's pseudo-zones are left out on both sides: they are no borough's."""
    boroughs = facts.zones.boroughs if facts.zones else {}
    elsewhere = pseudo_zones(boroughs)
    pooled = {zone: trips for zone, trips in _pooled(facts.neighbours).items() if zone not in elsewhere}
    pooled_total = sum(pooled.values())
    month_total -= sum(month.get(zone, 0) for zone in elsewhere)
    figures = []
    for borough in sorted(set(boroughs.values()) - PSEUDO_BOROUGHS):
        zones = {zone for zone, name in boroughs.items() if name == borough}
        share = sum(pooled.get(zone, 0) for zone in zones) / pooled_total if pooled_total else 0.0
        # Each zone's expected pickups this month, at its share of the neighbours' trips.
        expected = [pooled.get(zone, 0) / pooled_total * month_total if pooled_total else 0.0 for zone in zones]
        figures.append(
            BoroughFigures(
                borough=borough,
                trips=sum(month.get(zone, 0) for zone in zones),
                expected_trips=share * month_total,
                zones=sum(1 for zone in zones if month.get(zone, 0) > 0),
                expected_zones=sum(1 - math.exp(-trips) for trips in expected),
                zone_chances=tuple(1 - math.exp(-trips) for trips in expected),
            )
        )
    return figures


def boroughs_like_recent_months(measured: Measured, facts: MonthFacts) -> AuditResult:
    if not facts.neighbours or facts.zones is None:
        return AuditResult(passed=True, metadata={"compared_with": facts.compared_with()})
    figures = borough_figures(calendar_of(measured).by_zone, measured.rows, facts)
    faults = [fault for figure in figures for fault in figure.faults()]
    table = "; ".join(
        f"{f.borough}: {f.trips:,} trips ({f.ratio:.2f}x expected), {f.zones} zones ({f.expected_zones:.0f} expected)"
        for f in figures
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


# How many of a month's trips start, and end, in the lookup's pseudo-zones: real files carry a fraction of a
# percent (older years more); ten times the tolerated share and the file's zones are damaged (locations lost).
PSEUDO_ZONE_PICKUPS = Rate(0.03, "real files: 0.21% of pickups in 2025-05 (264: 7,596, 265: 2,091 of 4.59M)")
PSEUDO_ZONE_DROPOFFS = Rate(
    0.03, "real files: 0.66% of drop-offs in 2025-05 (264: 9,800, 265: 20,490 of 4.59M); 0.68% of 2024's trips"
)


def _pseudo_share(trips: Mapping[int, int], zones: set[int]) -> tuple[int, int, float]:
    total = sum(trips.values())
    found = sum(trips.get(zone, 0) for zone in zones)
    return found, total, found / total if total else 0.0


def pseudo_zones_at_their_rate(measured: Measured, facts: MonthFacts) -> AuditResult:
    if facts.zones is None:
        return AuditResult(passed=True, metadata={"compared_with": "no zone lookup"})
    zones = pseudo_zones(facts.zones.boroughs)
    calendar = calendar_of(measured)
    named = ", ".join(f"{zone} ({facts.zones.boroughs[zone]})" for zone in sorted(zones))
    faults, refused = [], False
    metadata: dict[str, Any] = {"pseudo_zones": named, "zones_from": facts.zones.source}
    for end, trips, rate in (
        ("pickups", calendar.by_zone, PSEUDO_ZONE_PICKUPS),
        ("drop-offs", calendar.dropoffs_by_zone, PSEUDO_ZONE_DROPOFFS),
    ):
        found, total, share = _pseudo_share(trips, zones)
        metadata |= {
            f"{end}_in_pseudo_zones": found,
            f"{end}_share": percent_text(share),
            f"{end}_tolerated_share": percent_text(rate.tolerated),
            f"{end}_refused_above_share": percent_text(rate.refused_above),
            f"{end}_real_files": rate.real,
        }
        if share > rate.tolerated:
            refused = refused or share > rate.refused_above
            faults.append(
                f"{found:,} of {total:,} {end} ({share:.2%}) are in TLC's zones for unknown or out-of-city places "
                f"({named}), {share / rate.tolerated:.1f}x the {rate.tolerated:.0%} tolerated ({rate.real})"
            )
    return AuditResult(
        passed=not faults,
        severity=ERROR if refused else WARN,
        description=(
            "; ".join(faults)
            + (
                ": the file lost its trips' locations. Ask for a clean file."
                if refused
                else ". Trips whose location TLC could not place; published."
            )
            if faults
            else None
        ),
        metadata=metadata,
    )
