"""Where local state lives and the names every module agrees on."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
STATE_DIR_ENV = "TAXI_STATE_DIR"
DEFAULT_STATE_DIR_NAME = ".state"
# Installed from a wheel (no checkout around the package), state goes to the user's data folder.
INSTALLED_STATE_DIR = Path("~/.local/share/taxi-demand-lineage")

NAMESPACE = "nyc_taxi"
# The Dagster code location in workspace.yaml.
LOCATION_NAME = "taxi_demand"
CATALOG_NAME = "lakehouse"

TLC_BASE_URL = "https://d37ci6vzurychx.cloudfront.net/trip-data"
NOAA_BASE_URL = "https://www.ncei.noaa.gov/data/nclimgrid-daily/access/averages"

FIRST_MONTH = "2024-01-01"
TOP_ZONES = 50


def is_checkout(root: Path) -> bool:
    return (root / "pyproject.toml").is_file() and (root / "forecast_assets").is_dir()


def default_state_dir(root: Path = PROJECT_ROOT) -> Path:
    """A checkout's ``.state``; never a folder inside site-packages."""
    if is_checkout(root):
        return root / DEFAULT_STATE_DIR_NAME
    return INSTALLED_STATE_DIR.expanduser()


def state_dir() -> Path:
    """The one git-ignored folder holding every piece of local state."""
    configured = os.environ.get(STATE_DIR_ENV)
    path = Path(configured).expanduser().resolve() if configured else default_state_dir()
    path.mkdir(parents=True, exist_ok=True)
    return path


def state_path(*parts: str) -> Path:
    path = state_dir().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def zone_lookup_path() -> Path:
    return PROJECT_ROOT / "forecast_assets" / "data" / "taxi_zone_lookup.csv"


def env(name: str, default: str) -> str:
    """A setting from the environment; an empty value counts as unset."""
    return os.environ.get(name) or default
