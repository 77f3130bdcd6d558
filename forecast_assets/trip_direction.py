"""A trip month's direction: where its trips start against where they end, beside its neighbours.

Pickups and drop-offs are not spread alike: street hails and the airports' taxi lines start trips, the boroughs
and the places outside the city end them. A file whose pickup and drop-off zones were swapped keeps every count,
zone and day normal, and leans the other way. Pure judge over the calendar :mod:`forecast_assets.trip_calendar`
counted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from forecast_assets.audits import ERROR, WARN, AuditResult, Measured, MonthFacts
from forecast_assets.lakehouse.neighbours import NeighbourMonth
from forecast_assets.trip_calendar import calendar_of
from forecast_assets.trip_zones import pooled
from taxi_core.figures import ratio

# The month's lean (each zone's share of pickups less its share of drop-offs) against the neighbours': 1 leans
# as they do, -1 the other way (pickup and drop-off swapped). Held back below this...
LEAN_REFUSED_BELOW = -0.5
# ...and warned below this (part of the trips swapped, or a change in where trips go).
LEAN_WARNED_BELOW = 0.5
# Judged only when chance alone moves the month's lean by at most this much (one standard error): a month too
# small, or neighbours leaning too little, cannot tell the directions apart.
LEAN_JUDGED_UP_TO_ERROR = 0.25


@dataclass(frozen=True)
class Lean:
    """The month's lean against the neighbours' (a regression slope) and its standard error by chance."""

    slope: float
    error: float
    turned: tuple[tuple[int, float, float, float, float], ...]  # zone, neighbours' pickup and drop-off share, month's

    @property
    def judged(self) -> bool:
        return self.error <= LEAN_JUDGED_UP_TO_ERROR


def _shares(trips: Mapping[int, int]) -> dict[int, float]:
    total = sum(trips.values())
    return {zone: count / total for zone, count in trips.items()} if total else {}


def lean(pickups: Mapping[int, int], dropoffs: Mapping[int, int], neighbours: Sequence[NeighbourMonth]) -> Lean | None:
    """The month's lean against the neighbours that kept their drop-offs; None when none did."""
    kept = [neighbour for neighbour in neighbours if neighbour.dropoffs_by_zone is not None]
    if not kept or not pickups or not dropoffs:
        return None
    their_pickups = _shares(pooled(neighbour.trips_by_zone for neighbour in kept))
    their_dropoffs = _shares(pooled(neighbour.dropoffs_by_zone or {} for neighbour in kept))
    month_pickups, month_dropoffs = _shares(pickups), _shares(dropoffs)
    trips = sum(pickups.values())
    zones = set(their_pickups) | set(their_dropoffs) | set(month_pickups) | set(month_dropoffs)
    theirs = {zone: their_pickups.get(zone, 0.0) - their_dropoffs.get(zone, 0.0) for zone in zones}
    month = {zone: month_pickups.get(zone, 0.0) - month_dropoffs.get(zone, 0.0) for zone in zones}
    scale = sum(value * value for value in theirs.values())
    if not scale:
        return Lean(0.0, math.inf, ())
    slope = sum(month[zone] * theirs[zone] for zone in zones) / scale
    # A zone's pickup and drop-off shares each vary like a Poisson count's share of the month's trips.
    variance = sum(
        theirs[zone] ** 2 * (month_pickups.get(zone, 0.0) + month_dropoffs.get(zone, 0.0)) / trips for zone in zones
    )
    turned = sorted(zones, key=lambda zone: -abs(month[zone] - theirs[zone]))[:3]
    return Lean(
        slope,
        math.sqrt(variance) / scale,
        tuple(
            (zone, their_pickups.get(zone, 0.0), their_dropoffs.get(zone, 0.0), month_pickups.get(zone, 0.0),
             month_dropoffs.get(zone, 0.0))
            for zone in turned
        ),
    )  # fmt: skip


def _turned_text(found: Lean) -> str:
    return "; ".join(
        f"zone {zone}: {pick:.2%} of pickups and {drop:.2%} of drop-offs in the neighbours, {month_pick:.2%} and "
        f"{month_drop:.2%} here"
        for zone, pick, drop, month_pick, month_drop in found.turned
    )


def direction_like_recent_months(measured: Measured, facts: MonthFacts) -> AuditResult:
    calendar = calendar_of(measured)
    found = lean(calendar.by_zone, calendar.dropoffs_by_zone, facts.neighbours)
    if found is None or not found.judged:
        return AuditResult(
            passed=True,
            metadata={
                "compared_with": facts.compared_with(),
                "judged": "no published neighbour kept its drop-offs"
                if found is None
                else f"no: chance alone moves the lean by {found.error:.2f} (judged up to {LEAN_JUDGED_UP_TO_ERROR})",
            },
        )
    refused = found.slope < LEAN_REFUSED_BELOW
    passed = found.slope >= LEAN_WARNED_BELOW
    return AuditResult(
        passed=passed,
        severity=ERROR if refused else WARN,
        description=(
            None
            if passed
            else f"{facts.month.month}'s trips lean {found.slope:.2f}x the way {facts.compared_with()} lean from "
            f"pickup to drop-off (1 alike, -1 reversed; {_turned_text(found)})"
            + (
                ": the pickup and drop-off zones look swapped (PULocationID and DOLocationID). Ask for a clean file."
                if refused
                else ": part of the trips may have their zones swapped, or trips go elsewhere than they did."
            )
        ),
        metadata={
            "lean_against_neighbours": ratio(found.slope),
            "lean_by_chance": ratio(found.error),
            "held_back_below": LEAN_REFUSED_BELOW,
            "warned_below": LEAN_WARNED_BELOW,
            "largest_changes": _turned_text(found),
            "compared_with": facts.compared_with(),
        },
    )
