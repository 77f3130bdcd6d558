"""The processes of the moved-state-folder tests (:mod:`tests.test_state_folder_moves`), each with Spark of its own.

    python -m tests.moved_state_rig build STATE OUT.json   # a month ingested into STATE by the real jobs
    python -m tests.moved_state_rig spark STATE OUT.json   # STATE opened by the Spark resource: read, then write

Each writes what it read to OUT.json: every table's snapshots, read by Spark (count and hash sum of the rows at
each) and, when building, by pyiceberg too.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from tests.sample_months import TEST_TRIPS_PER_MONTH
from tests.truth.scenario import in_state_folder

MONTH = "2025-01"
NAMESPACE = "nyc_taxi"
# A table written by pyiceberg, as the training flow writes its forecasts: its paths are spelled file:///…,
# where Spark's are file:/….
PYICEBERG_TABLE = f"{NAMESPACE}.written_by_pyiceberg"


def spark_snapshots(spark: Any) -> dict[str, dict[str, list[int]]]:
    """Each table's snapshots, each as the count and the sum of Spark's row hashes of the rows at it."""
    read: dict[str, dict[str, list[int]]] = {}
    for row in spark.sql(f"SHOW TABLES IN {NAMESPACE}").collect():
        table = f"{NAMESPACE}.{row.tableName}"
        ids = [r.snapshot_id for r in spark.sql(f"SELECT snapshot_id FROM {table}.snapshots").collect()]
        read[table] = {}
        for snapshot in ids:
            count, hashed = spark.sql(
                f"SELECT count(*), coalesce(sum(hash(*)), 0) FROM {table} VERSION AS OF {snapshot}"
            ).first()
            read[table][str(snapshot)] = [int(count), int(hashed)]
    return read


def pyiceberg_snapshots(catalog: Any) -> dict[str, dict[str, list[int]]]:
    """Each table's snapshots, each as the count and the sum of pandas' row hashes of the rows at it."""
    read: dict[str, dict[str, list[int]]] = {}
    for identifier in catalog.list_tables(NAMESPACE):
        table = catalog.load_table(identifier)
        name = ".".join(identifier)
        read[name] = {}
        for snapshot in table.snapshots():
            rows = table.scan(snapshot_id=snapshot.snapshot_id).to_pandas()
            hashed = int(pd.util.hash_pandas_object(rows, index=False).sum()) if len(rows) else 0
            read[name][str(snapshot.snapshot_id)] = [len(rows), hashed]
    return read


def stop_spark(spark: Any) -> None:
    """Stop Spark and wait for its JVM to end: as it ends it empties its scratch folder in the state folder, which
    must not change after this process has exited."""
    gateway = spark.sparkContext._gateway
    spark.stop()
    gateway.shutdown()
    gateway.proc.stdin.close()  # PySpark's gateway exits when its stdin closes
    gateway.proc.wait(timeout=120)


def build(state: Path) -> dict[str, Any]:
    settings = in_state_folder(state, [MONTH], TEST_TRIPS_PER_MONTH)
    # Dagster reads its instance's home when imported: only now.
    import pyarrow as pa
    from dagster import DagsterInstance

    from forecast_assets.definitions import build_definitions
    from taxi_core.catalog import CatalogConfig, open_catalog

    with DagsterInstance.get() as instance:
        definitions = build_definitions(settings)
        runs = [
            definitions.resolve_job_def("reference_data").execute_in_process(instance=instance),
            definitions.resolve_job_def("monthly_ingestion").execute_in_process(
                partition_key=f"{MONTH}-01", instance=instance
            ),
        ]
        assert all(run.success for run in runs)
    catalog = open_catalog(CatalogConfig.from_settings(settings))
    written = catalog.create_table(PYICEBERG_TABLE, pa.schema([("zone", pa.int32()), ("rides", pa.int64())]))
    for rides in (10, 20):
        written.append(pa.table({"zone": pa.array([1, 2], pa.int32()), "rides": pa.array([rides, rides + 1])}))
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()  # the session the jobs started
    read = {
        "spark": spark_snapshots(spark),
        "pyiceberg": pyiceberg_snapshots(catalog),
        "runs": sorted(run.run_id for run in runs),
    }
    stop_spark(spark)
    return read


def open_with_spark(state: Path) -> dict[str, Any]:
    """As a run opens it: the resources' Spark session over the state folder's catalog, then a write."""
    os.environ["TAXI_STATE_DIR"] = str(state)
    from taxi_core.settings import load_settings
    from taxi_core.tool_env import apply_tool_environment

    settings = load_settings()
    os.environ["DAGSTER_HOME"] = str(settings.dagster_home)  # as ./run sets it
    apply_tool_environment(settings)
    # Dagster reads its instance's home when imported: only now.
    from dagster import DagsterInstance

    from forecast_assets.definitions import resources_for

    spark = resources_for(settings)["spark"].session
    read = spark_snapshots(spark)
    spark.sql("INSERT INTO nyc_taxi.taxi_zones SELECT * FROM nyc_taxi.taxi_zones LIMIT 1")
    written = spark.sql("SELECT snapshot_id FROM nyc_taxi.taxi_zones.snapshots ORDER BY committed_at DESC").first()
    with DagsterInstance.get() as instance:
        runs = sorted(run.run_id for run in instance.get_runs())
        home = instance.root_directory
    stop_spark(spark)
    return {"spark": read, "written": written.snapshot_id, "runs": runs, "dagster_home": home}


if __name__ == "__main__":
    command, folder, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    outcome = build(folder) if command == "build" else open_with_spark(folder)
    out.write_text(json.dumps(outcome, indent=1, sort_keys=True))
