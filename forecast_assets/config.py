"""Per-run settings a user can change in the Dagster launchpad."""

from dagster import Config
from pydantic import Field

from forecast_assets.settings import TOP_ZONES


class ActualsConfig(Config):
    top_zones: int = Field(
        default=TOP_ZONES, gt=0, le=263, description="How many of the month's busiest pickup zones to keep."
    )
