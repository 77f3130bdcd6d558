"""Dagster resources: the Iceberg catalog, the Spark session over it, staging, and where sources download from."""

import os
import time
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, Self

from dagster import ConfigurableResource, get_dagster_logger
from dagster_pyspark.resources import spark_session_from_config
from pydantic import Field, PrivateAttr
from pyiceberg.catalog import Catalog
from pyspark.sql import SparkSession

from forecast_assets.lakehouse.class_archive import ClassArchive
from forecast_assets.lakehouse.commits import open_catalog_once
from forecast_assets.lakehouse.driver_exit import stop_with_process
from forecast_assets.lakehouse.spark_session import SparkOptions, on_loopback, spark_conf
from forecast_assets.lakehouse.table_state import jvm
from forecast_assets.source_specs.spec import SourceFile, SourceSpec
from forecast_assets.sources.download import RetryPolicy
from forecast_assets.sources.staging import LocalStaging, S3Staging, Staging, parse_s3_location
from taxi_core.catalog import CatalogConfig, open_catalog
from taxi_core.names import CATALOG_NAME
from taxi_core.progress import reporting_while
from taxi_core.settings import Settings
from taxi_core.tool_env import child_environment

CATALOG_FIELDS = {field.name for field in fields(CatalogConfig)}
SPARK_OPTION_FIELDS = {field.name for field in fields(SparkOptions)}


class IcebergCatalogResource(ConfigurableResource[Any]):
    """The Iceberg catalog: ``sql`` (SQLite JDBC), ``postgres`` (Postgres JDBC) or ``glue`` (S3 warehouse).

    Its fields are :class:`CatalogConfig`'s, so a run's launchpad shows them; the config passes through whole.
    """

    kind: str = "sql"
    warehouse: str = ""
    sqlite_path: str = ""
    url: str = ""
    aws_region: str = ""
    name: str = CATALOG_NAME
    _catalog: Catalog | None = PrivateAttr(default=None)

    @classmethod
    def of(cls, config: CatalogConfig) -> Self:
        return cls(**asdict(config))

    def config(self) -> CatalogConfig:
        return CatalogConfig(**self.model_dump(include=CATALOG_FIELDS))

    def load(self) -> Catalog:
        """pyiceberg's view of the catalog, opened once per resource (each table load reads the catalog anew)."""
        return open_catalog(self.config())


class SparkResource(ConfigurableResource[Any]):
    """One SparkSession per process, built with dagster-pyspark, with the Iceberg catalog as default."""

    catalog: IcebergCatalogResource
    state_dir: str
    # SparkOptions' fields, so a run's launchpad shows them; the options pass through whole.
    master: str = "local[*]"
    driver_memory: str = "4g"
    executor_memory: str = "1g"
    cores_max: int | None = None
    jars: str = ""
    class_archive: bool = True
    conf: dict[str, str] = {}
    extra_config: dict[str, str] = {}
    _session: SparkSession | None = PrivateAttr(default=None)

    @classmethod
    def of(cls, catalog: CatalogConfig, options: SparkOptions, state_dir: Path) -> Self:
        return cls(catalog=IcebergCatalogResource.of(catalog), state_dir=str(state_dir), **asdict(options))

    def options(self) -> SparkOptions:
        return SparkOptions(**self.model_dump(include=SPARK_OPTION_FIELDS))

    def spark_config(self) -> dict[str, str]:
        return spark_conf(self.catalog.config(), Path(self.state_dir), self.options(), self.extra_config)

    @property
    def session(self) -> SparkSession:
        # Built on first use: file assets never pay for a JVM.
        if self._session is None:
            # Spark binds its web UI to SPARK_LOCAL_IP, which only its launcher's environment sets.
            local_ip = (
                {"SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")} if on_loopback(self.master) else {}
            )
            with child_environment(local_ip):
                self._session = self._start()
        return self._session

    def _start(self) -> SparkSession:
        """Spark, started and connected to the catalog, saying so while it starts (often 10-70 s, silent)."""
        log = get_dagster_logger()
        timing = Path(self.state_dir) / "tmp" / "spark_start_seconds"
        last = timing.read_text().strip() if timing.exists() else ""
        usual = f"it took {last} s last time" if last else "it takes 10-70 s, longer on a busy machine"
        started = time.monotonic()
        with reporting_while(log.info, f"Starting Spark ({self.master}; {usual})"):
            session = self._started(self.spark_config(), log)
            stop_with_process(session)
            session.sparkContext.setLogLevel("ERROR")
            open_catalog_once(session)
        timing.parent.mkdir(parents=True, exist_ok=True)
        timing.write_text(f"{time.monotonic() - started:.0f}")
        return session

    def _started(self, config: dict[str, str], log: Any) -> SparkSession:
        """The session, its driver JVM started from the class archive when there is one (``class_archive.py``)."""
        folder = Path(self.state_dir) / "tmp" / "spark-classes"
        class_path = config.get("spark.driver.extraClassPath", "")
        archive = ClassArchive.for_spark(folder, class_path) if self.class_archive else None
        options = archive.java_options() if archive else ""
        if archive is None or not options:
            return _session_from(config)
        plain = config.get("spark.driver.extraJavaOptions", "")
        try:
            session = _session_from({**config, "spark.driver.extraJavaOptions": f"{plain} {options}"})
        except Exception as err:  # PySpark: the Java gateway exited before it said its port
            if archive.records(options):
                raise
            # A damaged archive crashes the JVM as it starts: the run goes on without it, and it is recorded again.
            log.warning(f"Spark did not start from {archive.archive} ({err}); starting it without that class archive")
            archive.discard()
            return _session_from(config)
        if archive.records(options):
            archive.recording_by(jvm(session).java.lang.ProcessHandle.current().pid())
            log.info("Spark's classes are being recorded: later runs start from them, a few seconds sooner")
        return session


def _session_from(config: dict[str, str]) -> SparkSession:
    """dagster-pyspark's session builder, which ships untyped."""
    session: SparkSession = spark_session_from_config(config)  # type: ignore[no-untyped-call]
    return session


class StagingResource(ConfigurableResource[Any]):
    """Where downloaded files are kept: a local folder, or ``s3://bucket/prefix``."""

    location: str
    s3_region: str = ""
    s3_endpoint_url: str = ""

    @classmethod
    def of(cls, settings: Settings) -> Self:
        return cls(
            location=settings.staging_location, s3_region=settings.aws_region, s3_endpoint_url=settings.s3_endpoint_url
        )

    def store(self) -> Staging:
        if self.location.startswith("s3://"):
            # dagster-aws loads Dagster's test utilities and daemon modules when imported (about a second
            # where nothing else needs them, as in collecting the tests): imported only where staging is on S3.
            from dagster_aws.s3 import S3Resource

            bucket, prefix = parse_s3_location(self.location)
            client = S3Resource(
                region_name=self.s3_region or None, endpoint_url=self.s3_endpoint_url or None
            ).get_client()
            return S3Staging(client, bucket, prefix)
        return LocalStaging(Path(self.location))


class SourceResource(ConfigurableResource[Any]):
    """Where each source's files are downloaded from: a base URL (http(s) or file://) by source name."""

    base_urls: dict[str, str] = Field(
        default_factory=dict, description="By source name; a source not named here uses its default base URL."
    )
    download_dir: str = Field(description="Where a download is written before it is verified and staged.")
    download_attempts: int = RetryPolicy.attempts
    first_retry_wait_seconds: float = RetryPolicy.first_wait_seconds
    read_timeout_seconds: float = RetryPolicy.read_timeout_seconds

    @classmethod
    def of(cls, settings: Settings) -> Self:
        return cls(base_urls=settings.source_base_urls, download_dir=str(settings.state_dir / "tmp"))

    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(
            attempts=self.download_attempts,
            first_wait_seconds=self.first_retry_wait_seconds,
            read_timeout_seconds=self.read_timeout_seconds,
        )

    def base_url(self, source: SourceSpec) -> str:
        return self.base_urls.get(source.name) or source.default_base_url

    def url(self, source: SourceSpec, file: SourceFile) -> str:
        return f"{self.base_url(source).rstrip('/')}/{file.path}"
