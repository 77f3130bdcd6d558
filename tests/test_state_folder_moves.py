"""A copied or moved state folder reads and writes only itself: its Iceberg tables (opened by Spark and by
pyiceberg), its Metaflow artifacts, its settings file and its Dagster instance; one that did not move is left alone.

Every path is checked here with readers of its own (sqlite3, json, pyiceberg's manifest readers), not with the
code that rewrites them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pytest
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import read_manifest_list

from taxi_core.catalog import CatalogConfig, open_catalog
from taxi_core.catalog_relocation import relocate_catalog
from taxi_core.metaflow_relocation import relocate_metaflow_records
from taxi_core.relocation import Move
from taxi_core.settings import PROJECT_ROOT, load_settings, write_settings_file
from taxi_core.tool_env import tool_environment
from tests.end_to_end import BuiltState, own_state_environment
from tests.moved_state_rig import PYICEBERG_TABLE, pyiceberg_snapshots

RIG_SECONDS = 1800
RELOCATED = "now read and write"


def named_path(location: str) -> Path:
    """The local path a location names (``/a``, ``file:/a``, ``file:///a``)."""
    for scheme in ("file://", "file:"):
        if location.startswith(scheme):
            return Path(unquote(location[len(scheme) :]))
    return Path(location)


def strings_naming_files(value: Any) -> Iterator[str]:
    if isinstance(value, str) and value.startswith(("/", "file:")):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings_naming_files(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_naming_files(item)


def every_location(state: Path) -> list[str]:
    """Every path the catalog's rows and the tables' metadata JSON, manifest lists and manifests name; each manifest
    list's lengths checked against its manifests' files."""
    io = PyArrowFileIO()
    names: list[str] = []
    with closing(sqlite3.connect(state / "catalog.sqlite")) as catalog:
        for location, previous in catalog.execute(
            "SELECT metadata_location, previous_metadata_location FROM iceberg_tables"
        ):
            names += [location, *([previous] if previous else [])]
        for (value,) in catalog.execute("SELECT property_value FROM iceberg_namespace_properties"):
            names += strings_naming_files(value)
    warehouse = state / "warehouse"
    for metadata in warehouse.rglob("*.metadata.json"):
        names += strings_naming_files(json.loads(metadata.read_text()))
    for manifest_list in warehouse.rglob("snap-*.avro"):
        for manifest in read_manifest_list(io.new_input(str(manifest_list))):
            names.append(manifest.manifest_path)
            assert manifest.manifest_length == named_path(manifest.manifest_path).stat().st_size, manifest_list
            entries = manifest.fetch_manifest_entry(io, discard_deleted=False)
            names += [entry.data_file.file_path for entry in entries]
    return names


def outside(state: Path) -> list[str]:
    return [name for name in every_location(state) if not named_path(name).is_relative_to(state)]


def tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` by its path there, with the hash of its bytes."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


def files_as_they_are(folder: Path) -> dict[str, tuple[int, str]]:
    """Each file's time of last change and the hash of its bytes."""
    return {name: ((folder / name).stat().st_mtime_ns, digest) for name, digest in tree(folder).items()}


def catalog_of(state: Path):
    return open_catalog(CatalogConfig.from_settings(load_settings({"TAXI_STATE_DIR": str(state)})))


class Said(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def relocation_log() -> Iterator[list[str]]:
    """What the catalog's relocation says while the block runs."""
    said = Said()
    logger = logging.getLogger("taxi_core.catalog_relocation")
    logger.addHandler(said)
    try:
        yield said.lines
    finally:
        logger.removeHandler(said)


def pyiceberg_state(tmp_path: Path) -> Path:
    """A state folder with one table written by pyiceberg in two snapshots."""
    state = tmp_path / "state"
    catalog = catalog_of(state)
    catalog.create_namespace("nyc_taxi")
    table = catalog.create_table("nyc_taxi.counts", pa.schema([("zone", pa.int32()), ("rides", pa.int64())]))
    for rides in (1, 2):
        table.append(pa.table({"zone": pa.array([rides], pa.int32()), "rides": pa.array([rides * 10])}))
    return state


def test_a_path_moves_in_the_spelling_it_was_written_in():
    move = Move("/old/state/warehouse", "/new place/warehouse")
    assert move.moved("file:/old/state/warehouse/t/data/a.parquet") == "file:/new place/warehouse/t/data/a.parquet"
    assert move.moved("file:///old/state/warehouse/t") == "file:///new place/warehouse/t"
    assert move.moved("/old/state/warehouse") == "/new place/warehouse"
    assert move.moved("/old/state/warehouse2/t") is None
    assert move.moved("s3://old/state/warehouse/t") is None
    spaced = Move("/old place/warehouse", "/new/warehouse")
    assert spaced.moved(Path("/old place/warehouse/t").as_uri()) == "file:///new/warehouse/t"
    assert move.relocated({"location": "file:/old/state/warehouse/t", "n": 1}) == {
        "location": "file:/new place/warehouse/t",
        "n": 1,
    }


def test_a_catalog_that_did_not_move_is_not_rewritten(tmp_path):
    state = pyiceberg_state(tmp_path)
    before = files_as_they_are(state / "warehouse")
    seconds = []
    for _ in range(20):
        started = time.perf_counter()
        assert relocate_catalog(state / "catalog.sqlite", state / "warehouse") == []
        seconds.append(time.perf_counter() - started)
    with relocation_log() as said:
        assert catalog_of(state).load_table("nyc_taxi.counts").scan().to_arrow().num_rows == 2
    assert files_as_they_are(state / "warehouse") == before and said == []
    print(f"the check when nothing moved: {sorted(seconds)[10] * 1000:.2f} ms (median of 20)")


def test_a_state_folder_reached_through_a_link_is_not_relocated(tmp_path):
    state = pyiceberg_state(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(state)
    before = files_as_they_are(state / "warehouse")
    assert relocate_catalog(link / "catalog.sqlite", link / "warehouse") == []
    assert files_as_they_are(state / "warehouse") == before
    assert all(named_path(name).is_relative_to(state) for name in every_location(state))


def test_a_moved_pyiceberg_catalog_reads_and_writes_only_itself(tmp_path):
    state = pyiceberg_state(tmp_path)
    moved = state.rename(tmp_path / "moved")
    with relocation_log() as said:
        table = catalog_of(moved).load_table("nyc_taxi.counts")
    assert [f"{RELOCATED} {moved}/warehouse instead of {state}/warehouse" in line for line in said] == [True]
    assert sorted(table.scan().to_arrow()["rides"].to_pylist()) == [10, 20]
    table.append(pa.table({"zone": pa.array([3], pa.int32()), "rides": pa.array([30])}))
    assert catalog_of(moved).load_table("nyc_taxi.counts").scan().to_arrow().num_rows == 3
    assert outside(moved) == [] and not state.exists()
    again = tree(moved)
    assert relocate_catalog(moved / "catalog.sqlite", moved / "warehouse") == []
    assert tree(moved) == again


def test_the_settings_file_names_the_folder_it_is_in(tmp_path):
    state = tmp_path / "state"
    write_settings_file(
        state / "settings.env",
        {
            "TAXI_TRIP_BASE_URL": (state / "sample_source" / "trip-data").as_uri(),
            "TAXI_TRUE_RATES": str(state / "sample_source" / "truth"),
            "TAXI_ZONES_BASE_URL": "https://example.org/misc",
        },
    )
    assert "$TAXI_STATE_DIR/sample_source/truth" in (state / "settings.env").read_text()
    copy = tmp_path / "copy"
    shutil.copytree(state, copy)
    settings = load_settings({"TAXI_STATE_DIR": str(copy)})
    assert settings.source_base_urls == {
        "trip": (copy / "sample_source" / "trip-data").as_uri(),
        "zones": "https://example.org/misc",
    }
    assert settings.true_rates == str(copy / "sample_source" / "truth")


FLOW = """
from metaflow import FlowSpec, step


class MovedStateFlow(FlowSpec):
    @step
    def start(self):
        self.answer = 42
        self.next(self.end)

    @step
    def end(self):
        pass


if __name__ == "__main__":
    MovedStateFlow()
"""

READ_ANSWER = """
from taxi_core.settings import load_settings
from taxi_core.tool_env import apply_tool_environment

apply_tool_environment(load_settings())
from metaflow import Flow, namespace

namespace(None)
print(Flow("MovedStateFlow").latest_run.data.answer)
"""


def in_state(state: Path) -> dict[str, str]:
    """A child process's environment on ``state``, the tools' environment of none other."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("TAXI_", "DAGSTER_", "METAFLOW_"))}
    return inherited | {"TAXI_STATE_DIR": str(state)} | tool_environment(load_settings({"TAXI_STATE_DIR": str(state)}))


def test_a_copied_metaflow_datastore_reads_its_own_artifacts(tmp_path):
    original, copy = tmp_path / "original", tmp_path / "copy"
    original.mkdir()
    flow = tmp_path / "moved_state_flow.py"
    flow.write_text(FLOW)
    ran = subprocess.run(
        [sys.executable, str(flow), "run"], env=in_state(original), cwd=tmp_path, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert relocate_metaflow_records(original / "metaflow") == 0  # what every entry point does: nothing moved
    shutil.copytree(original, copy)
    original.rename(tmp_path / "gone")
    read = subprocess.run(
        [sys.executable, "-c", READ_ANSWER], env=in_state(copy), cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert read.returncode == 0, read.stderr[-3000:]
    assert read.stdout.strip() == "42"
    assert f"now name {copy / 'metaflow' / '.metaflow'} instead of {original / 'metaflow' / '.metaflow'}" in read.stderr
    assert relocate_metaflow_records(copy / "metaflow") == 0


def run_rig(command: str, state: Path, out: Path) -> tuple[dict[str, Any], str]:
    """:mod:`tests.moved_state_rig` in a process of its own on ``state``: what it read, and what it said."""
    environment = own_state_environment(os.environ) | {"TAXI_SPARK_DRIVER_MEMORY": "2g"}
    finished = subprocess.run(
        [sys.executable, "-m", "tests.moved_state_rig", command, str(state), str(out)],
        cwd=PROJECT_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=RIG_SECONDS,
    )
    assert finished.returncode == 0, finished.stderr[-4000:]
    return json.loads(out.read_text()), finished.stderr


@dataclass
class Moves:
    """A state folder with a month ingested by the real jobs, copied twice; what each copy did and read."""

    original: Path
    by_pyiceberg: Path  # first opened by pyiceberg, here, the original in place; then written to by it
    by_spark: Path  # first opened by the Spark resource, in a process of its own, the original gone; then written to
    built: dict[str, Any]  # what the jobs' process read from the original, with Spark and with pyiceberg
    relocated_by_pyiceberg: list[str]  # what opening the first copy said
    read_by_pyiceberg: dict[str, Any]  # the first copy read by pyiceberg, once opened
    pyiceberg_wrote: int
    spark: dict[str, Any]  # the second copy read (then written to) by Spark
    spark_said: str
    original_reappeared: bool  # anything was written at the original's place while it was gone
    read_without_original: dict[str, dict[str, Any]]  # each copy read by pyiceberg while the original was gone
    original_before: dict[str, str]
    original_after: dict[str, str]


@pytest.fixture(scope="module")
def moves(end_to_end) -> Moves:
    """The state folder the real jobs built (run in the background lane: :mod:`tests.end_to_end`), copied twice and
    moved."""
    original_state: BuiltState = end_to_end.outcome("moved-state")
    root, original, built = original_state.folder, original_state.state, original_state.built
    original_before = tree(original)
    by_pyiceberg, by_spark = root / "copy_a" / "state", root / "copy_b" / "state"
    shutil.copytree(original, by_pyiceberg, symlinks=True)
    shutil.copytree(original, by_spark, symlinks=True)

    with relocation_log() as said:
        catalog = catalog_of(by_pyiceberg)
    read_by_pyiceberg = pyiceberg_snapshots(catalog)
    zones = catalog.load_table("nyc_taxi.taxi_zones")
    zones.append(zones.scan(limit=1).to_arrow())
    pyiceberg_wrote = zones.refresh().current_snapshot().snapshot_id

    gone = original.with_name("gone")
    original.rename(gone)
    try:
        spark, spark_said = run_rig("spark", by_spark, root / "spark.json")
        reappeared = original.exists()
        read_without_original = {
            name: pyiceberg_snapshots(catalog_of(copy)) for name, copy in (("a", by_pyiceberg), ("b", by_spark))
        }
    finally:
        gone.rename(original)
    return Moves(
        original,
        by_pyiceberg,
        by_spark,
        built,
        said,
        read_by_pyiceberg,
        pyiceberg_wrote,
        spark,
        spark_said,
        reappeared,
        read_without_original,
        original_before,
        tree(original),
    )


def test_each_copy_says_it_was_relocated_when_first_opened(moves):
    old = f"{moves.original}/warehouse"
    assert len(moves.relocated_by_pyiceberg) == 1
    for said, copy in ((moves.relocated_by_pyiceberg[0], moves.by_pyiceberg), (moves.spark_said, moves.by_spark)):
        assert f"its Iceberg tables {RELOCATED} {copy}/warehouse instead of {old}" in said
        assert all(table in said for table in moves.built["pyiceberg"])
    print(moves.relocated_by_pyiceberg[0], *(line for line in moves.spark_said.splitlines() if RELOCATED in line))


def test_the_copies_read_the_original_s_rows_at_every_snapshot(moves):
    built = moves.built["pyiceberg"]
    assert {"nyc_taxi.raw_yellow", "nyc_taxi.taxi_zones", PYICEBERG_TABLE} <= set(built)
    assert sum(len(snapshots) for snapshots in built.values()) >= 10  # several snapshots a table
    assert moves.read_by_pyiceberg == built
    for read in moves.read_without_original.values():
        assert {table: {id: read[table][id] for id in snapshots} for table, snapshots in built.items()} == built
    assert moves.spark["spark"] == moves.built["spark"]


def test_each_copy_s_new_snapshot_is_in_that_copy_only(moves):
    by_pyiceberg, by_spark = (moves.read_without_original[name]["nyc_taxi.taxi_zones"] for name in ("a", "b"))
    original = moves.built["pyiceberg"]["nyc_taxi.taxi_zones"]
    assert set(by_pyiceberg) - set(original) == {str(moves.pyiceberg_wrote)}
    assert set(by_spark) - set(original) == {str(moves.spark["written"])}
    rows = max(count for count, _ in original.values()) + 1  # each copy added one zone's row again
    assert by_pyiceberg[str(moves.pyiceberg_wrote)][0] == by_spark[str(moves.spark["written"])][0] == rows


def test_every_path_a_copy_s_catalog_and_metadata_name_is_inside_that_copy(moves):
    for copy in (moves.by_pyiceberg, moves.by_spark):
        assert outside(copy) == []


def test_the_original_is_left_byte_for_byte_and_nothing_is_written_where_it_was(moves):
    assert moves.original_after == moves.original_before
    assert not moves.original_reappeared


def test_a_copy_s_settings_and_dagster_instance_are_its_own(moves):
    settings = load_settings({"TAXI_STATE_DIR": str(moves.by_spark)})
    assert all(url.startswith(moves.by_spark.as_uri()) for url in settings.source_base_urls.values())
    assert Path(moves.spark["dagster_home"]) == moves.by_spark / "dagster"
    assert moves.spark["runs"] == moves.built["runs"]
