"""Prepare the state folder: Dagster home, the sample source, and the .env that dagster dev reads."""

from __future__ import annotations

import shutil
from pathlib import Path

from forecast_assets.settings import PROJECT_ROOT, state_dir, state_path
from forecast_assets.sources.sample_source import SampleSource

ENV_FILE = PROJECT_ROOT / ".env"
ENV_MARKER = "# Written by `taxi init`"


def dagster_home() -> Path:
    """``<state>/dagster`` holding a link to the project's dagster.yaml."""
    home = state_path("dagster")
    link = home / "dagster.yaml"
    if not link.exists():
        try:
            link.symlink_to(PROJECT_ROOT / "dagster.yaml")
        except OSError:
            shutil.copyfile(PROJECT_ROOT / "dagster.yaml", link)
    return home


def sample_source(trips_per_month: int) -> SampleSource:
    return SampleSource(state_path("sample_source"), trips_per_month=trips_per_month)


def local_environment(source: SampleSource | None) -> dict[str, str]:
    """What ``dagster dev`` needs to find this state folder (and, for the demo, the sample source)."""
    values = {"DAGSTER_HOME": str(dagster_home()), "TAXI_STATE_DIR": str(state_dir())}
    if source is not None:
        values |= {"TAXI_TRIP_BASE_URL": source.trip_base_url, "TAXI_WEATHER_BASE_URL": source.weather_base_url}
    return values


def write_env_file(values: dict[str, str], path: Path = ENV_FILE) -> None:
    """Write ``.env`` unless someone else owns it; ``taxi init`` owns a file that starts with its marker."""
    if path.exists() and not path.read_text().startswith(ENV_MARKER):
        raise FileExistsError(f"{path} was not written by `taxi init`; add these lines yourself: {values}")
    lines = [ENV_MARKER + "; delete the TAXI_*_BASE_URL lines to read the real TLC and NOAA sources."]
    lines += [f"{key}={value}" for key, value in values.items()]
    path.write_text("\n".join(lines) + "\n")
