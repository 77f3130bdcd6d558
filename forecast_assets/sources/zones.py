"""The TLC taxi zones (the real lookup table shipped with the project)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache

from forecast_assets.settings import zone_lookup_path


@dataclass(frozen=True)
class Zone:
    location_id: int
    borough: str
    name: str
    service_zone: str


@cache
def load_zones() -> tuple[Zone, ...]:
    with zone_lookup_path().open(newline="") as handle:
        return tuple(
            Zone(int(row["LocationID"]), row["Borough"], row["Zone"], row["service_zone"])
            for row in csv.DictReader(handle)
        )
