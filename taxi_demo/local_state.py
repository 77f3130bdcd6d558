"""Prepare the state folder for the demo: the sample source, and the environment and settings of `taxi init`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from forecast_assets.instance import dagster_home
from taxi_core.settings import PROJECT_ROOT, Settings, is_checkout
from taxi_core.tool_env import tool_environment

if TYPE_CHECKING:
    from taxi_demo.sample_source import SampleSource

# What `taxi init` wrote into .env before it kept its settings in the state folder; Dagster's commands
# load .env over the exported environment, so such a file is removed.
OLD_ENV_MARKER = "# Written by `taxi init`"


def sample_source(settings: Settings, trips_per_month: int) -> SampleSource:
    from taxi_demo.sample_source import SampleSource  # pandas and pyarrow: only the demo needs them

    return SampleSource(settings.path("sample_source"), trips_per_month=trips_per_month)


def local_environment(
    settings: Settings, source: SampleSource | None, instance_yaml: Path | None = None
) -> dict[str, str]:
    """What the project's commands and ``dagster dev`` need to find this state folder and the sample source."""
    values = {"DAGSTER_HOME": str(dagster_home(settings, instance_yaml)), "TAXI_STATE_DIR": str(settings.state_dir)}
    values |= tool_environment(settings)
    if source is not None:
        values |= source.environment
    return values


def remove_old_env_file() -> Path | None:
    """Delete a ``.env`` that an older `taxi init` wrote (it would override exported variables)."""
    path = (PROJECT_ROOT if is_checkout(PROJECT_ROOT) else Path.cwd()) / ".env"
    if path.is_file() and path.read_text().startswith(OLD_ENV_MARKER):
        path.unlink()
        return path
    return None
