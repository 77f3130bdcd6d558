"""A failed demo leaves a record, and `taxi undo` puts every table back to its version from before the demo and the
settings file as it was: checked on real Iceberg tables (pyiceberg's SQL catalog in a state folder of the test's)."""

from __future__ import annotations

from datetime import datetime

import pyarrow as pa
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import MonthTransform
from pyiceberg.types import LongType, NestedField, TimestampType

from taxi_core.catalog import CatalogConfig, open_catalog
from taxi_core.names import ACTUALS, NAMESPACE, RAW_WEATHER
from taxi_core.settings import load_settings
from taxi_demo import demo_undo
from taxi_demo.cli import history_problem, month_range, settled_range, write_settings

SCHEMA = Schema(
    NestedField(1, "pickup_hour", TimestampType(), required=False),
    NestedField(2, "rides", LongType(), required=False),
)
SPEC = PartitionSpec(PartitionField(source_id=1, field_id=1000, transform=MonthTransform(), name="pickup_hour_month"))


def _hours(*days: str) -> pa.Table:
    hours = [datetime.fromisoformat(day) for day in days]
    return pa.table({"pickup_hour": pa.array(hours, pa.timestamp("us")), "rides": pa.array([1] * len(hours))})


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("TAXI_STATE_DIR", str(tmp_path))
    settings = load_settings()
    catalog = open_catalog(CatalogConfig.from_settings(settings))
    catalog.create_namespace(NAMESPACE)
    return settings, catalog


def test_undo_puts_back_each_table_and_the_settings(state):
    settings, catalog = state
    actuals = catalog.create_table(ACTUALS, SCHEMA, partition_spec=SPEC)
    actuals.append(_hours("2024-12-01T00:00", "2025-01-31T23:00"))
    write_settings(settings, {}, settings.state_dir / "truth", None, ["2024-12", "2025-01"])
    settings_before = settings.settings_file.read_text()
    before = demo_undo.record(settings)
    assert before.tables == {ACTUALS: actuals.current_snapshot().snapshot_id}

    # The "demo": a month more in the actuals, a new table, the settings moved on.
    actuals.append(_hours("2025-02-01T00:00"))
    catalog.create_table(RAW_WEATHER, SCHEMA).append(_hours("2025-02-01T00:00"))
    write_settings(settings, {}, settings.state_dir / "truth", None, ["2024-12", "2025-02"])
    assert demo_undo.published_actuals_months(settings) == {"2024-12", "2025-01", "2025-02"}
    changed = before.changes(settings)
    assert len(changed) == 2 and changed[0].startswith(RAW_WEATHER) and "no table" in changed[0]

    demo_undo.save(before, settings)
    assert demo_undo.undo(settings) == 0
    reread = catalog.load_table(ACTUALS)
    assert reread.current_snapshot().snapshot_id == before.tables[ACTUALS]
    assert reread.scan().to_arrow().num_rows == 2  # read back: February's row is gone
    assert not catalog.table_exists(RAW_WEATHER)
    assert settings.settings_file.read_text() == settings_before
    assert settled_range(settings) == ["2024-12", "2025-01"]
    assert demo_undo.undo(settings) == 1  # nothing left to undo


def test_the_months_the_actuals_hold_are_read_from_their_partitions(state):
    settings, catalog = state
    assert demo_undo.published_actuals_months(settings) == set()
    catalog.create_table(ACTUALS, SCHEMA, partition_spec=SPEC).append(_hours("2023-12-31T23:00", "2024-01-01T00:00"))
    assert demo_undo.published_actuals_months(settings) == {"2023-12", "2024-01"}


def test_training_needs_the_month_before_the_newest():
    assert history_problem(["2024-12", "2025-01"], set()) is None
    assert history_problem(["2025-01"], {"2024-12"}) is None
    assert history_problem(["2024-06"], {"2024-12", "2025-01"}) is None  # the newest month is still January
    said = history_problem(["2025-01"], set())
    assert said and "(2024-12)" in said and "--months 2024-12 2025-01" in said and "Nothing was written" in said
    assert history_problem(["2025-03"], {"2025-01"}) is not None


def test_the_settings_range_spans_the_months_given():
    assert month_range(["2025-01", "2024-06", "2024-12"]) == {
        "TAXI_FIRST_MONTH": "2024-06",
        "TAXI_LAST_MONTH": "2025-01",
    }
    assert month_range([]) == {}
