"""A deterministic stand-in for the TLC and NOAA servers: monthly files in the published formats.

Each registered source writes its own files from the demo's city (its ``SourceSpec.sample``), in a folder below the
sample root that mirrors its public URL, so the real downloader reads it unchanged::

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
from functools import cached_property
from pathlib import Path

import pyarrow as pa

from forecast_assets.source_specs import noaa_weather, taxi_zones, tlc_trips
from forecast_assets.source_specs.registry import registered_sources
from forecast_assets.source_specs.sample import SourceSample, parquet_bytes
from forecast_assets.source_specs.spec import SourceSpec
from forecast_assets.source_specs.yellow_trips import YELLOW
from forecast_assets.sources.tlc_format import TripLayout
from taxi_core.errors import PipelineError
from taxi_core.files import write_atomically
from taxi_demo import city_facts, demand_model
from taxi_demo.demand_model import DemandSpec
from taxi_demo.demo_city import DemoCity
from taxi_demo.scale import DEMO_SCALE_TRIPS

log = logging.getLogger(__name__)

DEFAULT_SEED = 2024
TRIP_DIR, WEATHER_DIR, ZONES_DIR = tlc_trips.SAMPLE_FOLDER, noaa_weather.SAMPLE_FOLDER, taxi_zones.SAMPLE_FOLDER
TRUTH_DIR = "truth"
MANIFEST = "sample_source.json"


class SourceNotSampled(PipelineError):
    """A registered source that declares no sample: the demo cannot serve its files."""


def sampled_sources() -> tuple[SourceSpec, ...]:
    """The registered sources, each of which writes its own files."""
    return registered_sources()


def sample_of(source: SourceSpec) -> SourceSample:
    if source.sample is None:
        msg = (
            f"The source {source.name!r} declares no sample, so the demo cannot serve its files: give its SourceSpec "
            "a sample=SourceSample(folder, files) (a TLC trip layout: TripLayout(sample=TripSample(...)))"
        )
        raise SourceNotSampled(msg)
    return source.sample


def source_folders() -> dict[str, str]:
    """The folder of each registered source's files, by the source's name (TAXI_<NAME>_BASE_URL points at it)."""
    return {source.name: sample_of(source).folder for source in sampled_sources()}


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
        self.write_standing_files()
        for month in months:
            self.write_month(month)

    def write_standing_files(self) -> None:
        """The files of the sources published once for all time (TLC's zone lookup, the real file)."""
        self._write_missing([source for source in sampled_sources() if not source.monthly], None)

    def write_month(self, month: str) -> None:
        """Write one month's files of every monthly source, and its true rates; existing files are kept, and a
        source registered since the month was written gets its files (each draws from its own random stream)."""
        written = self._write_missing([source for source in sampled_sources() if source.monthly], month)
        if not written and self.truth_path(month).exists():
            log.info("Sample month %s already written under %s", month, self.root)
            return
        self.truth_path(month).parent.mkdir(parents=True, exist_ok=True)
        write_atomically(
            self.truth_path(month), parquet_bytes(pa.Table.from_pandas(self._city.truth(month), preserve_index=False))
        )

    def _write_missing(self, sources: list[SourceSpec], month: str | None) -> int:
        written = 0
        for source in sources:
            folder = self.root / sample_of(source).folder
            missing = [file for file in source.files(month) if not (folder / file.path).exists()]
            if not missing:
                continue
            contents = sample_of(source).files(self._city, month)
            for file in missing:
                path = folder / file.path
                path.parent.mkdir(parents=True, exist_ok=True)
                write_atomically(path, contents[file.path])
                log.info("Sample %s: %s written", source.name, path)
            written += len(missing)
        return written

    @cached_property
    def _city(self) -> DemoCity:
        """The city the files are drawn from: a month's weather and rates are drawn once, whichever sources ask."""
        return DemoCity(DemandSpec(self.trips_per_month, self.seed))

    def _discard_other_scale(self) -> None:
        """Files written with another scale or seed are removed, so they are never silently reused."""
        wanted = {"trips_per_month": self.trips_per_month, "seed": self.seed, "process": demand_process_digest()}
        manifest = self.root / MANIFEST
        written = json.loads(manifest.read_text()) if manifest.exists() else None
        drawn = [*{sample_of(source).folder for source in sampled_sources() if source.monthly}, TRUTH_DIR]
        if written != wanted and any((self.root / folder).exists() for folder in drawn):
            log.info("Sample source under %s was written as %s; writing it again as %s", self.root, written, wanted)
            for folder in drawn:
                shutil.rmtree(self.root / folder, ignore_errors=True)
        self.root.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps(wanted) + "\n")


def demand_process_digest() -> str:
    """A digest of the demand process's code and parameters: files another version wrote are written again."""
    digest = hashlib.sha256()
    for module in (city_facts, demand_model):
        digest.update(Path(inspect.getfile(module)).read_bytes())
    return digest.hexdigest()[:16]
