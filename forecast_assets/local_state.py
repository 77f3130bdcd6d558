"""Prepare the state folder: Dagster home, the tools' settings, the sample source, and the .env file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from forecast_assets.settings import PROJECT_ROOT, is_checkout, state_dir, state_path

if TYPE_CHECKING:
    from forecast_assets.sources.sample_source import SampleSource

ENV_MARKER = "# Written by `taxi init`"
INSTANCE_YAML = "dagster.yaml"


def dagster_home() -> Path:
    """``<state>/dagster`` holding a link to the project's dagster.yaml."""
    home = state_path("dagster")
    link = home / INSTANCE_YAML
    if not link.exists():
        template = _instance_yaml()
        try:
            link.symlink_to(template)
        except OSError:
            shutil.copyfile(template, link)
    return home


def _instance_yaml() -> Path:
    """The checkout's dagster.yaml, or the copy a wheel carries inside the package."""
    checkout_copy = PROJECT_ROOT / INSTANCE_YAML
    return checkout_copy if checkout_copy.exists() else Path(__file__).with_name(INSTANCE_YAML)


def tool_environment(state: Path | None = None) -> dict[str, str]:
    """Settings that keep every tool's files in the state folder and its telemetry off.

    Metaflow writes cards and its client cache relative to the working directory or /tmp unless
    told otherwise; DataHub's telemetry is on unless switched off.
    """
    state = state or state_dir()
    values = {
        "METAFLOW_DEFAULT_DATASTORE": "local",
        "METAFLOW_DEFAULT_METADATA": "local",
        "METAFLOW_CLIENT_CACHE_PATH": str(state / "metaflow" / "client_cache"),
        # Metaflow refuses to run without a user name; CI and containers often have none.
        "METAFLOW_USER": os.environ.get("USER") or os.environ.get("USERNAME") or "taxi",
        "DATAHUB_TELEMETRY_ENABLED": "false",
        "MPLCONFIGDIR": str(state / "tmp" / "matplotlib"),
    }
    if os.environ.get("METAFLOW_DEFAULT_DATASTORE", "local") == "local":
        values |= {
            "METAFLOW_DATASTORE_SYSROOT_LOCAL": str(state / "metaflow"),
            "METAFLOW_CARD_LOCALROOT": str(state / "metaflow" / "mf.cards"),
        }
    return values


def apply_tool_environment() -> dict[str, str]:
    """Put :func:`tool_environment` into this process's environment; values already set win."""
    for key, value in tool_environment().items():
        os.environ.setdefault(key, value)
    return {key: os.environ[key] for key in tool_environment()}


def sample_source(trips_per_month: int) -> SampleSource:
    from forecast_assets.sources.sample_source import SampleSource  # pandas and pyarrow: only the demo needs them

    return SampleSource(state_path("sample_source"), trips_per_month=trips_per_month)


def local_environment(source: SampleSource | None) -> dict[str, str]:
    """What ``dagster dev`` needs to find this state folder (and, for the demo, the sample source)."""
    values = {"DAGSTER_HOME": str(dagster_home()), "TAXI_STATE_DIR": str(state_dir())}
    values |= tool_environment()
    if source is not None:
        values |= {"TAXI_TRIP_BASE_URL": source.trip_base_url, "TAXI_WEATHER_BASE_URL": source.weather_base_url}
    return values


def env_file() -> Path:
    """``.env`` where ``dagster dev`` reads it: the checkout's root, or the working directory."""
    return (PROJECT_ROOT if is_checkout(PROJECT_ROOT) else Path.cwd()) / ".env"


def write_env_file(values: dict[str, str], path: Path | None = None) -> None:
    """Write ``.env`` unless someone else owns it; ``taxi init`` owns a file that starts with its marker."""
    path = path or env_file()
    if path.exists() and not path.read_text().startswith(ENV_MARKER):
        raise FileExistsError(f"{path} was not written by `taxi init`; add these lines yourself: {values}")
    lines = [ENV_MARKER + "; delete the TAXI_*_BASE_URL lines to read the real TLC and NOAA sources."]
    lines += [f"{key}={value}" for key, value in values.items()]
    path.write_text("\n".join(lines) + "\n")
