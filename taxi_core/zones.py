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
# The borough and city totals, forecast as series of their own under ids no TLC zone has (TLC's run 1-265). The city's
# weather is Manhattan's county, where Central Park's station is.
CITY_SERIES_ID = 10_000
TOTAL_BOROUGHS = (*sorted(BOROUGH_COUNTY_FIPS), "Unknown")
BOROUGH_SERIES_IDS = {borough: CITY_SERIES_ID + 1 + index for index, borough in enumerate(TOTAL_BOROUGHS)}
CITY_COUNTY_FIPS = BOROUGH_COUNTY_FIPS["Manhattan"]


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
