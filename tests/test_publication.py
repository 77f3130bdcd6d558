"""Write-audit-publish on a real Iceberg table: staged months stay invisible until published."""

from __future__ import annotations

import pytest

from forecast_assets.lakehouse.publication import (
    discard,
    publish,
    published_month,
    published_snapshot,
    stage_month,
    staged_branches,
    staging_branch,
)
from forecast_assets.lakehouse.tables import TableSpec
from taxi_core.months import MonthWindow

pytestmark = pytest.mark.integration

PROBE = TableSpec(
    name="publication_probe",
    columns={"day": "date", "value": "int"},
    partitioned_by="months(day)",
    month_column="day",
)
JANUARY, FEBRUARY = MonthWindow.from_partition_key("2025-01-01"), MonthWindow.from_partition_key("2025-02-01")


@pytest.fixture(scope="module")
def spark():
    from forecast_assets.definitions import resources_for
    from taxi_core.settings import load_settings

    session = resources_for(load_settings())["spark"].session
    yield session
    session.sql(f"DROP TABLE IF EXISTS {PROBE.identifier} PURGE")


def _rows(spark, window: MonthWindow, values: list[int]):
    return spark.createDataFrame([(window.start.date(), v) for v in values], "day date, value int")


def _published_values(spark, window: MonthWindow) -> list[int]:
    rows = spark.table(PROBE.identifier).where(PROBE.rows_condition(window))
    return sorted(row["value"] for row in rows.collect())


def _stage(spark, window, values, run_id, **properties):
    props = {"dagster.partition": f"{window.month}-01", **properties}
    return stage_month(spark, PROBE, _rows(spark, window, values), window, staging_branch(window, run_id), props)


def test_a_staged_month_is_invisible_until_published(spark):
    before = published_snapshot(spark, PROBE)
    staged = _stage(spark, JANUARY, [1, 2, 3], "run-aaaa1111", **{"source.fingerprint": "sha256:one"})
    assert published_snapshot(spark, PROBE) == before
    assert _published_values(spark, JANUARY) == []
    assert sorted(row["value"] for row in staged.rows(spark).collect()) == [1, 2, 3]

    write = publish(spark, staged)

    assert published_snapshot(spark, PROBE) == write.snapshot_id == staged.write.snapshot_id
    assert _published_values(spark, JANUARY) == [1, 2, 3]
    assert staged_branches(spark, PROBE, JANUARY) == []  # the branch is gone once published
    month = published_month(spark, PROBE, "2025-01-01")
    assert month.snapshot_id == write.snapshot_id
    assert month.built_from({"source.fingerprint": "sha256:one"})
    assert not month.built_from({"source.fingerprint": "sha256:two"})


def test_a_month_staged_while_another_is_published_is_cherry_picked(spark):
    _stage_and_publish = lambda window, values, run_id: publish(spark, _stage(spark, window, values, run_id))  # noqa: E731
    _stage_and_publish(JANUARY, [1, 2, 3], "run-bbbb2222")
    february = _stage(spark, FEBRUARY, [20, 21], "run-cccc3333", **{"source.fingerprint": "sha256:feb"})
    january_again = _stage_and_publish(JANUARY, [4, 5], "run-dddd4444")  # main moves on meanwhile

    write = publish(spark, february)

    assert write.snapshot_id != february.write.snapshot_id  # a new snapshot on top of main
    assert _published_values(spark, FEBRUARY) == [20, 21]
    assert _published_values(spark, JANUARY) == [4, 5]  # the month published meanwhile is kept
    month = published_month(spark, PROBE, "2025-02-01")
    assert month.snapshot_id == write.snapshot_id
    assert month.built_from({"source.fingerprint": "sha256:feb"})  # properties found through the pick
    assert published_month(spark, PROBE, "2025-01-01").snapshot_id == january_again.snapshot_id


def test_a_republished_month_replaces_its_rows(spark):
    publish(spark, _stage(spark, JANUARY, [7, 8, 9], "run-eeee5555"))
    publish(spark, _stage(spark, JANUARY, [7, 8], "run-ffff6666"))
    assert _published_values(spark, JANUARY) == [7, 8]


def test_a_discarded_stage_leaves_main_as_it_was(spark):
    before = published_snapshot(spark, PROBE)
    staged = _stage(spark, JANUARY, [99], "run-gggg7777")
    assert staged.branch in staged_branches(spark, PROBE, JANUARY)
    discard(spark, PROBE, staged.branch)
    assert staged_branches(spark, PROBE, JANUARY) == []
    assert published_snapshot(spark, PROBE) == before
    assert 99 not in _published_values(spark, JANUARY)


def test_a_table_an_older_version_created_gains_its_column_comments_and_keeps_its_snapshots(spark):
    from dataclasses import replace

    from forecast_assets.lakehouse.tables import ensure_table
    from tests.iceberg_tables import table

    bare = replace(PROBE, name="described_probe")
    described = replace(bare, descriptions={"day": "The day it's for", "value": "A count \\ a tally"})
    try:
        ensure_table(spark, bare)  # as an older version made it: no comments
        assert {f.name: f.doc for f in table(bare.identifier).schema().fields} == {"day": None, "value": None}
        snapshots = [s.snapshot_id for s in table(bare.identifier).snapshots()]
        ensure_table(spark, described)
        ensure_table(spark, described)  # once they match, nothing more is committed
        found = table(bare.identifier)
        assert {f.name: f.doc for f in found.schema().fields} == described.descriptions
        assert [s.snapshot_id for s in found.snapshots()] == snapshots
        assert len(found.metadata.schemas) == 3  # the first, and one per column described
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {bare.identifier} PURGE")
