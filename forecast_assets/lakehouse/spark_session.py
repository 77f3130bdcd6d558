"""Build the one SparkSession a process uses, wired to the Iceberg catalog."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from forecast_assets.lakehouse.spark_jars import plan_jars
from taxi_core.catalog import CatalogConfig
from taxi_core.settings import Settings

log = logging.getLogger(__name__)

LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")

BASE_SPARK_CONF = {
    "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    "spark.ui.showConsoleProgress": "false",
    # A run's driver serves no web UI (it would take port 4040 and up on a shared machine): the run's own log says
    # what Spark does. TAXI_SPARK_CONF='{"spark.ui.enabled": "true"}' turns it back on.
    "spark.ui.enabled": "false",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    # Files written by pandas hold TIMESTAMP(NANOS), which Spark refuses to read otherwise; they
    # arrive as epoch nanoseconds and the trip reader turns them into timestamps.
    "spark.sql.legacy.parquet.nanosAsLong": "true",
    # Rows brought to the driver (an audit's key hashes) and back come as Arrow batches, not pickled rows.
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}


# A local driver lives one run and is its own executor. HotSpot's defaults are for a long-lived server: a cold month
# run spent 17.5 s of CPU (of 55 s in the JVM) in the C2 compiler, optimising methods that ran a few thousand times
# and never again. Promoting a method to C2 only once it is 4-10x hotter than the defaults cut that to 10.5 s with task
# time unchanged (a run's CPU 6-14 s less; its wall time on a quiet machine no shorter: see docs/benchmarks.md). C1
# alone (TieredStopAtLevel=1) cut it to nothing but nearly doubled the tasks' CPU (21.7 -> 39.4 s).
SHORT_LIVED_DRIVER_JAVA_OPTIONS = (
    "-XX:Tier4InvocationThreshold=40000 -XX:Tier4MinInvocationThreshold=20000 "
    "-XX:Tier4CompileThreshold=60000 -XX:Tier4BackEdgeThreshold=400000"
)


def on_loopback(master: str) -> bool:
    """A master on this machine: ``local[...]``, or a standalone cluster on 127.0.0.1 (the cluster profile)."""
    return master.startswith("local") or urlsplit(master).hostname in ("127.0.0.1", "localhost")


@dataclass(frozen=True)
class SparkOptions:
    """How Spark runs, as the settings say (``TAXI_SPARK_*``): one object from the settings to the session."""

    master: str = "local[*]"
    driver_memory: str = "4g"
    executor_memory: str = "1g"
    cores_max: int | None = None
    jars: str = ""
    # Start the driver JVM from an archive of Spark's classes (class_archive.py).
    class_archive: bool = True
    # More Spark settings (TAXI_SPARK_CONF): they win over the project's own.
    conf: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: Settings) -> SparkOptions:
        return cls(
            master=settings.spark_master,
            driver_memory=settings.spark_driver_memory,
            executor_memory=settings.spark_executor_memory,
            cores_max=settings.spark_cores_max,
            jars=settings.spark_jars,
            class_archive=settings.spark_class_archive,
            conf=dict(settings.spark_conf),
        )


def spark_conf(
    catalog: CatalogConfig,
    state_dir: Path,
    options: SparkOptions = SparkOptions(),
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Every Spark setting for this project; the options' own settings override them, ``extra`` (a run's launchpad)
    overrides all."""
    master = options.master
    jars = plan_jars(catalog.kind, options.jars)
    log.info("Spark jars: %s", jars.describe())
    conf = {"spark.master": master, "spark.driver.memory": options.driver_memory, **BASE_SPARK_CONF}
    # Spark's own session catalog is unused, but it would create spark-warehouse/ in the cwd.
    conf["spark.sql.warehouse.dir"] = (state_dir / "spark-warehouse").as_uri()
    java_options = f"-Dlog4j.configurationFile={LOG4J_CONFIG.as_uri()}"
    if on_loopback(master):
        # A laptop run stays on loopback: Spark would otherwise bind to the first network interface.
        conf |= {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    if master.startswith("local"):
        conf["spark.local.dir"] = str(state_dir / "tmp" / "spark")
        java_options = f"{java_options} {SHORT_LIVED_DRIVER_JAVA_OPTIONS}"
    else:  # a cluster's workers choose their executors' scratch folders (SPARK_LOCAL_DIRS)
        conf["spark.executor.memory"] = options.executor_memory
        if options.cores_max:
            conf["spark.cores.max"] = str(options.cores_max)
    conf["spark.driver.extraJavaOptions"] = java_options
    conf |= (jars.local_spark_conf() if master.startswith("local") else jars.spark_conf()) | catalog.spark_conf()
    if catalog.kind == "glue":
        conf["spark.hadoop.fs.s3a.aws.credentials.provider"] = "com.amazonaws.auth.DefaultAWSCredentialsProviderChain"
    return conf | options.conf | dict(extra or {})
