"""Per-run settings a user can change in the Dagster launchpad."""

from dagster import Config
from pydantic import Field

from taxi_core.names import TOP_ZONES


class TableWriteConfig(Config):
    rewrite_unchanged: bool = Field(
        default=False,
        description=(
            "Write the month again even when it was published from the same source files, inputs and code "
            "(by default such a month is reported unchanged and no Iceberg snapshot is written)."
        ),
    )


class ActualsConfig(TableWriteConfig):
    top_zones: int = Field(
        default=TOP_ZONES, gt=0, le=263, description="How many of the month's busiest pickup zones to keep."
    )
