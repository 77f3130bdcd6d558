"""The ``cluster`` profile: the same pipeline on a Spark standalone cluster and a shared Postgres, on 127.0.0.1.

Only configuration differs from the embedded default. The profile keeps its own state folder
(``<state>/cluster``) so its Dagster instance, catalog and lineage never mix with the embedded ones.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from taxi_core.settings import Settings
from taxi_demo.local_cluster.postgres_server import LocalPostgres
from taxi_demo.local_cluster.services import Service
from taxi_demo.local_cluster.spark_standalone import SparkStandalone

PROFILE_FOLDER = "cluster"
INSTANCE_YAML = Path(__file__).with_name("dagster.yaml")
DAGSTER_DATABASE, CATALOG_DATABASE = "dagster", "iceberg"
# Each run's Spark application takes one core, so two ingestion runs share the two workers.
CORES_PER_RUN = 1
EXECUTOR_MEMORY = "1g"
RUNNING_FILE = "running.json"


@dataclass
class RunningCluster:
    """The started servers, and the environment that points the project at them."""

    state_dir: Path
    spark: SparkStandalone
    postgres: LocalPostgres
    postgres_server: Service
    started_seconds: float

    @property
    def environment(self) -> dict[str, str]:
        return {
            "TAXI_STATE_DIR": str(self.state_dir),
            "DAGSTER_HOME": str(self.state_dir / "dagster"),
            # A SQLAlchemy URL: dagster-postgres connects with psycopg2.
            "TAXI_DAGSTER_POSTGRES_URL": self.postgres.url(DAGSTER_DATABASE, "postgresql+psycopg2"),
            "TAXI_CATALOG": "postgres",
            "TAXI_CATALOG_URL": self.postgres.url(CATALOG_DATABASE),
            "TAXI_SPARK_MASTER": self.spark.url,
            "TAXI_SPARK_CORES_MAX": str(CORES_PER_RUN),
            "TAXI_SPARK_EXECUTOR_MEMORY": EXECUTOR_MEMORY,
        }

    def describe(self) -> list[str]:
        return [
            f"Spark master    {self.spark.url} (UI {self.spark.webui}), "
            f"{len(self.spark.running_workers)} workers of {self.spark.cores} core: logs in {self.spark.folder}",
            f"PostgreSQL      127.0.0.1:{self.postgres.port}, databases {DAGSTER_DATABASE} (Dagster) and "
            f"{CATALOG_DATABASE} (Iceberg catalog): data in {self.postgres.data_dir}",
            f"Started in {self.started_seconds:.1f} s",
        ]

    def stop(self) -> None:
        self.spark.stop()
        self.postgres.stop(self.postgres_server)
        (self.state_dir / RUNNING_FILE).unlink(missing_ok=True)


def profile_state_dir(settings: Settings) -> Path:
    return settings.state_dir / PROFILE_FOLDER


def start(settings: Settings) -> RunningCluster:
    """Start PostgreSQL, then the Spark master and its workers; stop what started if a later one fails."""
    state = profile_state_dir(settings)
    state.mkdir(parents=True, exist_ok=True)
    _stop_leftovers(state)
    started = time.monotonic()
    postgres = LocalPostgres(state / "postgres", settings.cluster_postgres_port)
    server = postgres.start([DAGSTER_DATABASE, CATALOG_DATABASE])
    spark = SparkStandalone(
        state / "spark", port=settings.cluster_spark_port, webui_port=settings.cluster_spark_ui_port
    )
    try:
        spark.start()
    except BaseException:
        postgres.stop(server)
        raise
    cluster = RunningCluster(state, spark, postgres, server, time.monotonic() - started)
    _remember(cluster)
    return cluster


@contextmanager
def running(settings: Settings) -> Iterator[RunningCluster]:
    """The started cluster; stopped on leaving, on Ctrl-C and on SIGTERM alike."""
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    cluster = start(settings)
    try:
        yield cluster
    finally:
        cluster.stop()
        signal.signal(signal.SIGTERM, previous)


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    # An exit, not an error: unwinding runs the `finally` that stops the servers; 128 + signal, as a shell reports it.
    raise SystemExit(128 + signum)


def _remember(cluster: RunningCluster) -> None:
    """Process groups of the servers, so a later start stops what a killed command left running."""
    groups = [cluster.postgres_server.pid, cluster.spark.master.pid if cluster.spark.master else None]
    groups += [worker.service.pid for worker in cluster.spark.running_workers]
    (cluster.state_dir / RUNNING_FILE).write_text(json.dumps([group for group in groups if group]))


def _is_our_server(pid: int) -> bool:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"org.apache.spark.deploy" in command or b"postgres" in command


def _stop_leftovers(state: Path) -> None:
    record = state / RUNNING_FILE
    if not record.exists():
        return
    for group in json.loads(record.read_text()):
        if not _is_our_server(group):
            continue
        try:
            os.killpg(group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
    record.unlink()
