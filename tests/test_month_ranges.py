"""A range of months as one run (Dagster's single-run backfill): one Spark session, each month published alone.

Against the real ingestion job on the tests' two sample months, each table's published (``main``) snapshots read
from Iceberg before and after, and the run's lineage translated from the instance's own event log.
"""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest
from dagster import AssetKey, DagsterEventType

from forecast_assets.definitions import build_definitions
from forecast_assets.source_specs.yellow_trips import YELLOW
from taxi_demo.sample_source import TRIP_DIR
from tests.iceberg_tables import published_snapshots, table
from tests.loopback import serve_folder
from tests.sample_months import TEST_MONTHS

pytestmark = pytest.mark.integration

RAW_YELLOW, ACTUALS = "nyc_taxi.raw_yellow", "nyc_taxi.yellow_rides_hourly_actuals"
FIRST, LAST = (f"{month}-01" for month in (TEST_MONTHS[0], TEST_MONTHS[-1]))
REWRITE = {"ops": {"nyc_taxi__raw_yellow": {"config": {"rewrite_unchanged": True}}}}


@pytest.fixture
def restored(pipeline, sample_server):
    """After the test, every month staged and published again from the sample server (unchanged months are found so
    in seconds), so the next test starts from the good data."""
    yield
    assert pipeline.run_range(FIRST, LAST, sample_server).success


def _partitions_of(result, kind: DagsterEventType, key: str) -> dict[str, list]:
    found: dict[str, list] = {}
    asset = AssetKey(key.split("."))
    for event in result.all_events:
        if event.event_type != kind:
            continue
        data = event.event_specific_data
        made = getattr(data, "materialization", data)
        if made.asset_key == asset:
            found.setdefault(str(made.partition), []).append(made)
    return found


def _month_snapshots(name: str) -> dict[str, int]:
    """The snapshot that last wrote each month on ``main``, per Iceberg's own snapshot summaries."""
    loaded = table(name)
    found: dict[str, int] = {}
    snapshot = loaded.current_snapshot()
    while snapshot is not None:
        partition = (snapshot.summary.additional_properties or {}).get("dagster.partition")
        if partition and partition not in found:
            found[partition] = snapshot.snapshot_id
        snapshot = loaded.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    return found


def test_a_range_runs_once_starts_spark_once_and_records_each_month_as_its_own(pipeline, restored, sample_server):
    before = _month_snapshots(RAW_YELLOW)
    result = pipeline.run_range(FIRST, LAST, sample_server, REWRITE)

    assert result.success
    after = _month_snapshots(RAW_YELLOW)
    # Each month rewritten by this run, on its own snapshot.
    assert sorted(after) == [FIRST, LAST] and all(after[key] != before[key] for key in after)
    written = {key: table(RAW_YELLOW).snapshot_by_id(after[key]).summary.additional_properties for key in after}
    assert {props["dagster.run-id"] for props in written.values()} == {result.run_id}
    made = _partitions_of(result, DagsterEventType.ASSET_MATERIALIZATION, RAW_YELLOW)
    # One materialization per month, with that month's own snapshot and version.
    assert {key: [m.metadata["iceberg/snapshot_id"].value for m in entries] for key, entries in made.items()} == {
        key: [str(snapshot)] for key, snapshot in after.items()
    }
    assert all(entries[0].metadata["lineage/data_version"].value == str(after[key]) for key, entries in made.items())
    checks = _partitions_of(result, DagsterEventType.ASSET_CHECK_EVALUATION, RAW_YELLOW)
    assert sorted(checks) == [FIRST, LAST] and len(checks[FIRST]) == len(checks[LAST]) > 3
    actuals = _partitions_of(result, DagsterEventType.ASSET_MATERIALIZATION, ACTUALS)
    assert sorted(actuals) == [FIRST, LAST]
    starts = [e for e in result.all_events if "Starting Spark" in (e.message or "") and "done in" in (e.message or "")]
    assert len(starts) <= 1  # one session for every month and table (none when the process has one already)


def test_a_bad_month_inside_a_range_is_held_back_alone_and_the_others_publish(
    pipeline, restored, sample_source, tmp_path
):
    root = tmp_path / "source"
    shutil.copytree(sample_source.root, root)
    bad = root / TRIP_DIR / YELLOW.file_name(TEST_MONTHS[-1])
    trips = pq.read_table(bad)
    keep = np.random.default_rng(3).random(trips.num_rows) < 0.45  # under half the month: held back
    pq.write_table(trips.filter(keep), bad)
    before, published = _month_snapshots(RAW_YELLOW), published_snapshots()

    with serve_folder(root) as base_url:
        result = pipeline.run_range(FIRST, LAST, base_url, REWRITE)

    assert not result.success
    after = _month_snapshots(RAW_YELLOW)
    assert after[FIRST] != before[FIRST]  # the good month published
    assert after[LAST] == before[LAST]  # the bad one held back: main still has the month it had
    assert published_snapshots()[ACTUALS] == published[ACTUALS]  # what is built after it did not run
    made = _partitions_of(result, DagsterEventType.ASSET_MATERIALIZATION, RAW_YELLOW)
    assert made[FIRST][0].metadata["publication"].value == "published"
    assert made[LAST][0].metadata["publication"].value == "held back"
    failed = {
        (e.partition, e.check_name)
        for entries in _partitions_of(result, DagsterEventType.ASSET_CHECK_EVALUATION, RAW_YELLOW).values()
        for e in entries
        if not e.passed
    }
    assert {partition for partition, _ in failed} == {LAST}
    assert (LAST, "raw_yellow_rows_like_recent_months") in failed
    [failure] = [e for e in result.get_step_failure_events() if e.step_key == "nyc_taxi__raw_yellow"]
    message = failure.step_failure_data.user_failure_data.description
    assert message.startswith(
        f"1 of 2 months failed ({TEST_MONTHS[-1]}); The range's other months ran: {TEST_MONTHS[0]}"
    )
    assert f"{RAW_YELLOW} {TEST_MONTHS[-1]} was NOT published: " in message
    assert "\n- raw_yellow_rows_like_recent_months: " in message
    _lineage_is_per_month(pipeline, result.run_id, after)


def _lineage_is_per_month(pipeline, run_id: str, after: dict[str, int]) -> None:
    """The run's raw_yellow step as the lineage tells it: one run per month, each naming its month, its file as
    staged and its own outcome (the published month COMPLETE at its snapshot, the held one FAIL)."""
    from bridge.sources.dagster import DagsterSource
    from bridge.translate.dagster import translate_run
    from tests.test_golden import NAMING

    graph = build_definitions(pipeline.settings).resolve_asset_graph()
    records = DagsterSource(pipeline.instance, graph, NAMING).run_records(run_id)
    events = [event for _, event in translate_run(records, NAMING) if event.job.name.endswith("nyc_taxi__raw_yellow")]
    ended = {
        event.run.facets["orchestratorRun"].partition: event
        for event in events
        if event.eventType.value in ("COMPLETE", "FAIL")
    }
    assert sorted(ended) == [FIRST, LAST] and len({event.run.runId for event in ended.values()}) == 2
    assert ended[FIRST].eventType.value == "COMPLETE" and ended[LAST].eventType.value == "FAIL"
    [output] = ended[FIRST].outputs
    assert output.facets["version"].datasetVersion == str(after[FIRST])
    staged = {
        key: pipeline.instance.fetch_materializations(AssetKey("taxi_trip_files"), limit=10).records
        for key in (FIRST, LAST)
    }
    read = {
        key: [i.facets["version"].datasetVersion for i in ended[key].inputs if not i.name.endswith("raw_yellow")]
        for key in ended
    }
    for key, records in staged.items():
        fingerprint = next(
            r.asset_materialization.metadata["source_fingerprint"].value
            for r in records
            if r.asset_materialization.partition == key
        )
        assert read[key] == [fingerprint]


def test_the_ui_s_launch_backfill_of_months_is_one_run_of_the_range():
    """As the UI's *Launch backfill* on the monthly assets creates it (an asset backfill), and as the daemon then
    launches it: one run for all the months, tagged with the range, not one run a month."""
    import logging
    import time

    from dagster import instance_for_test
    from dagster._core.execution.backfill import PartitionBackfill
    from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import WorkspaceFileTarget
    from dagster._daemon.backfill import execute_backfill_iteration

    from taxi_demo.pipeline_run import WORKSPACE_FILE

    queued = {"module": "dagster._core.run_coordinator", "class": "QueuedRunCoordinator"}
    with (
        instance_for_test(overrides={"run_coordinator": queued}) as instance,
        WorkspaceProcessContext(instance, WorkspaceFileTarget(paths=[str(WORKSPACE_FILE)])) as process,
    ):
        workspace = process.create_request_context()
        graph = workspace.asset_graph
        # The monthly assets, as the UI's asset graph selects them: the sources' files and the lakehouse tables.
        monthly = [
            key
            for key in graph.materializable_asset_keys
            if graph.get(key).partitions_def is not None and graph.get(key).group_name in ("sources", "lakehouse")
        ]
        months = graph.get(monthly[0]).partitions_def.get_partition_keys()[:2]
        backfill = PartitionBackfill.from_asset_partitions(
            backfill_id="monthsinonerun", asset_graph=graph, partition_names=months, asset_selection=monthly,
            backfill_timestamp=time.time(), tags={}, dynamic_partitions_store=instance, all_partitions=False,
            title=None, description=None, run_config=None,
        )  # fmt: skip
        instance.add_backfill(backfill)
        list(execute_backfill_iteration(process, logging.getLogger("backfill")))

        runs = instance.get_runs()
        ingestion = [run for run in runs if set(run.asset_selection or ()) & {AssetKey(["nyc_taxi", "raw_yellow"])}]
        assert len(ingestion) == 1, [(run.job_name, run.tags) for run in runs]
        [run] = ingestion
        assert run.tags[ASSET_PARTITION_RANGE_START_TAG] == months[0]
        assert run.tags[ASSET_PARTITION_RANGE_END_TAG] == months[-1]
        assert "dagster/partition" not in run.tags


def test_a_month_s_error_inside_a_range_fails_that_month_alone_and_keeps_the_others_materializations():
    """``over_months`` on a real Dagster run of three months whose second raises (a Spark error, a bad file): the
    first and third are recorded as materialized, each with its own metadata, and the step fails naming the second."""
    from dagster import (
        BackfillPolicy,
        DagsterInstance,
        MaterializeResult,
        MonthlyPartitionsDefinition,
        asset,
        materialize,
    )
    from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

    from forecast_assets.assets.month_range import over_months

    months = MonthlyPartitionsDefinition(start_date="2024-01-01", end_date="2024-04-01")

    @asset(partitions_def=months, backfill_policy=BackfillPolicy.single_run())
    def table(context):
        def one_month(key: str):
            if key == "2024-02-01":
                raise RuntimeError("the month's file is not Parquet")
            yield MaterializeResult(metadata={"month_rows": int(key[5:7])})

        yield from over_months(context, AssetKey("table"), one_month)

    with DagsterInstance.ephemeral() as instance:
        tags = {ASSET_PARTITION_RANGE_START_TAG: "2024-01-01", ASSET_PARTITION_RANGE_END_TAG: "2024-03-01"}
        result = materialize([table], instance=instance, tags=tags, raise_on_error=False)

    assert not result.success
    made = {
        e.event_specific_data.materialization.partition: e.event_specific_data.materialization.metadata["month_rows"]
        for e in result.get_asset_materialization_events()
    }
    assert {key: value.value for key, value in made.items()} == {"2024-01-01": 1, "2024-03-01": 3}
    [failure] = result.get_step_failure_events()
    message = failure.step_failure_data.user_failure_data.description
    assert message.startswith("1 of 3 months failed (2024-02); The range's other months ran: 2024-01, 2024-03")
    assert "RuntimeError: the month's file is not Parquet" in message
