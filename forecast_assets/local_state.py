"""Prepare the state folder: Dagster home, the sample source, and the settings file of `taxi init`."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from taxi_core.settings import PROJECT_ROOT, Settings, is_checkout
from taxi_core.tool_env import tool_environment

if TYPE_CHECKING:
    from forecast_assets.sources.sample_source import SampleSource

INSTANCE_YAML = "dagster.yaml"
# What `taxi init` wrote into .env before it kept its settings in the state folder; Dagster's commands
# load .env over the exported environment, so such a file is removed.
OLD_ENV_MARKER = "# Written by `taxi init`"


def dagster_home(settings: Settings, template: Path | None = None) -> Path:
    """``<state>/dagster`` holding a link to the project's dagster.yaml (or to ``template``, another profile's)."""
    home = settings.path("dagster")
    link = home / INSTANCE_YAML
    if template is not None and link.is_symlink() and link.resolve() != template.resolve():
        link.unlink()  # linked to another profile's instance settings (by `./run`, before the profile began)
    template = template or _instance_yaml()
    if not link.exists():
        try:
            link.symlink_to(template)
        except OSError:
            shutil.copyfile(template, link)
    return home


def _instance_yaml() -> Path:
    """The checkout's dagster.yaml, or the copy a wheel carries inside the package."""
    checkout_copy = PROJECT_ROOT / INSTANCE_YAML
    return checkout_copy if checkout_copy.exists() else Path(__file__).with_name(INSTANCE_YAML)


def sample_source(settings: Settings, trips_per_month: int) -> SampleSource:
    from forecast_assets.sources.sample_source import SampleSource  # pandas and pyarrow: only the demo needs them

    return SampleSource(settings.path("sample_source"), trips_per_month=trips_per_month)


def local_environment(
    settings: Settings, source: SampleSource | None, instance_yaml: Path | None = None
) -> dict[str, str]:
    """What the project's commands and ``dagster dev`` need to find this state folder and the sample source."""
    values = {"DAGSTER_HOME": str(dagster_home(settings, instance_yaml)), "TAXI_STATE_DIR": str(settings.state_dir)}
    values |= tool_environment(settings)
    if source is not None:
        values |= {"TAXI_TRIP_BASE_URL": source.trip_base_url, "TAXI_WEATHER_BASE_URL": source.weather_base_url}
    return values


def remove_old_env_file() -> Path | None:
    """Delete a ``.env`` that an older `taxi init` wrote (it would override exported variables)."""
    path = (PROJECT_ROOT if is_checkout(PROJECT_ROOT) else Path.cwd()) / ".env"
    if path.is_file() and path.read_text().startswith(OLD_ENV_MARKER):
        path.unlink()
        return path
    return None
