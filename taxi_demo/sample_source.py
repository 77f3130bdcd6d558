"""A deterministic stand-in for the TLC and NOAA servers: monthly files in the published formats.

Layout below the sample root mirrors the public URLs, so the real downloader reads it unchanged::

    trip-data/yellow_tripdata_2024-01.parquet          (TLC; every trip source of the registry, by its layout)
    misc/taxi_zone_lookup.csv                          (TLC's zone lookup, the real one)
    nclimgrid-daily/2024/prcp-202401-cty-scaled.csv     (NOAA, also tavg, tmin, tmax)
    truth/true_hourly_rates_2024-01.parquet            (the known rate, for the noise floor)
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from forecast_assets.source_specs.registry import registered_sources
from forecast_assets.source_specs.tlc_trips import TripSource
from forecast_assets.source_specs.yellow_trips import YELLOW
from forecast_assets.sources.noaa_format import COLUMNS, ELEMENTS, MISSING_VALUE, weather_file_path
from forecast_assets.sources.tlc_format import TripLayout, TripSample
from taxi_core.errors import PipelineError
from taxi_core.files import atomic_path, write_atomically
from taxi_core.zones import ZONE_LOOKUP, Zone, load_zones
from taxi_demo import city_facts, demand_model
from taxi_demo.demand_model import DemandSpec
from taxi_demo.scale import DEMO_SCALE_TRIPS

log = logging.getLogger(__name__)

DEFAULT_SEED = 2024
TRIP_DIR, WEATHER_DIR, ZONES_DIR, TRUTH_DIR = "trip-data", "nclimgrid-daily", "misc", "truth"
# The folder of each source's files that is not a TLC trip source (those are all in TRIP_DIR, as TLC publishes them).
OTHER_SOURCE_FOLDERS = {"weather": WEATHER_DIR, "zones": ZONES_DIR}
MANIFEST = "sample_source.json"

# Counties written besides the five boroughs, so the filter to NYC has something to drop; the
# Alabama code shows NOAA's leading zero.
OTHER_COUNTIES = {
    "01001": "Autauga County",
    "34003": "Bergen County",
    "34013": "Essex County",
    "34017": "Hudson County",
    "36059": "Nassau County",
    "36119": "Westchester County",
}
NYC_COUNTIES = {
    "36005": "Bronx County",
    "36047": "Kings County",
    "36061": "New York County",
    "36081": "Queens County",
    "36085": "Richmond County",
}
# A layout's own columns are drawn from the stream of its trips plus this.
OWN_COLUMNS_STREAM = 1000
# Share of trips whose pickup clock is wrong and falls outside the file's month, as in real files.
OUT_OF_MONTH_SHARE = 2e-5
AIRPORT_ZONES = city_facts.AIRPORT_ZONES


class UnknownService(KeyError, PipelineError):
    """A registered TLC trip layout that declares no sample, or whose file has a column the sample cannot draw."""


def sample_of(layout: TripLayout) -> TripSample:
    if layout.sample is None:
        msg = (
            f"The TLC {layout.service} trip layout declares no sample: give its TripLayout a sample=TripSample(...) "
            "(its share of the city's demand, where it picks up, and the draws of its own columns)"
        )
        raise UnknownService(msg)
    return layout.sample


def serves(sample: TripSample, zone: Zone) -> bool:
    in_borough = sample.boroughs is None or zone.borough in sample.boroughs
    return in_borough and (sample.airports or zone.location_id not in AIRPORT_ZONES)


def trip_layouts() -> tuple[TripLayout, ...]:
    """The layouts of the registered TLC trip sources: the sample writes a file a month for each."""
    return tuple(source.layout for source in registered_sources() if isinstance(source, TripSource))


def source_folders() -> dict[str, str]:
    """The folder of each registered source's files, by the source's name (TAXI_<NAME>_BASE_URL points at it)."""
    trips = {source.name: TRIP_DIR for source in registered_sources() if isinstance(source, TripSource)}
    return trips | OTHER_SOURCE_FOLDERS


@dataclass(frozen=True)
class SampleSource:
    root: Path
    trips_per_month: int = DEMO_SCALE_TRIPS
    seed: int = DEFAULT_SEED

    @property
    def base_urls(self) -> dict[str, str]:
        """Each source's base URL (a ``file://`` folder here), by source name."""
        return {name: (self.root / folder).resolve().as_uri() for name, folder in source_folders().items()}

    @property
    def environment(self) -> dict[str, str]:
        """The settings that point the pipeline at this source: ``TAXI_<SOURCE>_BASE_URL`` for each."""
        return {f"TAXI_{name.upper()}_BASE_URL": url for name, url in self.base_urls.items()}

    @property
    def truth_dir(self) -> Path:
        """The true hourly rates the trips were drawn from, one file a month: the noise floor's truth."""
        return self.root / TRUTH_DIR

    def truth_path(self, month: str) -> Path:
        return self.truth_dir / f"true_hourly_rates_{month}.parquet"

    def trip_path(self, month: str, layout: TripLayout = YELLOW) -> Path:
        return self.root / TRIP_DIR / layout.file_name(month)

    def months(self) -> list[str]:
        """The months (``YYYY-MM``) whose yellow trip file is written, oldest first."""
        written = (YELLOW.file_month(path.name) for path in (self.root / TRIP_DIR).glob(YELLOW.file_name("*")))
        return sorted(month for month in written if month)

    def write_months(self, months: list[str]) -> None:
        self._discard_other_scale()
        self.write_zone_lookup()
        for month in months:
            self.write_month(month)

    def write_zone_lookup(self) -> None:
        """TLC's taxi zone lookup, as TLC publishes it (the project ships the real file)."""
        target = self.root / ZONES_DIR / ZONE_LOOKUP.name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(target, ZONE_LOOKUP.read_text())

    def _discard_other_scale(self) -> None:
        """Files written with another scale or seed are removed, so they are never silently reused."""
        wanted = {"trips_per_month": self.trips_per_month, "seed": self.seed, "process": demand_process_digest()}
        manifest = self.root / MANIFEST
        written = json.loads(manifest.read_text()) if manifest.exists() else None
        if written != wanted and any((self.root / folder).exists() for folder in (TRIP_DIR, WEATHER_DIR, TRUTH_DIR)):
            log.info("Sample source under %s was written as %s; writing it again as %s", self.root, written, wanted)
            for folder in (TRIP_DIR, WEATHER_DIR, TRUTH_DIR):
                shutil.rmtree(self.root / folder, ignore_errors=True)
        self.root.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps(wanted) + "\n")

    def write_month(self, month: str) -> None:
        """Write one month's trip files, weather files and true rates; existing files are kept, and a layout added
        since the month was written gets its file (each layout's trips come from its own random stream)."""
        layouts = [layout for layout in trip_layouts() if not self.trip_path(month, layout).exists()]
        if not layouts and self.truth_path(month).exists():
            log.info("Sample month %s already written under %s", month, self.root)
            return
        spec = DemandSpec(self.trips_per_month, self.seed)
        zones = load_zones()
        weather = demand_model.daily_weather(month, [*NYC_COUNTIES, *OTHER_COUNTIES], self.seed)
        rates = demand_model.hourly_rates(month, zones, weather, spec)
        self._write_weather(month, weather)
        for layout in layouts:
            sample = sample_of(layout)
            served = np.array([serves(sample, zone) for zone in zones])
            served_rate = rates.true_rate * served
            # The service's share of the city's trips, spread over the zones it serves as the city's demand is.
            rate = served_rate * (sample.share * rates.true_rate.sum() / served_rate.sum())
            trips = simulate_trips(month, zones, rates.hours, rate, spec, layout, sample.stream)
            _atomic_parquet(trips, self.trip_path(month, layout))
            log.info("Sample month %s: %d trips written to %s", month, trips.num_rows, self.trip_path(month, layout))
        _atomic_parquet(
            pa.Table.from_pandas(demand_model.truth_frame(rates, zones), preserve_index=False),
            self.truth_path(month),
        )

    def _write_weather(self, month: str, weather: pd.DataFrame) -> None:
        names = NYC_COUNTIES | OTHER_COUNTIES
        start = demand_model.month_start(month)
        for element in ELEMENTS:
            lines = []
            for county_fips, rows in weather.groupby("county_fips", sort=True):
                county = str(county_fips)
                values = list(rows.sort_values("date")[element])
                values += [MISSING_VALUE] * (31 - len(values))
                cells = ["cty", county, names[county], str(start.year), f"{start.month:02d}", element]
                cells += [f"{value:8.2f}" for value in values]
                assert len(cells) == len(COLUMNS)
                lines.append(",".join(cells))
            path = self.root / WEATHER_DIR / weather_file_path(element, month)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, "\n".join(lines) + "\n")


def demand_process_digest() -> str:
    """A digest of the demand process's code and parameters: files another version wrote are written again."""
    digest = hashlib.sha256()
    for module in (city_facts, demand_model):
        digest.update(Path(inspect.getfile(module)).read_bytes())
    return digest.hexdigest()[:16]


def simulate_trips(
    month: str,
    zones: tuple[Zone, ...],
    hours: pd.DatetimeIndex,
    rates: np.ndarray,
    spec: DemandSpec,
    layout: TripLayout = YELLOW,
    stream: int = 2,
) -> pa.Table:
    """Draw Poisson trip counts per (hour, zone) and give each trip plausible TLC fields, in ``layout``'s file."""
    rng = demand_model.month_seed(spec.seed, month, stream=stream)
    counts = rng.poisson(rates)
    n = int(counts.sum())
    hour_index, zone_index = np.nonzero(counts)
    repeats = counts[hour_index, zone_index]
    hour_of_trip = np.repeat(hours.values[hour_index], repeats)
    location_ids = np.array([z.location_id for z in zones])
    pickup_zone = np.repeat(location_ids[zone_index], repeats)

    pickup = hour_of_trip + rng.integers(0, 3600, n).astype("timedelta64[s]")
    outliers = rng.random(n) < OUT_OF_MONTH_SHARE
    shift = rng.choice([-400, -40, 40, 400], size=outliers.sum()).astype("timedelta64[D]")
    pickup[outliers] = pickup[outliers] + shift

    distance = np.round(rng.lognormal(0.75, 0.75, n), 2)
    airport = np.isin(pickup_zone, AIRPORT_ZONES)
    distance[airport] += 12.0
    minutes = distance / rng.uniform(7, 16, n) * 60 + rng.exponential(3, n)
    dropoff = pickup + (minutes * 60).astype("timedelta64[s]")
    dropoff_zone = rng.choice(location_ids, size=n, p=demand_model.dropoff_shares(zones, spec.seed))

    year = demand_model.month_start(month).year
    payment = rng.choice([1, 2, 3, 4], size=n, p=[0.78, 0.19, 0.02, 0.01])
    fare = np.round(3.0 + 2.5 * distance + 0.7 * minutes, 2)
    extra = rng.choice([0.0, 1.0, 2.5], size=n, p=[0.5, 0.3, 0.2])
    tip = np.where(payment == 1, np.round(fare * rng.uniform(0.1, 0.3, n), 2), 0.0)
    tolls = np.where(airport & (rng.random(n) < 0.4), 6.94, 0.0)
    manhattan = np.isin(pickup_zone, [z.location_id for z in zones if z.borough == "Manhattan"])
    congestion = np.where(manhattan, 2.5, 0.0)
    airport_fee = np.where(airport, 1.75, 0.0)
    # The Congestion Relief Zone toll on trips that start or end in the zone, from its first day.
    cbd = np.isin(pickup_zone, city_facts.CBD_ZONES) | np.isin(dropoff_zone, city_facts.CBD_ZONES)
    priced = pickup >= np.datetime64(city_facts.CONGESTION_PRICING_START)
    cbd_fee = np.where(cbd & priced, city_facts.CBD_CONGESTION_FEE, 0.0)
    total = fare + extra + 0.5 + tip + tolls + 1.0 + congestion + airport_fee
    if year >= 2025:
        total = total + cbd_fee
    # Trips reported without a meter reading (payment type 0 in real files) lack these fields.
    unreported = rng.random(n) < 0.02

    order = np.argsort(pickup, kind="stable")
    columns = {
        "vendorid": rng.choice([1, 2], size=n, p=[0.3, 0.7]),
        layout.pickup: pickup,
        layout.dropoff: dropoff,
        "passenger_count": _nullable(rng.choice([1, 1, 1, 2, 3, 4], size=n), unreported),
        "trip_distance": distance,
        "ratecodeid": _nullable(np.where(pickup_zone == 132, 2, 1), unreported),
        "store_and_fwd_flag": _nullable(np.where(rng.random(n) < 0.005, "Y", "N"), unreported),
        "pulocationid": pickup_zone,
        "dolocationid": dropoff_zone,
        "payment_type": np.where(unreported, 0, payment),
        "fare_amount": fare,
        "extra": extra,
        "mta_tax": np.full(n, 0.5),
        "tip_amount": tip,
        "tolls_amount": tolls,
        "improvement_surcharge": np.full(n, 1.0),
        "total_amount": np.round(total, 2),
        "congestion_surcharge": _nullable(congestion, unreported),
        "airport_fee": _nullable(airport_fee, unreported),
        "cbd_congestion_fee": cbd_fee,
    }
    columns |= _own_columns(layout, month, spec, stream, n, unreported)
    schema = layout.published_schema(year)
    unknown = [field.name for field in schema if field.name.lower() not in columns and not pa.types.is_null(field.type)]
    if unknown:
        msg = (
            f"The sample source cannot write {layout.service} trips' columns {unknown}: draw them in its TripLayout's "
            "sample (TripSample.choices), or declare them left_empty"
        )
        raise UnknownService(msg)
    arrays = [
        pa.nulls(n)
        if pa.types.is_null(field.type)
        else pa.array(_take(columns[field.name.lower()], order), type=field.type, from_pandas=True)
        for field in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def _own_columns(
    layout: TripLayout, month: str, spec: DemandSpec, stream: int, n: int, unreported: np.ndarray
) -> dict[str, pd.Series]:
    """The columns only this layout has: its sample's draws, from a stream of their own (so a draw added to one
    layout changes no other file), missing where the meter reported nothing; and the columns TLC leaves empty."""
    rng = demand_model.month_seed(spec.seed, month, stream=OWN_COLUMNS_STREAM + stream)
    drawn = {
        name: _nullable(rng.choice(np.array(values), size=n, p=weights), unreported)
        for name, (values, weights) in (layout.sample.choices if layout.sample else {}).items()
    }
    return drawn | {name: _nullable(np.zeros(n), np.ones(n, dtype=bool)) for name in layout.left_empty}


def _nullable(values: np.ndarray, missing: np.ndarray) -> pd.Series:
    series = pd.Series(values, dtype=object)
    series[missing] = None
    return series


def _take(values: np.ndarray | pd.Series, order: np.ndarray) -> np.ndarray:
    if isinstance(values, pd.Series):
        return values.iloc[order].to_numpy()
    return np.take(values, order)


def _atomic_parquet(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")
