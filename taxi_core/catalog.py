"""One description of the Iceberg catalog, opened by Spark and by pyiceberg alike."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import unquote, urlsplit

from taxi_core.catalog_relocation import relocate_catalog
from taxi_core.errors import PipelineError
from taxi_core.names import CATALOG_NAME
from taxi_core.settings import Settings

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

CatalogKind = Literal["sql", "postgres", "glue"]
CATALOG_KINDS: tuple[str, ...] = ("sql", "postgres", "glue")


# Iceberg's JDBC catalog tables (JdbcUtil, schema V1: tables and views), as Iceberg itself creates them.
ICEBERG_JDBC_TABLES = (
    "CREATE TABLE IF NOT EXISTS iceberg_tables (catalog_name VARCHAR(255) NOT NULL, "
    "table_namespace VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL, metadata_location VARCHAR(1000), "
    "previous_metadata_location VARCHAR(1000), iceberg_type VARCHAR(5), "
    "PRIMARY KEY (catalog_name, table_namespace, table_name))",
    "CREATE TABLE IF NOT EXISTS iceberg_namespace_properties (catalog_name VARCHAR(255) NOT NULL, "
    "namespace VARCHAR(255) NOT NULL, property_key VARCHAR(255), property_value VARCHAR(1000), "
    "PRIMARY KEY (catalog_name, namespace, property_key))",
)


class CatalogConfigError(ValueError, PipelineError):
    """A catalog setting is missing or invalid."""


@dataclass(frozen=True)
class CatalogConfig:
    """Where the tables live.

    ``sql`` is the embedded default: an Iceberg JDBC catalog in a SQLite file and a warehouse
    folder, both in the state folder. ``postgres`` is the same JDBC catalog in a Postgres database
    (``url``), which many writers share. ``glue`` is AWS: the Glue Data Catalog with an S3 warehouse.
    """

    kind: CatalogKind = "sql"
    warehouse: str = ""
    sqlite_path: str = ""
    url: str = ""
    aws_region: str = ""
    name: str = CATALOG_NAME

    def __post_init__(self) -> None:
        if self.kind not in CATALOG_KINDS:
            msg = f"TAXI_CATALOG={self.kind!r} is not a catalog kind; use one of {', '.join(CATALOG_KINDS)}"
            raise CatalogConfigError(msg)
        if self.kind == "glue" and not self.warehouse.startswith("s3://"):
            msg = (
                f"The glue catalog needs an S3 warehouse, got TAXI_WAREHOUSE={self.warehouse!r}; "
                "set it to s3://bucket/prefix"
            )
            raise CatalogConfigError(msg)
        if self.kind == "postgres" and not self.url.startswith(("postgresql://", "postgres://")):
            msg = f"The postgres catalog needs TAXI_CATALOG_URL=postgresql://user@host:port/database, got {self.url!r}"
            raise CatalogConfigError(msg)

    @classmethod
    def from_settings(cls, settings: Settings) -> CatalogConfig:
        if settings.catalog_kind == "sql":
            return cls(
                kind="sql",
                warehouse=settings.warehouse or str(settings.state_dir / "warehouse"),
                sqlite_path=settings.catalog_sqlite or str(settings.state_dir / "catalog.sqlite"),
            )
        if settings.catalog_kind == "postgres":
            return cls(
                kind="postgres",
                warehouse=settings.warehouse or str(settings.state_dir / "warehouse"),
                url=settings.catalog_url,
            )
        return cls(kind=settings.catalog_kind, warehouse=settings.warehouse, aws_region=settings.aws_region)

    @property
    def is_jdbc(self) -> bool:
        """An Iceberg JDBC catalog (SQLite or Postgres) over a warehouse folder or bucket."""
        return self.kind in ("sql", "postgres")

    @property
    def uri_for_lineage(self) -> str:
        """Where the catalog lives, without credentials: ``iceberg+sqlite:///…`` or ``iceberg+postgresql://host/db``."""
        if self.kind == "postgres":
            parts = urlsplit(self.url)
            return f"iceberg+postgresql://{parts.hostname}:{parts.port or 5432}{parts.path}"
        return f"iceberg+sqlite://{self.sqlite_path}"

    def _postgres(self) -> tuple[str, str, str]:
        """The JDBC URL, user and password of the ``postgres`` catalog."""
        parts = urlsplit(self.url)
        jdbc = f"jdbc:postgresql://{parts.hostname}:{parts.port or 5432}{parts.path}"
        return jdbc, unquote(parts.username or ""), unquote(parts.password or "")

    def prepare_sqlite(self) -> None:
        """Put the catalog file in WAL mode (a persistent setting of the file), give it Iceberg's catalog tables, and
        its tables in this warehouse.

        Spark keeps JDBC connections open for the life of its session; in SQLite's default
        journal mode an open reader there blocks a pyiceberg commit from the Metaflow flow
        ("database is locked"). In WAL mode readers never block the writer. Iceberg's JDBC catalog (1.10) leaves
        open the query by which it looks for its own tables when it creates them; on SQLite that keeps its
        connection reading the catalog as it was then, blind to every later commit by another writer. So the
        tables are created here, and Spark is told not to (``jdbc.init-catalog-tables``).

        Spark and pyiceberg both open the catalog through here, before either reads a table: a state folder
        that was copied or moved has its tables relocated into its own warehouse first (``catalog_relocation``).
        """
        path = Path(self.sqlite_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(path) as connection:
            connection.execute("PRAGMA journal_mode=WAL")
            for statement in ICEBERG_JDBC_TABLES:
                connection.execute(statement)
        relocate_catalog(path, self.local_warehouse())

    def local_warehouse(self) -> Path:
        path = Path(self.warehouse)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def spark_conf(self) -> dict[str, str]:
        """Spark settings that register this catalog as Spark's default catalog."""
        prefix = f"spark.sql.catalog.{self.name}"
        conf = {
            prefix: "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.defaultCatalog": self.name,
            # Other writers (pyiceberg in the Metaflow flow) commit to the same tables: always
            # read the current metadata rather than a session-cached copy.
            f"{prefix}.cache-enabled": "false",
        }
        if self.kind == "sql":
            self.prepare_sqlite()
            conf |= {
                f"{prefix}.type": "jdbc",
                f"{prefix}.uri": f"jdbc:sqlite:{self.sqlite_path}",
                # V1 adds view support; pyiceberg's SqlCatalog reads and writes the same layout.
                f"{prefix}.jdbc.schema-version": "V1",
                # prepare_sqlite created the tables: Spark's own check for them would leave its connection stale.
                f"{prefix}.jdbc.init-catalog-tables": "false",
                # Wait for a concurrent writer (another process's commit) instead of failing.
                f"{prefix}.jdbc.busy_timeout": "30000",
                f"{prefix}.warehouse": self.local_warehouse().as_uri(),
            }
        elif self.kind == "postgres":
            jdbc, user, password = self._postgres()
            conf |= {
                f"{prefix}.type": "jdbc",
                f"{prefix}.uri": jdbc,
                f"{prefix}.jdbc.user": user,
                f"{prefix}.jdbc.password": password,
                f"{prefix}.jdbc.schema-version": "V1",
                # prepare_sqlite created the tables: Spark's own check for them would leave its connection stale.
                f"{prefix}.jdbc.init-catalog-tables": "false",
                f"{prefix}.warehouse": self._warehouse_uri(),
            }
        else:
            conf |= {
                f"{prefix}.type": "glue",
                f"{prefix}.warehouse": self.warehouse,
                f"{prefix}.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
            }
            if self.aws_region:
                conf[f"{prefix}.client.region"] = self.aws_region
        return conf

    def _warehouse_uri(self) -> str:
        return self.warehouse if "://" in self.warehouse else self.local_warehouse().as_uri()

    def pyiceberg_properties(self) -> dict[str, str]:
        if self.kind == "postgres":
            parts = urlsplit(self.url)
            return {
                "type": "sql",
                "uri": parts._replace(scheme="postgresql+psycopg2").geturl(),
                "warehouse": self._warehouse_uri(),
            }
        if self.kind == "sql":
            self.prepare_sqlite()
            return {
                "type": "sql",
                "uri": f"sqlite:///{self.sqlite_path}",
                "warehouse": self.local_warehouse().as_uri(),
            }
        properties = {"type": "glue", "warehouse": self.warehouse}
        if self.aws_region:
            properties |= {"glue.region": self.aws_region, "s3.region": self.aws_region}
        return properties


def open_catalog(config: CatalogConfig) -> Catalog:
    """The pyiceberg view of the same catalog Spark writes to."""
    # pyiceberg (and pyarrow) load only where a table is opened: commands that only name tables stay quick.
    from pyiceberg.catalog import load_catalog

    return load_catalog(config.name, **config.pyiceberg_properties())
