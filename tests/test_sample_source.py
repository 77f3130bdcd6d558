"""The sample source writes the public formats, deterministically, with a known demand process."""

import hashlib

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from forecast_assets.source_specs.yellow_trips import YELLOW
from forecast_assets.sources.noaa_format import ELEMENTS, MISSING_VALUE, NYC_COUNTY_FIPS, weather_file_path
from taxi_demo import city_facts
from taxi_demo.demand_model import daily_weather, weather_multiplier
from taxi_demo.sample_source import WEATHER_DIR, SampleSource
from tests.sample_months import TEST_TRIPS_PER_MONTH


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_same_seed_same_files(sample_source, tmp_path):
    again = SampleSource(tmp_path, trips_per_month=TEST_TRIPS_PER_MONTH)
    again.write_month("2025-01")
    assert _digest(again.trip_path("2025-01")) == _digest(sample_source.trip_path("2025-01"))
    assert _digest(again.truth_path("2025-01")) == _digest(sample_source.truth_path("2025-01"))


def test_trip_files_have_the_published_schema_of_their_year(sample_source):
    assert pq.read_schema(sample_source.trip_path("2024-12")) == YELLOW.published_schema(2024)
    assert pq.read_schema(sample_source.trip_path("2025-01")) == YELLOW.published_schema(2025)


def test_trip_counts_follow_the_recorded_true_rates(sample_source):
    trips = pq.read_table(sample_source.trip_path("2025-01"), columns=["tpep_pickup_datetime", "PULocationID"])
    frame = trips.to_pandas()
    in_month = frame[(frame.tpep_pickup_datetime >= "2025-01-01") & (frame.tpep_pickup_datetime < "2025-02-01")]
    truth = pd.read_parquet(sample_source.truth_path("2025-01"))
    expected = truth.true_rate.sum()
    # Poisson: the total lies within a few standard deviations of the summed rate.
    assert abs(len(in_month) - expected) < 5 * expected**0.5
    assert len(frame) - len(in_month) < 0.001 * len(frame)  # the few out-of-month clock errors
    busiest_true = truth.groupby("pulocationid").true_rate.sum().nlargest(5).index
    busiest_seen = in_month.groupby("PULocationID").size().nlargest(10).index
    assert set(busiest_true) <= set(busiest_seen)


def test_demand_has_daily_seasonality_and_a_weather_effect(sample_source):
    truth = pd.read_parquet(sample_source.truth_path("2025-01"))
    by_hour = truth.groupby(truth.pickup_hour.dt.hour).true_rate.sum()
    assert by_hour[18] > 3 * by_hour[4]
    manhattan = truth[truth.pulocationid == 161]
    daily = manhattan.groupby(manhattan.pickup_hour.dt.date).true_rate.sum()
    weekday_daily = daily[[pd.Timestamp(d).day_of_week == 2 for d in daily.index]]
    assert weekday_daily.max() > weekday_daily.min() * 1.05  # same weekday, different weather


def test_weather_files_have_the_noaa_layout(sample_source):
    for element in ELEMENTS:
        path = sample_source.root / WEATHER_DIR / weather_file_path(element, "2024-12")
        rows = [line.split(",") for line in path.read_text().splitlines()]
        assert all(len(row) == 37 for row in rows)
        assert {row[1] for row in rows} >= set(NYC_COUNTY_FIPS)
        assert "01001" in {row[1] for row in rows}  # a leading zero kept as NOAA writes it
        assert all(float(row[-1]) != MISSING_VALUE for row in rows)  # December has 31 days


def test_another_scale_writes_the_files_again(tmp_path):
    small = SampleSource(tmp_path, trips_per_month=2_000)
    small.write_months(["2025-01"])
    first = pq.read_metadata(small.trip_path("2025-01")).num_rows
    larger = SampleSource(tmp_path, trips_per_month=8_000)
    larger.write_months(["2025-01"])
    assert pq.read_metadata(larger.trip_path("2025-01")).num_rows > 3 * first
    small.write_months(["2025-01"])
    assert pq.read_metadata(small.trip_path("2025-01")).num_rows == first


# --- the public facts the demand process reproduces (taxi_demo/city_facts.py), checked on the written files ---

FACT_SCALE = 300_000  # enough trips that a day's or an hour's count is a few percent from its rate
FACT_MONTHS = ["2024-03", "2024-06", "2024-07", "2024-10", "2024-11"]


@pytest.fixture(scope="module")
def city(tmp_path_factory):
    source = SampleSource(tmp_path_factory.mktemp("city"), trips_per_month=FACT_SCALE)
    source.write_months(FACT_MONTHS)
    return source


def _pickups(source, month):
    """The month's pickups inside the month, as the trip file holds them (wall-clock timestamps)."""
    frame = pq.read_table(source.trip_path(month), columns=["tpep_pickup_datetime", "PULocationID"]).to_pandas()
    start = pd.Timestamp(month + "-01")
    inside = frame[
        (frame.tpep_pickup_datetime >= start) & (frame.tpep_pickup_datetime < start + pd.offsets.MonthBegin())
    ]
    return inside.assign(day=inside.tpep_pickup_datetime.dt.floor("D"), hour=inside.tpep_pickup_datetime.dt.floor("h"))


def _city_only(pickups):
    return pickups[~pickups.PULocationID.isin(city_facts.AIRPORT_ZONES)]


def test_monthly_totals_follow_tlc_published_months(city):
    published = city_facts.PUBLISHED_MONTHLY_TRIPS
    counts = {month: len(_pickups(city, month)) for month in FACT_MONTHS}
    # The summer dip and the October high, as TLC's files have them (3.08M in July, 3.83M in October 2024).
    assert counts["2024-07"] < counts["2024-10"] and counts["2024-07"] < counts["2024-03"]
    for month in FACT_MONTHS:
        expected = FACT_SCALE * published[month] / (sum(v for k, v in published.items() if k < "2025") / 12)
        assert counts[month] == pytest.approx(expected, rel=0.05)
        truth = pd.read_parquet(city.truth_path(month))
        # The calendar's expectation: the level moves day by day between months, so a month keeps within 2.5%.
        assert truth.expected_rate.sum() == pytest.approx(expected, rel=0.025)


def test_demand_does_not_jump_at_the_first_of_a_month(city):
    """July's level is below June's (TLC's summer dip), reached day by day, not at midnight on July 1."""
    truth = pd.concat([pd.read_parquet(city.truth_path(month)) for month in ("2024-06", "2024-07")])
    mondays_9am = truth[(truth.pulocationid == 161) & (truth.pickup_hour.dt.hour == 9)].set_index("pickup_hour")
    rate = mondays_9am.expected_rate
    across, after = (
        rate["2024-07-01 09:00"] / rate["2024-06-24 09:00"],
        rate["2024-07-08 09:00"] / rate["2024-07-01 09:00"],
    )
    assert across == pytest.approx(after, abs=0.02)


def test_thanksgiving_dips_in_the_city_and_airports_rise_the_day_before(city):
    pickups = _pickups(city, "2024-11")
    in_city = _city_only(pickups).groupby("day").size()
    thursdays = [in_city[pd.Timestamp(f"2024-11-{day}")] for day in (7, 14, 21)]
    assert in_city[pd.Timestamp("2024-11-28")] < 0.75 * min(thursdays)
    assert in_city[pd.Timestamp("2024-11-29")] < 0.9 * min(in_city[pd.Timestamp(f"2024-11-{d}")] for d in (15, 22))
    airports = pickups[pickups.PULocationID.isin(city_facts.AIRPORT_ZONES)].groupby("day").size()
    assert airports[pd.Timestamp("2024-11-27")] > 1.15 * airports[pd.Timestamp("2024-11-20")]


def test_christmas_and_the_quiet_week_between_christmas_and_new_year(sample_source):
    in_city = _city_only(_pickups(sample_source, "2024-12")).groupby("day").size()
    typical = in_city[pd.Timestamp("2024-12-02") : pd.Timestamp("2024-12-20")].mean()
    wednesdays = [in_city[pd.Timestamp(f"2024-12-{day:02d}")] for day in (4, 11, 18)]
    # Christmas 2024 was a wet, freezing Wednesday in this sample (the weather lifts it): against the Wednesdays.
    assert in_city[pd.Timestamp("2024-12-25")] < 0.8 * np.mean(wednesdays)
    truth = pd.read_parquet(sample_source.truth_path("2024-12"))
    truth = truth[~truth.pulocationid.isin(city_facts.AIRPORT_ZONES)]
    expected = truth.groupby(truth.pickup_hour.dt.day).expected_rate.sum()
    assert expected[25] < 0.65 * np.mean([expected[day] for day in (4, 11, 18)])
    assert in_city[pd.Timestamp("2024-12-26") : pd.Timestamp("2024-12-30")].mean() < 0.95 * typical


def test_new_years_night_is_busy_after_midnight(sample_source):
    hours = _city_only(_pickups(sample_source, "2025-01")).groupby("hour").size()
    after_midnight = hours[pd.Timestamp("2025-01-01 00:00") : pd.Timestamp("2025-01-01 03:00")].sum()
    other_nights = [hours[pd.Timestamp(f"2025-01-{d:02d} 00:00") : pd.Timestamp(f"2025-01-{d:02d} 03:00")].sum()
                    for d in (8, 15, 22, 29)]  # fmt: skip
    assert after_midnight > 2 * max(other_nights)


def test_trip_clocks_are_new_york_wall_clocks_across_daylight_saving(city):
    spring = _pickups(city, "2024-03")
    assert not ((spring.day == pd.Timestamp("2024-03-10")) & (spring.tpep_pickup_datetime.dt.hour == 2)).any()
    fall = _pickups(city, "2024-11").groupby("hour").size()
    other_sundays = [fall[pd.Timestamp(f"2024-11-{d} 01:00")] for d in (10, 17, 24)]
    assert fall[pd.Timestamp("2024-11-03 01:00")] > 1.6 * max(other_sundays)  # two real hours in one wall-clock hour
    truth = pd.read_parquet(city.truth_path("2024-03"))
    assert (truth[truth.pickup_hour == pd.Timestamp("2024-03-10 02:00")].true_rate == 0).all()


def test_zone_types_have_their_weekly_shapes(city):
    pickups = _pickups(city, "2024-10")
    pickups = pickups.assign(weekend=pickups.day.dt.day_of_week >= 5, clock=pickups.tpep_pickup_datetime.dt.hour)
    days = pickups.groupby("weekend").day.nunique()

    def per_day(zones):
        chosen = pickups[pickups.PULocationID.isin(zones)]
        return chosen.groupby("weekend").size() / days

    office, airports = per_day(city_facts.OFFICE_ZONES), per_day(city_facts.AIRPORT_ZONES)
    assert office[False] > 1.4 * office[True]  # midtown empties at weekends
    assert 0.85 < airports[False] / airports[True] < 1.15  # flights fly every day
    weekday_office = pickups[~pickups.weekend & pickups.PULocationID.isin(city_facts.OFFICE_ZONES)]
    assert weekday_office.groupby("clock").size().idxmax() in (17, 18, 19)  # the weekday evening peak
    airport_hours = pickups[pickups.PULocationID.isin(city_facts.AIRPORT_ZONES)].groupby("clock").size()
    assert airport_hours[14:22].mean() > 10 * airport_hours[2:5].mean()  # the arrival banks, not the red-eyes
    night = pickups[pickups.PULocationID.isin(city_facts.NIGHTLIFE_ZONES) & (pickups.clock == 1)]
    # Per night: a month holds four or five of each weekday.
    by_weekday = night.groupby(night.day.dt.day_of_week).size() / night.groupby(night.day.dt.day_of_week).day.nunique()
    assert min(by_weekday[5], by_weekday[6]) > 2 * max(by_weekday[1], by_weekday[2])  # Friday and Saturday nights


def test_congestion_pricing_from_january_5_2025(sample_source):
    trips = pq.read_table(
        sample_source.trip_path("2025-01"), columns=["tpep_pickup_datetime", "PULocationID", "cbd_congestion_fee"]
    ).to_pandas()
    priced = trips.tpep_pickup_datetime >= pd.Timestamp("2025-01-05")
    in_zone = trips.PULocationID.isin(city_facts.CBD_ZONES)
    assert (trips[~priced].cbd_congestion_fee == 0).all()
    assert (trips[priced & in_zone].cbd_congestion_fee == 0.75).all()
    # Taxi demand in the zone rose against the rest of the city (TLC: +19% in the zone, +17% citywide).
    truth = pd.read_parquet(sample_source.truth_path("2025-01")).set_index(["pickup_hour", "pulocationid"])
    rate = truth.expected_rate
    before, after = pd.Timestamp("2025-01-04 15:00"), pd.Timestamp("2025-01-11 15:00")  # two Saturdays
    in_cbd, outside = 161, 236  # Midtown Center, Upper East Side North: both Manhattan, same rain response
    change = (rate[after, in_cbd] / rate[before, in_cbd]) / (rate[after, outside] / rate[before, outside])
    assert change == pytest.approx(1 + city_facts.CBD_DEMAND_CHANGE, rel=1e-6)


def test_weather_follows_central_park_normals_with_zone_specific_effects():
    months = [f"2024-{m:02d}" for m in range(1, 13)]
    weather = pd.concat(daily_weather(month, ["36061"], 2024) for month in months)
    by_month = weather.groupby(pd.to_datetime(weather.date).dt.month)
    assert (abs(by_month.tavg.mean().to_numpy() - city_facts.NORMAL_TAVG_C) < 4.5).all()
    wet_days = (weather.prcp > 0.25).sum()
    assert 70 < wet_days < 180  # Central Park: about 125 days a year with 0.01 in or more
    rain = weather_multiplier(np.array([10.0]), np.array([15.0]), np.array([1.0, 0.3, 0.0]))
    assert rain[0] > rain[1] > rain[2] == 1.0  # strong in Manhattan, weak in the outer boroughs, none at airports
    light_snow, heavy_snow = weather_multiplier(np.array([3.0, 35.0]), np.array([-3.0, -3.0]), np.array([0.0, 0.0]))
    assert heavy_snow < 0.8 and light_snow == 1.0
    assert weather_multiplier(np.array([3.0]), np.array([-3.0]), np.array([1.0]))[0] > 1.05  # light snow lifts
    # A month's weather is the same however many months came before it (memory from a fixed origin).
    assert daily_weather("2024-06", ["36061"], 2024).equals(daily_weather("2024-06", ["36061"], 2024))


def test_events_shocks_and_noise_are_in_the_true_rate_not_the_expected_one(city):
    truth = pd.read_parquet(city.truth_path("2024-07"))
    ratio = truth.true_rate / truth.expected_rate
    late = truth.pickup_hour.dt.hour == 22
    stadium = ratio[late & (truth.pulocationid == 247)]  # Yankee Stadium: home games on some nights, not others
    assert stadium.max() > 1.5 * stadium.min()
    event_nights = (stadium > 1.2).mean()
    assert 0.2 < event_nights < 0.9 and (stadium < 0.7).any()  # event nights and quiet nights
    # Every zone's day is off its expectation: a shared day shock and zone-day noise (overdispersion).
    midtown = ratio[(truth.pulocationid == 161) & (truth.pickup_hour.dt.hour == 12)]
    assert 0.05 < midtown.std() < 0.4
    assert abs(ratio[truth.expected_rate > 0].mean() - 1) < 0.1


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_layout_registered_later_gets_its_file_in_existing_months_and_changes_no_other(tmp_path, monkeypatch):
    """Each layout declares its own sample and draws from its own stream: a month written before green was
    registered gains green's file, and yellow's file is the one a fresh write makes."""
    from forecast_assets.source_specs.green_trips import GREEN
    from forecast_assets.source_specs.registry import registered_sources
    from taxi_demo import sample_source

    everything = registered_sources()
    early = SampleSource(tmp_path / "early", trips_per_month=TEST_TRIPS_PER_MONTH)
    without_green = tuple(source for source in everything if source.name != "green_trip")
    monkeypatch.setattr(sample_source, "sampled_sources", lambda: without_green)
    early.write_months(["2025-01"])
    yellow_before = _sha256(early.trip_path("2025-01"))
    assert not early.trip_path("2025-01", GREEN).exists()

    monkeypatch.setattr(sample_source, "sampled_sources", lambda: everything)
    early.write_months(["2025-01"])
    assert _sha256(early.trip_path("2025-01")) == yellow_before
    fresh = SampleSource(tmp_path / "fresh", trips_per_month=TEST_TRIPS_PER_MONTH)
    fresh.write_months(["2025-01"])
    assert _sha256(fresh.trip_path("2025-01")) == yellow_before
    assert pq.read_table(early.trip_path("2025-01", GREEN)).equals(pq.read_table(fresh.trip_path("2025-01", GREEN)))


def _daylight_source():
    """A second kind of source, declared here alone: a CSV a month of each day's hours of daylight, with its own
    sample drawn from a stream of its own."""
    from dataclasses import replace

    from forecast_assets.source_specs.noaa_weather import SOURCE as WEATHER
    from forecast_assets.source_specs.sample import SourceSample
    from forecast_assets.source_specs.spec import SourceFile

    def sample(city, month):
        days = pd.date_range(f"{month}-01", periods=pd.Period(month).days_in_month, freq="D")
        hours = 12 + 3 * np.sin((days.dayofyear - 80) / 365 * 2 * np.pi) + city.random(month, 77).normal(0, 0.01)
        lines = (f"{day:%Y-%m-%d},{daylight:.3f}" for day, daylight in zip(days, hours, strict=True))
        return {f"daylight_{month}.csv": "\n".join(lines).encode()}

    return replace(
        WEATHER,
        name="daylight",
        files=lambda month: (SourceFile("daylight", f"daylight_{month}.csv"),),
        sample=SourceSample("daylight", sample),
    )


def test_a_source_of_another_kind_registered_later_writes_its_own_files_into_existing_months(tmp_path, monkeypatch):
    from forecast_assets.source_specs.registry import registered_sources
    from taxi_demo import sample_source

    source = SampleSource(tmp_path / "s", trips_per_month=TEST_TRIPS_PER_MONTH)
    source.write_months(["2025-01"])
    before = {path: _sha256(path) for path in source.root.rglob("*") if path.is_file() and path.suffix != ".json"}

    daylight = _daylight_source()
    monkeypatch.setattr(sample_source, "sampled_sources", lambda: (*registered_sources(), daylight))
    source.write_months(["2025-01"])
    served = source.root / "daylight" / "daylight_2025-01.csv"
    rows = [line.split(",") for line in served.read_text().splitlines()]
    assert len(rows) == 31 and rows[0][0] == "2025-01-01" and 9 < float(rows[0][1]) < 10
    assert source.environment["TAXI_DAYLIGHT_BASE_URL"] == (source.root / "daylight").resolve().as_uri()
    assert {path: _sha256(path) for path in before} == before


def test_a_source_without_a_sample_is_named_with_what_to_declare(tmp_path, monkeypatch):
    from dataclasses import replace

    from forecast_assets.source_specs.tlc_trips import trip_source
    from taxi_demo import sample_source

    blue = trip_source(replace(YELLOW, service="blue", sample=None), name="blue", table="raw_blue", file_asset="b")
    monkeypatch.setattr(sample_source, "sampled_sources", lambda: (blue,))
    with pytest.raises(sample_source.SourceNotSampled, match="The source 'blue' declares no sample"):
        SampleSource(tmp_path / "s", trips_per_month=TEST_TRIPS_PER_MONTH).write_months(["2025-01"])
