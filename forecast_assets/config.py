"""Per-run settings a user can change in the Dagster launchpad."""

from dagster import Config
from pydantic import Field


class TableWriteConfig(Config):
    rewrite_unchanged: bool = Field(
        default=False,
        description=(
            "Write the month again even when it was published from the same source files, inputs and code "
            "(by default such a month is reported unchanged and no Iceberg snapshot is written)."
        ),
    )
    accept: list[str] = Field(
        default_factory=list,
        description=(
            "Audits (check names) whose failure does not hold this month back, for a month that is right though "
            "unlike its neighbours (a real change in demand). Give a reason: both are recorded on the published "
            "snapshot, in the check results and in the lineage."
        ),
    )
    reason: str = Field(
        default="",
        description="Why the audits in accept are accepted, in a sentence a reader of the lineage understands.",
    )


class ActualsConfig(TableWriteConfig):
    top_zones: int | None = Field(
        default=None,
        gt=0,
        le=263,
        description=(
            "Keep only the month's N busiest pickup zones (default: every zone with a ride; the training flow "
            "chooses its zones on what each forecast origin knew, which a month's full count does not)."
        ),
    )
