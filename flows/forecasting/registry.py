"""Which model version serves: every champion/challenger decision, kept in an Iceberg table, newest last.

The table is the registry's one source of truth and its history: each training appends its decision
(promoted or not, against which version, why, with the figures), so the version serving at any moment
is the newest decision's ``now_serving``, and a version's rise and fall can be read back, snapshot by
snapshot, like any other table the lineage records.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pyarrow as pa
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.types import (
    BooleanType,
    DoubleType,
    IntegerType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
)

from bridge.sources.metaflow_recorder import record_read, record_write
from flows.forecasting.promotion import Decision
from flows.forecasting.tables import written_snapshot_id
from taxi_core.names import MODEL_PROMOTIONS

PROMOTIONS_SCHEMA = Schema(
    NestedField(1, "decided_at", TimestamptzType(), required=False, doc="When the decision was recorded (UTC)"),
    NestedField(2, "model", StringType(), required=False, doc="The model's name"),
    NestedField(3, "challenger", StringType(), required=False, doc="The version trained: its run's pathspec"),
    NestedField(4, "serving_before", StringType(), required=False, doc="The version serving when it was trained"),
    NestedField(5, "promoted", BooleanType(), required=False, doc="Whether the challenger serves from now on"),
    NestedField(6, "now_serving", StringType(), required=False, doc="The version serving after the decision"),
    NestedField(7, "reason", StringType(), required=False, doc="Why, in words, with the figures"),
    NestedField(8, "challenger_mae", DoubleType(), required=False, doc="The challenger's MAE on the days compared"),
    NestedField(9, "serving_mae", DoubleType(), required=False, doc="The serving version's MAE on the same days"),
    NestedField(10, "ratio", DoubleType(), required=False, doc="challenger_mae / serving_mae"),
    NestedField(11, "ratio_low", DoubleType(), required=False, doc="The ratio's 5th percentile, days resampled"),
    NestedField(12, "ratio_high", DoubleType(), required=False, doc="The ratio's 95th percentile, days resampled"),
    NestedField(13, "days", IntegerType(), required=False, doc="The held-out days both versions forecast"),
    NestedField(14, "champion", StringType(), required=False, doc="The candidate the challenger serves when promoted"),
    NestedField(
        15,
        "trained_through",
        TimestampType(),
        required=False,
        doc="The end (excluded) of the actuals the challenger was trained on, New York wall-clock time: it serves no "
        "day that starts before it",
    ),
)
NEW_YORK = "America/New_York"


@dataclass(frozen=True)
class Serving:
    """The version serving, the candidate it is (its champion when it was trained), and the registry's snapshot
    that said so."""

    version: str
    champion: str
    snapshot_id: int


def serving_version(catalog: Catalog, model: str) -> Serving | None:
    """The version of ``model`` serving now (``None`` before the first training), recorded as read."""
    try:
        table = catalog.load_table(MODEL_PROMOTIONS)
    except NoSuchTableError:
        return None
    snapshot = table.current_snapshot()
    if snapshot is None:
        return None
    decisions = table.scan(snapshot_id=snapshot.snapshot_id).to_pandas()
    record_read(MODEL_PROMOTIONS, snapshot.snapshot_id, rows=len(decisions))
    mine = decisions[decisions.model == model].sort_values("decided_at", kind="stable")
    if mine.empty:
        return None
    version = str(mine.now_serving.iloc[-1])
    trained = mine[mine.challenger == version]
    return Serving(version, str(trained.champion.iloc[-1]), snapshot.snapshot_id)


def serving_on(decisions: pd.DataFrame, day: pd.Timestamp) -> str | None:
    """The version that serves the day starting at ``day`` (New York wall-clock): one trained on data that ended by
    then, as the registry (``decisions`` of one model, oldest first) stood at the day's start.

    Decisions recorded by the day's start are the registry as it was then. A day before any decision was recorded
    is history replayed (a backfill of months the loop never ran on, the demo's months): the data's clock then
    decides, each decision standing from its challenger's training end. Either way the newest standing decision's
    serving version serves if it was trained by then, else that decision's challenger; ``None`` when no version was
    trained before the day."""
    trained: dict[str, pd.Timestamp] = dict(
        zip(decisions.challenger, pd.to_datetime(decisions.trained_through), strict=True)
    )
    eligible = decisions[pd.to_datetime(decisions.trained_through) <= day]
    start = day.tz_localize(NEW_YORK, ambiguous=True, nonexistent="shift_forward").tz_convert("UTC")
    recorded = eligible[pd.to_datetime(eligible.decided_at, utc=True) <= start]
    standing = recorded if not recorded.empty else eligible
    if standing.empty:
        return None
    newest = standing.iloc[-1]
    serving_trained = trained.get(str(newest.now_serving))
    if serving_trained is not None and bool(pd.notna(serving_trained)) and serving_trained <= day:
        return str(newest.now_serving)
    return str(newest.challenger)


def serving_version_on(catalog: Catalog, model: str, day: pd.Timestamp) -> Serving | None:
    """The version of ``model`` that serves ``day`` (:func:`serving_on`), with its champion; ``None`` if none can."""
    table = _table(catalog)
    snapshot = None if table is None else table.current_snapshot()
    if snapshot is None:
        return None
    snapshot_id = snapshot.snapshot_id
    found = decisions(catalog, model)
    version = serving_on(found, day) if "trained_through" in found else None
    if version is None:
        return None
    return Serving(version, str(found[found.challenger == version].champion.iloc[-1]), snapshot_id)


def _table(catalog: Catalog) -> Table | None:
    try:
        return catalog.load_table(MODEL_PROMOTIONS)
    except NoSuchTableError:
        return None


def record_decision(
    catalog: Catalog, model: str, decision: Decision, champion: str, trained_through: pd.Timestamp
) -> int:
    """Append ``decision`` on a version whose champion is ``champion``, trained on actuals up to ``trained_through``,
    to the registry; the snapshot that holds it."""
    table = catalog.create_table_if_not_exists(MODEL_PROMOTIONS, schema=PROMOTIONS_SCHEMA)
    if "trained_through" not in {field.name for field in table.schema().fields}:  # a registry from before it
        with table.update_schema() as update:
            update.union_by_name(PROMOTIONS_SCHEMA)
        table = catalog.load_table(MODEL_PROMOTIONS)
    low, high = decision.ratio_range or (None, None)
    row = {
        "decided_at": pd.Timestamp.now(tz="UTC"), "model": model, "challenger": decision.challenger,
        "serving_before": decision.serving, "promoted": decision.promoted, "now_serving": decision.now_serving,
        "reason": decision.reason, "challenger_mae": decision.challenger_mae, "serving_mae": decision.serving_mae,
        "ratio": decision.ratio, "ratio_low": low, "ratio_high": high, "days": decision.days, "champion": champion,
        "trained_through": pd.Timestamp(trained_through).tz_localize(None).to_pydatetime(),
    }  # fmt: skip
    table.append(pa.Table.from_pylist([row], schema=table.schema().as_arrow()))
    snapshot_id = written_snapshot_id(table)
    columns = [(field.name, str(field.field_type), field.doc) for field in PROMOTIONS_SCHEMA.fields]
    record_write(MODEL_PROMOTIONS, snapshot_id, rows=1, schema=columns)
    return snapshot_id


def decisions(catalog: Catalog, model: str) -> pd.DataFrame:
    """Every decision on ``model``, oldest first (empty before the first training)."""
    try:
        table = catalog.load_table(MODEL_PROMOTIONS)
    except NoSuchTableError:
        return pd.DataFrame(columns=[field.name for field in PROMOTIONS_SCHEMA.fields])
    found = table.scan().to_pandas()
    return found[found.model == model].sort_values("decided_at", kind="stable").reset_index(drop=True)
