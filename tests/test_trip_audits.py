"""The trip audits on a real sample month at the demo's scale, damaged as a careful data engineer would damage it.

Each case is one known change to the month's rows (a week dropped, ids shifted, a borough removed, values
spoiled), so which audits must hold it back is known without the audits; the legitimate changes (a quiet day,
a few bad values) must publish with a warning at most. The neighbour month and the zone lookup are read here
with pyarrow and the csv module, not by the project's code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from forecast_assets.audits import MonthFacts
from forecast_assets.lakehouse.neighbours import NeighbourMonth
from forecast_assets.lakehouse.zone_reference import ZoneReference
from forecast_assets.trip_calendar import missing_local_hours
from forecast_assets.trip_zones import zone_mix_distance
from taxi_core.months import MonthWindow
from taxi_core.zones import ZONE_LOOKUP
from tests.audit_verdicts import neighbour_from_trips, verdicts
from tests.sample_months import TEST_MONTHS, read_trips

pytestmark = pytest.mark.integration

NEIGHBOUR, MONTH = TEST_MONTHS
PICKUP, DROPOFF = "tpep_pickup_datetime", "tpep_dropoff_datetime"


@pytest.fixture(scope="module")
def spark():
    from forecast_assets.definitions import resources_for
    from taxi_core.settings import load_settings

    return resources_for(load_settings())["spark"].session


@pytest.fixture(scope="module")
def demo_source(tmp_path_factory):
    """The two months at the demo's scale (150,000 trips a month), where the borough audit judges the pseudo-zones'
    share and the calendar audits see what a user's months show."""
    from taxi_demo.sample_source import SampleSource
    from taxi_demo.scale import DEMO_SCALE_TRIPS

    source = SampleSource(tmp_path_factory.mktemp("demo_scale") / "sample", trips_per_month=DEMO_SCALE_TRIPS)
    source.write_months(TEST_MONTHS)
    return source


def _trips(source, month: str) -> pd.DataFrame:
    return read_trips(source.trip_path(month))


def _facts(source, boroughs: dict[int, str]) -> MonthFacts:
    return MonthFacts(
        MonthWindow.from_partition_key(MONTH),
        neighbours=(neighbour_from_trips(NEIGHBOUR, _trips(source, NEIGHBOUR)),),
        zones=ZoneReference(boroughs, "TLC's lookup, read with pandas"),
    )


@pytest.fixture(scope="module")
def boroughs() -> dict[int, str]:
    lookup = pd.read_csv(ZONE_LOOKUP)
    return dict(zip(lookup["LocationID"], lookup["Borough"], strict=True))


@pytest.fixture(scope="module")
def month(sample_source) -> pd.DataFrame:
    return _trips(sample_source, MONTH)


@pytest.fixture(scope="module")
def demo_month(demo_source) -> pd.DataFrame:
    return _trips(demo_source, MONTH)


@pytest.fixture(scope="module")
def facts(sample_source, boroughs) -> MonthFacts:
    return _facts(sample_source, boroughs)


@pytest.fixture(scope="module")
def demo_facts(demo_source, boroughs) -> MonthFacts:
    return _facts(demo_source, boroughs)


def _day(trips: pd.DataFrame) -> pd.Series:
    return trips[PICKUP].dt.normalize()


def _without_days(first: int, last: int) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def change(trips: pd.DataFrame) -> pd.DataFrame:
        day = _day(trips).dt.day
        return trips[(day < first) | (day > last)]

    return change


def _zones_shifted(by: int) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def change(trips: pd.DataFrame) -> pd.DataFrame:
        return trips.assign(pulocationid=trips["pulocationid"] + by, dolocationid=trips["dolocationid"] + by)

    return change


def _without_borough(name: str, boroughs: dict[int, str]) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def change(trips: pd.DataFrame) -> pd.DataFrame:
        return trips[trips["pulocationid"].map(boroughs) != name]

    return change


def _some(trips: pd.DataFrame, share: float, seed: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).random(len(trips)) < share


def _negative_fares(share: float) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def change(trips: pd.DataFrame) -> pd.DataFrame:
        rows = _some(trips, share)
        return trips.assign(
            fare_amount=np.where(rows, -trips["fare_amount"].abs() - 1, trips["fare_amount"]),
            total_amount=np.where(rows, -trips["total_amount"].abs() - 1, trips["total_amount"]),
        )

    return change


def _dropoffs_moved(share: float, by: pd.Timedelta) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def change(trips: pd.DataFrame) -> pd.DataFrame:
        rows = _some(trips, share)
        return trips.assign(**{DROPOFF: trips[DROPOFF].where(~rows, trips[PICKUP] + by)})

    return change


def _distances(share: float, miles: float) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def change(trips: pd.DataFrame) -> pd.DataFrame:
        return trips.assign(trip_distance=np.where(_some(trips, share), miles, trips["trip_distance"]))

    return change


def _one_day_cut_to(day: int, share: float) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def change(trips: pd.DataFrame) -> pd.DataFrame:
        on_day = (_day(trips).dt.day == day).to_numpy()
        return trips[~on_day | _some(trips, share)]

    return change


def _ten_times_over(trips: pd.DataFrame) -> pd.DataFrame:
    """Ten copies of the month, each a second later than the last: a busier month, not a duplicated file."""
    copies = [trips.assign(**{PICKUP: trips[PICKUP] + pd.Timedelta(seconds=s)}) for s in range(10)]
    return pd.concat(copies, ignore_index=True)


def _days_copied(first: int, last: int, onto: int) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """Days ``first``..``last`` copied over the days from ``onto`` (whose own trips are dropped): the copy's trips
    moved by whole days, so no record repeats and every weekday looks normal."""

    def change(trips: pd.DataFrame) -> pd.DataFrame:
        day = _day(trips).dt.day
        span = last - first
        copy = trips[(day >= first) & (day <= last)]
        moved = pd.Timedelta(days=onto - first)
        copy = copy.assign(**{PICKUP: copy[PICKUP] + moved, DROPOFF: copy[DROPOFF] + moved})
        kept = trips[(day < onto) | (day > onto + span)]
        return pd.concat([kept, copy], ignore_index=True)

    return change


def _re_dated(days: int, layout_year: int | None = None) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """Each day's trips moved ``days`` later inside the month, the last days wrapping to its first: another year's
    month under this month's dates, whose weekdays fall ``days`` later; with that year's layout if given."""

    def change(trips: pd.DataFrame) -> pd.DataFrame:
        start = pd.Timestamp(f"{MONTH}-01")
        length = (start + pd.offsets.MonthBegin(1) - start).days
        offset = (trips[PICKUP] - start).dt.days
        moved = pd.to_timedelta(((offset + days) % length - offset).where(offset.between(0, length - 1), 0), "D")
        changed = trips.assign(**{PICKUP: trips[PICKUP] + moved, DROPOFF: trips[DROPOFF] + moved})
        if layout_year is not None and layout_year < 2025:
            changed["cbd_congestion_fee"] = np.nan
        return changed

    return change


def _clocks_moved(by: pd.Timedelta) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def change(trips: pd.DataFrame) -> pd.DataFrame:
        return trips.assign(**{PICKUP: trips[PICKUP] + by, DROPOFF: trips[DROPOFF] + by})

    return change


def _swapped(trips: pd.DataFrame) -> pd.DataFrame:
    return trips.assign(pulocationid=trips["dolocationid"], dolocationid=trips["pulocationid"])


def _in_pseudo_zones(share: float) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """``share`` of the trips start in 264 or 265 and as many others end there, as real files carry them."""

    def change(trips: pd.DataFrame) -> pd.DataFrame:
        starts, ends = _some(trips, share, seed=7), _some(trips, share, seed=8)
        zone = np.where(np.random.default_rng(9).random(len(trips)) < 0.8, 264, 265)
        return trips.assign(
            pulocationid=np.where(starts, zone, trips["pulocationid"]),
            dolocationid=np.where(ends, zone, trips["dolocationid"]),
        )

    return change


def _grown(share: float) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """``share`` more trips, each a copy of one a minute later: growth, spread over every day and zone."""

    def change(trips: pd.DataFrame) -> pd.DataFrame:
        extra = trips[_some(trips, share, seed=11)]
        later = extra.assign(**{PICKUP: extra[PICKUP] + pd.Timedelta(minutes=1)})
        return pd.concat([trips, later], ignore_index=True)

    return change


DAYS = "raw_yellow_every_day_has_its_trips"
WEEK, REPEATS = "raw_yellow_week_like_recent_months", "raw_yellow_no_repeated_days"
DIRECTION, PSEUDO = "raw_yellow_direction_like_recent_months", "raw_yellow_pseudo_zones_at_their_rate"
LAYOUT = "raw_yellow_layout_of_its_year"
HELD_BACK = {
    # case: (change, audits that must hold it back)
    "missing_last_week": (_without_days(25, 31), {DAYS}),
    "missing_first_week": (_without_days(1, 7), {DAYS}),
    "missing_one_day": (_without_days(12, 12), {DAYS}),
    "zone_ids_plus_one": (
        _zones_shifted(+1),
        {"raw_yellow_zone_ids_known", "raw_yellow_zone_mix_like_recent_months"},
    ),
    "zone_ids_minus_one": (
        _zones_shifted(-1),
        {"raw_yellow_zone_ids_known", "raw_yellow_zone_mix_like_recent_months"},
    ),
    "every_fare_negative": (_negative_fares(1.0), {"raw_yellow_no_negative_fares"}),
    "a_fifth_of_trips_backwards": (
        _dropoffs_moved(0.2, pd.Timedelta(minutes=-10)),
        {"raw_yellow_pickups_before_dropoffs"},
    ),
    "a_tenth_of_distances_absurd": (_distances(0.1, 5000.0), {"raw_yellow_distances_possible"}),
    "a_tenth_of_distances_negative": (_distances(0.1, -3.0), {"raw_yellow_distances_possible"}),
    "a_tenth_of_trips_three_days_long": (
        _dropoffs_moved(0.1, pd.Timedelta(days=3)),
        {"raw_yellow_durations_possible"},
    ),
    "ten_times_the_trips": (_ten_times_over, {"raw_yellow_rows_like_recent_months"}),
}
# The calendar, direction and pseudo-zone damage, at the demo's scale.
HELD_BACK_AT_DEMO_SCALE = {
    "a_week_copied_over_the_next": (_days_copied(1, 7, onto=8), {REPEATS}),
    "one_day_copied_over_another": (_days_copied(14, 14, onto=21), {REPEATS}),
    "re_dated_two_days": (_re_dated(2), {WEEK}),
    "re_dated_one_day": (_re_dated(1), {WEEK}),
    "re_dated_from_2024_with_its_layout": (_re_dated(5, layout_year=2024), {WEEK}),
    "clocks_five_hours_late": (_clocks_moved(pd.Timedelta(hours=5)), {WEEK}),
    "pickup_and_dropoff_swapped": (_swapped, {DIRECTION}),
    "most_trips_without_a_place": (_in_pseudo_zones(0.6), {PSEUDO}),
}


def _held_back_by_what_names_it(spark, month, facts, change, expected) -> None:
    blocked, _, results = verdicts(spark, change(month), facts)
    assert expected <= blocked
    for name in expected:
        assert results[name].description, f"{name} holds the month back without saying why"


@pytest.mark.parametrize("case", sorted(HELD_BACK))
def test_a_damaged_month_is_held_back_by_the_audit_that_names_the_damage(spark, month, facts, case):
    _held_back_by_what_names_it(spark, month, facts, *HELD_BACK[case])


@pytest.mark.parametrize("case", sorted(HELD_BACK_AT_DEMO_SCALE))
def test_a_month_copied_re_dated_or_swapped_is_held_back_at_the_demo_s_scale(spark, demo_month, demo_facts, case):
    _held_back_by_what_names_it(spark, demo_month, demo_facts, *HELD_BACK_AT_DEMO_SCALE[case])


@pytest.mark.parametrize("borough", ["Bronx", "Brooklyn", "Queens"])
def test_a_borough_gone_from_the_month_holds_it_back(spark, month, facts, boroughs, borough):
    blocked, _, results = verdicts(spark, _without_borough(borough, boroughs)(month), facts)
    assert "raw_yellow_boroughs_like_recent_months" in blocked
    assert f"{borough} has 0 pickups" in results["raw_yellow_boroughs_like_recent_months"].description


def test_the_missing_week_is_named_day_by_day(spark, month, facts):
    _, _, results = verdicts(spark, _without_days(25, 31)(month), facts)
    assert "7 of 31 days" in results[DAYS].description
    assert f"{MONTH}-25..01-31 (0 trips a day)" in results[DAYS].description


PUBLISHED = {
    # case: (change, audits that may warn)
    "as_sampled": (lambda trips: trips, set()),
    "a_quiet_day": (_one_day_cut_to(15, 0.4), {DAYS}),
    "some_negative_fares": (_negative_fares(0.05), {"raw_yellow_no_negative_fares"}),
    "some_trips_backwards": (_dropoffs_moved(0.005, pd.Timedelta(minutes=-10)), {"raw_yellow_pickups_before_dropoffs"}),
    "a_few_absurd_distances": (_distances(0.0002, 5000.0), set()),
}
# Legitimate shapes the calendar, direction and pseudo-zone audits must let through, at the demo's scale (where
# the borough audit judged 1.5% of pickups in 264/265 a lost borough before they were told apart).
PUBLISHED_AT_DEMO_SCALE = {
    "as_sampled": (lambda trips: trips, set()),
    "pseudo_zones_at_real_rates": (_in_pseudo_zones(0.015), set()),
    "a_quarter_more_trips": (_grown(0.25), set()),
}


@pytest.mark.parametrize("case", sorted(PUBLISHED))
def test_a_legitimate_month_is_published_warning_at_most_where_it_is_unusual(spark, month, facts, case):
    change, may_warn = PUBLISHED[case]
    blocked, warned, _ = verdicts(spark, change(month), facts)
    assert blocked == set()
    assert warned == may_warn


@pytest.mark.parametrize("case", sorted(PUBLISHED_AT_DEMO_SCALE))
def test_a_legitimate_month_at_the_demo_s_scale_is_published(spark, demo_month, demo_facts, case):
    change, may_warn = PUBLISHED_AT_DEMO_SCALE[case]
    blocked, warned, results = verdicts(spark, change(demo_month), demo_facts)
    assert blocked == set(), {name: results[name].description for name in blocked}
    assert warned == may_warn


def test_a_re_dated_month_is_named_with_its_shift_and_its_layout_s_years(spark, demo_month, demo_facts):
    blocked, warned, results = verdicts(spark, _re_dated(5, layout_year=2024)(demo_month), demo_facts)
    assert "with every pickup 2 days later" in results[WEEK].description  # five days later is two earlier
    assert LAYOUT in warned
    assert "no trip has cbd_congestion_fee, which TLC's 2025 files carry" in results[LAYOUT].description
    assert "the layout of 2021-2024 files" in results[LAYOUT].description


def test_a_copied_week_is_named_day_by_day(spark, demo_month, demo_facts):
    _, _, results = verdicts(spark, _days_copied(1, 7, onto=8)(demo_month), demo_facts)
    assert f"{MONTH}-08..01-14 repeat {MONTH}-01..01-07" in results[REPEATS].description


def test_pseudo_zones_are_never_judged_as_a_borough(spark, demo_month, demo_facts):
    blocked, warned, results = verdicts(spark, _in_pseudo_zones(0.04)(demo_month), demo_facts)
    assert "Unknown" not in results["raw_yellow_boroughs_like_recent_months"].metadata["boroughs"]
    assert blocked == set() and warned == {PSEUDO}
    assert "are in TLC's zones for unknown or out-of-city places (264 (Unknown), 265 (Unknown))" in (
        results[PSEUDO].description
    )


def test_the_first_month_published_is_judged_on_its_own_days(spark, month, facts):
    alone = replace(facts, neighbours=())
    assert verdicts(spark, month, alone)[0] == set()
    blocked, _, results = verdicts(spark, _without_days(22, 28)(month), alone)
    assert DAYS in blocked and f"the median day of {MONTH}" in results[DAYS].description


def test_the_hour_clocks_skip_in_spring_is_not_a_missing_hour():
    march = MonthWindow.from_partition_key("2025-03-01")
    assert [f"{hour:%Y-%m-%d %H}" for hour in missing_local_hours(march.start, march.end)] == ["2025-03-09 02"]
    november = MonthWindow.from_partition_key("2024-11-01")
    assert missing_local_hours(november.start, november.end) == set()


def test_the_zone_mix_distance_is_the_share_of_trips_that_would_have_to_move():
    assert zone_mix_distance({1: 50, 2: 50}, {1: 50, 2: 50}) == 0
    assert zone_mix_distance({1: 100}, {2: 7}) == 1
    assert zone_mix_distance({1: 75, 2: 25}, {1: 50, 2: 50}) == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("typical", "holiday_share", "warns"),
    [
        (34, 0.47, False),  # a few dozen trips a day: a holiday at 0.47 of a typical day is within chance of 0.5
        (34, 0.15, True),  # far below the share, even at that size (and under the refused share: it fails)
        (2_000, 0.44, True),  # thousands a day: 0.44 is a quiet day, not chance
        (2_000, 0.48, False),  # within chance of the share at that size too
    ],
)
def test_a_quiet_day_warns_only_when_it_is_below_the_share_by_more_than_chance(typical, holiday_share, warns):
    from datetime import timedelta

    from forecast_assets.audits import Measured
    from forecast_assets.trip_calendar import CALENDAR, TripCalendar, every_day_has_its_trips

    window = MonthWindow.from_partition_key("2024-11-01")
    days = [(window.start + timedelta(days=offset)).date() for offset in range(window.days)]
    by_day = {day: typical for day in days} | {days[27]: round(typical * holiday_share)}
    measured = Measured({"rows": sum(by_day.values()), CALENDAR: TripCalendar({}, by_day, {})})
    result = every_day_has_its_trips(measured, MonthFacts(window))
    assert result.passed is not warns, result.description


def _neighbours(trips_by_zone: dict[int, int]) -> tuple[NeighbourMonth, ...]:
    return (NeighbourMonth("2024-12", sum(trips_by_zone.values()), trips_by_zone),)


@pytest.mark.parametrize(
    ("scale", "shown_share", "zones_pass", "borough_passes"),
    [
        (1, 0.6, True, True),  # a trip a month in each quiet zone: chance leaves a third of them without one
        (1, 0.2, False, False),  # even at that size, most zones gone is damage
        (100, 0.6, False, True),  # a hundred trips a zone: every usual zone shows, so 40% gone is damage...
        (100, 0.4, False, False),  # ...and under half of the borough's zones, the borough's too
        (100, 1.0, True, True),
    ],
)
def test_the_zone_audits_expect_the_zones_chance_would_show(scale, shown_share, zones_pass, borough_passes):
    from forecast_assets.audits import Measured
    from forecast_assets.trip_calendar import CALENDAR, TripCalendar
    from forecast_assets.trip_zones import ZONES_WITH_PICKUPS, boroughs_like_recent_months, zones_like_recent_months

    zones = list(range(1, 21))  # one borough's twenty zones: a busy one and nineteen quiet ones
    neighbour = {1: 60 * scale} | {zone: scale for zone in zones[1:]}
    shown = zones[: round(shown_share * len(zones))]
    month = {zone: neighbour[zone] for zone in shown}
    facts = MonthFacts(
        MonthWindow.from_partition_key("2025-01-01"),
        neighbours=_neighbours(neighbour),
        zones=ZoneReference({zone: "Queens" for zone in zones}, "a test's lookup"),
    )
    measured = Measured({"rows": sum(month.values()), ZONES_WITH_PICKUPS: shown, CALENDAR: TripCalendar(month, {}, {})})
    assert zones_like_recent_months(measured, facts).passed is zones_pass
    assert boroughs_like_recent_months(measured, facts).passed is borough_passes


@pytest.mark.parametrize(("shown", "passes"), [(2, True), (0, False)])
def test_a_borough_s_few_zones_showing_fail_only_beyond_chance(shown, passes):
    """Green taxis on Staten Island: eight trips a month over eight zones. Two zones showing where five are expected
    happens by chance about one month in thirty; none showing, about one in three thousand: damage."""
    from forecast_assets.audits import Measured
    from forecast_assets.trip_calendar import CALENDAR, TripCalendar
    from forecast_assets.trip_zones import ZONES_WITH_PICKUPS, boroughs_like_recent_months

    zones = list(range(1, 9))
    month = {zone: 4 for zone in zones[:shown]}
    facts = MonthFacts(
        MonthWindow.from_partition_key("2025-02-01"),
        neighbours=_neighbours(dict.fromkeys(zones, 1)),
        zones=ZoneReference(dict.fromkeys(zones, "Staten Island"), "a test's lookup"),
    )
    measured = Measured({"rows": 8, ZONES_WITH_PICKUPS: list(month), CALENDAR: TripCalendar(month, {}, {})})
    result = boroughs_like_recent_months(measured, facts)
    assert result.passed is passes, result.description


@pytest.mark.parametrize("trips_a_day", [60, 5_000, 100_000])
def test_independent_days_never_repeat_and_a_copy_always_does_at_any_size(trips_a_day):
    """Thirty days drawn from one (hour, zone) profile, as alike as real days ever are, at a test's, the demo's and
    TLC's size: none repeats; a copied day does, and a copy with a few trips changed too."""
    from datetime import date, timedelta

    from forecast_assets.trip_weeks import repeated_days

    rng = np.random.default_rng(12)
    profile = rng.lognormal(0, 1.5, 24 * 260)
    profile /= profile.sum()
    counts = rng.poisson(profile * trips_a_day, size=(30, profile.size))
    days = [date(2025, 1, 1) + timedelta(days=offset) for offset in range(30)]
    assert repeated_days(days, counts) == []
    copied = counts.copy()
    copied[20] = counts[3]
    copied[21, : profile.size // 100] = counts[4, : profile.size // 100]  # a fraction of a day is no repeat
    touched = counts[5].copy()
    touched[np.argmax(touched)] += 1  # one trip more
    copied[22] = touched
    found = [(first.day, later.day) for first, later, _ in repeated_days(days, copied)]
    assert found == [(4, 21), (6, 23)]


def test_a_small_month_s_week_is_not_judged():
    """Under 5,000 pickups the best of thirty moves beats the dates by chance: the audit says so and passes."""
    from datetime import timedelta

    from forecast_assets.audits import Measured
    from forecast_assets.trip_calendar import CALENDAR, TripCalendar
    from forecast_assets.trip_weeks import week_like_recent_months

    window = MonthWindow.from_partition_key("2025-01-01")
    hours = [window.start + timedelta(hours=offset) for offset in range(window.hours)]
    rng = np.random.default_rng(3)
    by_hour = {hour: int(n) for hour, n in zip(hours, rng.poisson(3, len(hours)), strict=True)}
    neighbour = NeighbourMonth("2024-12", 30_000, {1: 30_000}, tuple([180] * 168))
    measured = Measured({"rows": sum(by_hour.values()), CALENDAR: TripCalendar({}, {}, by_hour)})
    result = week_like_recent_months(measured, MonthFacts(window, neighbours=(neighbour,)))
    assert result.passed and result.metadata["judged"].startswith("no: ")
