"""Any order of runs and partitions: each table version's lineage names the file version it really read.

A small project of the same shape as this one (a monthly file asset, a monthly table asset built from
it) runs on a real Dagster instance with its default run-sharded SQLite storage; no JVM. Hypothesis
draws histories: months ingested in any order, files republished, a table rebuilt alone, and tables
that do or do not say what they read. The assets keep their own record of what each table version
read (the truth); the bridge's events must agree with it, version by version, and no step may name
a dataset as both its input and its output.
"""

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from dagster import (
    AssetExecutionContext,
    AssetKey,
    DataVersion,
    Definitions,
    MaterializeResult,
    MetadataValue,
    StaticPartitionsDefinition,
    asset,
    define_asset_job,
    instance_for_test,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase
from openlineage.client.serde import Serde

from bridge.sources.dagster import DagsterSource
from bridge.translate.dagster_inputs import input_versions_metadata
from bridge.translate.naming import IcebergTables, Naming
from taxi_core.settings import PROJECT_ROOT

MONTHS = ["2024-11", "2024-12", "2025-01"]
PARTITIONS = StaticPartitionsDefinition(MONTHS)
NAMING = Naming(
    tables=IcebergTables("/warehouse"),
    table_namespaces=("shop",),
    locations={"files": "/staging/files"},
    job_namespace="truth",
)
FILES, TABLE = AssetKey("files"), AssetKey(["shop", "orders"])


class World:
    """What the assets really did: the staged file per month, and what each table version read."""

    def __init__(self, declare: bool) -> None:
        self.declare = declare
        self.staged: dict[str, str] = {}
        self.read_by_version: dict[str, str] = {}
        self.revision = 0


WORLD = World(declare=True)


def _fingerprint(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()


@asset(key=FILES, partitions_def=PARTITIONS)
def files(context: AssetExecutionContext) -> MaterializeResult:
    WORLD.revision += 1
    content = f"{context.partition_key} revision {WORLD.revision}"
    WORLD.staged[context.partition_key] = content
    return MaterializeResult(data_version=DataVersion(_fingerprint(content)))


@asset(key=TABLE, deps=[FILES], partitions_def=PARTITIONS)
def orders(context: AssetExecutionContext) -> MaterializeResult:
    read = _fingerprint(WORLD.staged[context.partition_key])
    WORLD.revision += 1
    version = str(WORLD.revision)
    WORLD.read_by_version[version] = read
    metadata = {"iceberg/snapshot_id": MetadataValue.int(int(version))}
    if WORLD.declare:
        metadata |= input_versions_metadata({FILES.to_user_string(): read})
    return MaterializeResult(metadata=metadata, data_version=DataVersion(version))


DEFINITIONS = Definitions(
    assets=[files, orders],
    jobs=[
        define_asset_job("ingestion", selection=[FILES, TABLE]),
        define_asset_job("file_only", selection=[FILES]),
        define_asset_job("table_only", selection=[TABLE]),
    ],
)
GRAPH = DEFINITIONS.resolve_asset_graph()

# Thirty histories of up to six runs each: the runs' stdout is not captured to files, nor logged to the console.
NO_CAPTURED_LOGS = {
    "compute_logs": {"module": "dagster._core.storage.noop_compute_log_manager", "class": "NoOpComputeLogManager"}
}
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}

# A history: (job, month) steps. A table rebuilt alone needs its month's file staged first.
STEPS = st.tuples(st.sampled_from(["ingestion", "file_only", "table_only"]), st.sampled_from(MONTHS))


def _possible(history: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The history, with a table rebuilt before its month's file was ever staged made a whole ingestion."""
    staged, possible = set(), []
    for job, month in history:
        possible.append(("ingestion", month) if job == "table_only" and month not in staged else (job, month))
        staged.add(month)
    return possible


def _events(instance) -> list[dict]:
    source = DagsterSource(instance, GRAPH, NAMING, default_location="shop")
    events, _ = source.read({})
    assert source.untranslated == []
    return [json.loads(Serde.to_json(event)) for _, event in events]


def _version(dataset: dict) -> str | None:
    return dataset.get("facets", {}).get("version", {}).get("datasetVersion")


@pytest.fixture(scope="module")
def new_instance(tmp_path_factory) -> Path:
    """A new Dagster instance's folder, its SQLite files created and migrated once: each history starts
    from a copy of it (a third of a short history's time was Dagster creating them again)."""
    folder = tmp_path_factory.mktemp("new_instance")
    with instance_for_test(overrides=NO_CAPTURED_LOGS, temp_dir=str(folder)) as instance:
        _ = instance.run_storage, instance.event_log_storage, instance.schedule_storage
    return folder


# Hypothesis keeps its examples in the state folder, like every other tool: the checkout gains no folder.
# Twelve histories each way (an asset that declares what it read, and one that does not), as two tests that
# parallel workers can share.
@pytest.mark.parametrize("declare", [True, False], ids=["declared", "undeclared"])
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=DirectoryBasedExampleDatabase(PROJECT_ROOT / ".state" / "hypothesis"),
)
@given(history=st.lists(STEPS, min_size=2, max_size=6).map(_possible))
def test_every_table_version_names_the_file_version_it_read(new_instance, history, declare):
    global WORLD
    WORLD = World(declare)
    with tempfile.TemporaryDirectory() as scratch:
        home = shutil.copytree(new_instance, Path(scratch) / "home")
        with instance_for_test(overrides=NO_CAPTURED_LOGS, temp_dir=str(home)) as instance:
            for job, month in history:
                result = DEFINITIONS.resolve_job_def(job).execute_in_process(
                    instance=instance, partition_key=month, run_config=QUIET
                )
                assert result.success
            events = _events(instance)
    table_name = NAMING.asset(TABLE.path).name
    checked = 0
    for event in events:
        inputs = {d["name"]: _version(d) for d in event.get("inputs", [])}
        outputs = {d["name"]: _version(d) for d in event.get("outputs", [])}
        assert not inputs.keys() & outputs.keys(), f"{event['job']['name']} reads and writes the same dataset"
        if event["eventType"] != "COMPLETE" or outputs.get(table_name) is None or "." not in event["job"]["name"]:
            continue
        version = outputs[table_name]
        assert inputs == {NAMING.asset(FILES.path).name: WORLD.read_by_version[version]}, (history, version)
        checked += 1
    assert checked == len(WORLD.read_by_version)


@pytest.mark.parametrize("declare", [True, False])
def test_january_built_after_december_names_january_s_file(declare):
    """The history that went wrong: two months ingested in a row, each its own run (a run-sharded event log)."""
    global WORLD
    WORLD = World(declare)
    with instance_for_test() as instance:
        for month in ("2024-12", "2025-01"):
            DEFINITIONS.resolve_job_def("ingestion").execute_in_process(instance=instance, partition_key=month)
        events = _events(instance)
    step = [e for e in events if e["job"]["name"] == "ingestion.shop__orders" and e["eventType"] == "COMPLETE"]
    read = [_version(e["inputs"][0]) for e in step]
    assert read == [_fingerprint(WORLD.staged["2024-12"]), _fingerprint(WORLD.staged["2025-01"])]
