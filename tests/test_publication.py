"""Write-audit-publish on a real Iceberg table: staged months stay invisible until published."""

from __future__ import annotations

import pytest

from forecast_assets.lakehouse.publication import Publication, StagedMonth, staging_branch
from forecast_assets.lakehouse.table_state import table_state
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


def _open(spark, window: MonthWindow) -> Publication:
    return Publication.open(spark, PROBE, window, f"{window.month}-01")


def _stage(spark, window, values, run_id, **properties) -> tuple[Publication, StagedMonth]:
    publication = _open(spark, window)
    props = {"dagster.partition": f"{window.month}-01", "dagster.run-id": run_id, **properties}
    return publication, publication.stage(_rows(spark, window, values), run_id, props)


def _publish(staged: tuple[Publication, StagedMonth]):
    publication, month = staged
    return publication.publish(month, lambda snapshot_id: {"audited": snapshot_id}).write


def _main(spark) -> int | None:
    """``main`` as a fresh load of the table says, apart from any publication's own state."""
    return table_state(spark, PROBE.identifier).ref("main")


def _branches(spark, window: MonthWindow) -> list[str]:
    return table_state(spark, PROBE.identifier).branches(prefix=staging_branch(window, ""))


def test_a_staged_month_is_invisible_until_published(spark):
    before = _open(spark, JANUARY).main
    publication, staged = _stage(spark, JANUARY, [1, 2, 3], "run-aaaa1111", **{"source.fingerprint": "sha256:one"})
    assert _main(spark) == before == publication.main
    assert _published_values(spark, JANUARY) == []
    assert sorted(row["value"] for row in staged.rows(spark).collect()) == [1, 2, 3]

    write = _publish((publication, staged))

    assert _main(spark) == write.snapshot_id == staged.write.snapshot_id == publication.main
    assert _published_values(spark, JANUARY) == [1, 2, 3]
    assert _branches(spark, JANUARY) == []  # the branch is gone once published
    month = _open(spark, JANUARY).published
    assert month == publication.published  # the publication's state is updated by its own operations
    assert month.snapshot_id == write.snapshot_id
    assert month.built_from({"source.fingerprint": "sha256:one"})
    assert not month.built_from({"source.fingerprint": "sha256:two"})
    assert _open(spark, JANUARY).published_audits == {"audited": write.snapshot_id}


def test_a_month_staged_while_another_is_published_is_cherry_picked(spark):
    _publish(_stage(spark, JANUARY, [1, 2, 3], "run-bbbb2222"))
    february = _stage(spark, FEBRUARY, [20, 21], "run-cccc3333", **{"source.fingerprint": "sha256:feb"})
    january_again = _publish(_stage(spark, JANUARY, [4, 5], "run-dddd4444"))  # main moves on meanwhile

    write = _publish(february)

    assert write.snapshot_id != february[1].write.snapshot_id  # a new snapshot on top of main
    assert _published_values(spark, FEBRUARY) == [20, 21]
    assert _published_values(spark, JANUARY) == [4, 5]  # the month published meanwhile is kept
    month = _open(spark, FEBRUARY).published
    assert month.snapshot_id == write.snapshot_id
    assert month.built_from({"source.fingerprint": "sha256:feb"})  # properties found through the pick
    assert _open(spark, JANUARY).published.snapshot_id == january_again.snapshot_id


def test_a_republished_month_replaces_its_rows(spark):
    _publish(_stage(spark, JANUARY, [7, 8, 9], "run-eeee5555"))
    _publish(_stage(spark, JANUARY, [7, 8], "run-ffff6666"))
    assert _published_values(spark, JANUARY) == [7, 8]


def test_publishing_drops_the_branches_earlier_audits_of_the_month_left(spark):
    held_back = _stage(spark, JANUARY, [66], "run-hhhh8888")  # an audit held it back: its branch stays
    cut_only = _open(spark, JANUARY)
    branch = staging_branch(JANUARY, "run-iiii9999")  # a run that ended after cutting its branch
    spark.sql(f"ALTER TABLE {PROBE.identifier} CREATE BRANCH {branch}")
    assert {held_back[1].branch, branch} <= set(_branches(spark, JANUARY))
    publication, staged = _stage(spark, JANUARY, [1], "run-jjjj0000")
    outcome = publication.publish(staged, lambda snapshot_id: {})
    assert {(left.branch, left.run_id) for left in outcome.dropped} == {
        (held_back[1].branch, "run-hhhh8888"),
        (branch, None),
    }
    assert _branches(spark, JANUARY) == []
    assert cut_only.main != _main(spark)  # a publication opened earlier keeps what it loaded until it acts


def test_a_discarded_stage_leaves_main_as_it_was(spark):
    before = _main(spark)
    publication, staged = _stage(spark, JANUARY, [99], "run-gggg7777")
    assert staged.branch in _branches(spark, JANUARY)
    publication.discard(staged)
    assert _branches(spark, JANUARY) == []
    assert _main(spark) == before == publication.main
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


def test_the_session_reads_what_another_writer_committed_after_it_opened_the_catalog(spark):
    """The Metaflow flow commits with pyiceberg while Spark sessions are open: their next reading is that commit."""
    from taxi_core.catalog import CatalogConfig, open_catalog
    from taxi_core.settings import load_settings

    _publish(_stage(spark, JANUARY, [1, 2], "freshness"))
    seen_before = _main(spark)
    table = open_catalog(CatalogConfig.from_settings(load_settings())).load_table(PROBE.identifier)
    table.append(table.scan(row_filter="day >= '2025-01-01' and day < '2025-02-01'").to_arrow())
    committed = table.refresh().current_snapshot().snapshot_id
    assert committed != seen_before
    assert _main(spark) == committed
    assert _published_values(spark, JANUARY) == [1, 1, 2, 2]
