"""Legitimate months across the calendar publish: a leap-year February, both daylight-saving months, Thanksgiving
and Christmas, a blizzard day, the 2023 layout, each beside the month before it as its neighbour.

The sample writes each month afresh at the demo's scale (its demand has the weekdays, holidays and daylight saving of
its dates; at 5,000 trips a day every hour is judged, so the hour clocks skip must not count as missing); the
neighbour is counted here with pandas, not by the project's code.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from forecast_assets.audits import MonthFacts
from forecast_assets.lakehouse.zone_reference import ZoneReference
from taxi_core.months import MonthWindow
from taxi_core.zones import ZONE_LOOKUP
from tests.audit_verdicts import PICKUP, neighbour_from_trips, verdicts
from tests.sample_months import read_trips

pytestmark = pytest.mark.integration

DAYS = "raw_yellow_every_day_has_its_trips"
# month: (its neighbour, the audits that may warn)
MONTHS = {
    "2023-06": ("2023-05", set()),  # the 2023 layout: no cbd_congestion_fee
    "2024-02": ("2024-01", set()),  # a leap-year February
    "2024-03": ("2024-02", set()),  # clocks forward on 03-10
    "2024-11": ("2024-10", {DAYS}),  # clocks back on 11-03; Thanksgiving on 11-28
    "2024-12": ("2024-11", {DAYS}),  # Christmas and the quiet week after it
}


@pytest.fixture(scope="module")
def spark():
    from forecast_assets.definitions import resources_for
    from taxi_core.settings import load_settings

    return resources_for(load_settings())["spark"].session


@pytest.fixture(scope="module")
def calendar_source(tmp_path_factory):
    from taxi_demo.sample_source import SampleSource
    from taxi_demo.scale import DEMO_SCALE_TRIPS

    source = SampleSource(tmp_path_factory.mktemp("calendar") / "sample", trips_per_month=DEMO_SCALE_TRIPS)
    source.write_months(sorted({month for pair in MONTHS.items() for month in (pair[0], pair[1][0])}))
    return source


@pytest.fixture(scope="module")
def zones() -> ZoneReference:
    lookup = pd.read_csv(ZONE_LOOKUP, keep_default_na=False)
    return ZoneReference(dict(zip(lookup["LocationID"], lookup["Borough"], strict=True)), "TLC's lookup (pandas)")


def _facts(calendar_source, month: str, zones: ZoneReference) -> MonthFacts:
    neighbour = MONTHS[month][0]
    return MonthFacts(
        MonthWindow.from_partition_key(f"{month}-01"),
        neighbours=(neighbour_from_trips(neighbour, read_trips(calendar_source.trip_path(neighbour))),),
        zones=zones,
    )


@pytest.mark.parametrize("month", sorted(MONTHS))
def test_a_month_of_the_calendar_publishes_warning_at_most_on_its_holidays(spark, calendar_source, zones, month):
    trips = read_trips(calendar_source.trip_path(month))
    blocked, warned, results = verdicts(spark, trips, _facts(calendar_source, month, zones))
    assert blocked == set(), {name: results[name].description for name in blocked}
    assert warned <= MONTHS[month][1], {name: results[name].description for name in warned}


def test_a_blizzard_day_warns_and_publishes(spark, calendar_source, zones):
    """A travel ban keeps about a third of a day's trips (2016-01-23): quiet, not missing, and no other audit minds."""
    trips = read_trips(calendar_source.trip_path("2024-02"))
    on_the_day = (trips[PICKUP].dt.strftime("%Y-%m-%d") == "2024-02-13").to_numpy()
    kept = ~on_the_day | (np.random.default_rng(4).random(len(trips)) < 0.3)
    blocked, warned, results = verdicts(spark, trips[kept], _facts(calendar_source, "2024-02", zones))
    assert blocked == set()
    assert warned == {DAYS} and "2024-02-13" in results[DAYS].description
