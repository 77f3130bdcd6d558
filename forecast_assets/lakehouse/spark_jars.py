"""Find the Iceberg runtime and SQLite JDBC jars: explicit config, then disk, then Maven."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

ICEBERG_VERSION = "1.10.2"
ICEBERG_RUNTIME = f"org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:{ICEBERG_VERSION}"
ICEBERG_AWS_BUNDLE = f"org.apache.iceberg:iceberg-aws-bundle:{ICEBERG_VERSION}"
HADOOP_AWS = "org.apache.hadoop:hadoop-aws:3.3.4"
SQLITE_JDBC = "org.xerial:sqlite-jdbc:3.46.1.3"
POSTGRES_JDBC = "org.postgresql:postgresql:42.7.4"
DEBIAN_SQLITE_JDBC = Path("/usr/share/java/sqlite-jdbc.jar")
DEBIAN_POSTGRES_JDBC = Path("/usr/share/java/postgresql.jar")
# Each JDBC catalog's driver: the Debian package's jar, or its Maven coordinates, and the package to install.
JDBC_DRIVERS = {
    "sql": ("SQLite", DEBIAN_SQLITE_JDBC, SQLITE_JDBC, "libxerial-sqlite-jdbc-java"),
    "postgres": ("Postgres", DEBIAN_POSTGRES_JDBC, POSTGRES_JDBC, "libpostgresql-jdbc-java"),
}


@dataclass
class JarPlan:
    """The jars Spark will load, and where each came from."""

    jars: list[str] = field(default_factory=list)
    packages: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def spark_conf(self) -> dict[str, str]:
        conf = {}
        if self.jars:
            conf["spark.jars"] = ",".join(self.jars)
        if self.packages:
            conf["spark.jars.packages"] = ",".join(self.packages)
        return conf

    def local_spark_conf(self) -> dict[str, str]:
        """For a local master: the jars on the driver JVM's own class path rather than ``spark.jars``.

        The local executor is the driver, so the classes are found there all the same; loaded by the JVM's own
        class loader, Iceberg's classes start from the class archive (``class_archive.py``) as Spark's do, and the
        executor does not fetch a copy of the 47 MB runtime jar into its folder on each start.
        """
        conf = {"spark.driver.extraClassPath": os.pathsep.join(self.jars)} if self.jars else {}
        if self.packages:
            conf["spark.jars.packages"] = ",".join(self.packages)
        return conf

    def describe(self) -> str:
        return "; ".join(self.sources)


def _bundled_iceberg_runtime() -> Path | None:
    try:  # an optional package: without it, jars come from TAXI_SPARK_JARS or Maven
        import snowpark_connect_deps_iceberg
    except ImportError:
        return None
    jar = snowpark_connect_deps_iceberg.get_jars_dir() / f"iceberg-spark-runtime-3.5_2.12-{ICEBERG_VERSION}.jar"
    return jar if jar.exists() else None


def plan_jars(catalog_kind: str, explicit: str = "") -> JarPlan:
    """Resolve jars for a catalog kind.

    ``explicit`` (``TAXI_SPARK_JARS``), a comma-separated list of jar paths, wins outright.
    """
    plan = JarPlan()
    if explicit.strip():
        paths = [p.strip() for p in explicit.split(",") if p.strip()]
        missing = [p for p in paths if not Path(p).exists()]
        if missing:
            msg = f"TAXI_SPARK_JARS names jars that do not exist: {', '.join(missing)}"
            raise FileNotFoundError(msg)
        plan.jars = paths
        plan.sources.append(f"explicit jars from TAXI_SPARK_JARS: {', '.join(paths)}")
        return plan

    runtime = _bundled_iceberg_runtime()
    if runtime:
        plan.jars.append(str(runtime))
        plan.sources.append(f"Iceberg runtime from snowpark-connect-deps-iceberg: {runtime}")
    else:
        plan.packages.append(ICEBERG_RUNTIME)
        plan.sources.append(f"Iceberg runtime not on disk; Maven package {ICEBERG_RUNTIME} (needs internet)")

    if catalog_kind in JDBC_DRIVERS:
        database, jar, coordinates, debian_package = JDBC_DRIVERS[catalog_kind]
        if jar.exists():
            plan.jars.append(str(jar.resolve()))
            plan.sources.append(f"{database} JDBC from {jar}")
        else:
            plan.packages.append(coordinates)
            plan.sources.append(
                f"{database} JDBC not on disk (apt-get install {debian_package}); "
                f"Maven package {coordinates} (needs internet)"
            )
    else:
        plan.packages += [ICEBERG_AWS_BUNDLE, HADOOP_AWS]
        plan.sources.append(f"AWS support from Maven packages {ICEBERG_AWS_BUNDLE}, {HADOOP_AWS}")
    return plan
