"""The TLC taxi zones (the real lookup table shipped with the project)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ZONE_LOOKUP = Path(__file__).with_name("data") / "taxi_zone_lookup.csv"
# The weather county of each borough: Bronx, Kings (Brooklyn), New York (Manhattan), Queens, Richmond.
BOROUGH_COUNTY_FIPS = {
    "Bronx": "36005",
    "Brooklyn": "36047",
    "Manhattan": "36061",
    "Queens": "36081",
    "Staten Island": "36085",
    "EWR": "34013",  # Newark airport, Essex County NJ: outside the city's weather table
}


@dataclass(frozen=True)
class Zone:
    location_id: int
    borough: str
    name: str
    service_zone: str


@cache
def load_zones() -> tuple[Zone, ...]:
    with ZONE_LOOKUP.open(newline="") as handle:
        return tuple(
            Zone(int(row["LocationID"]), row["Borough"], row["Zone"], row["service_zone"])
            for row in csv.DictReader(handle)
        )
