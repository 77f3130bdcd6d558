"""How things are named for lineage: datasets, jobs and run ids, for both tools, by a configured policy.

Datasets follow the OpenLineage naming spec (``spec/Naming.md``: the namespace is the datasource as
``scheme:[//authority]``, the name the path within it): a table is named by its storage location
(``s3://bucket`` + key; ``file`` + absolute path, or ``file://{host}`` + path for a ``file://host/path``
location, which names a local store without naming the folder it sits in) or, in the AWS Glue
catalog, by ``arn:aws:glue:{region}:{account}`` + ``table/{db}/{table}``; it carries a ``symlinks``
facet to its catalog identifier (``db.table``), which is also its DataHub name. Other datasets
(staged files, models) are named by the location a project gives them. Jobs are ``{parent}.{leaf}``
with no dot in the leaf (run ids: :mod:`bridge.translate.run_ids`). The translations ask these through
:class:`bridge.translate.translator.LineageTranslator`, where a project overrides a name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlparse

from bridge.errors import BridgeError

# Jobs Dagster makes up to run a selection of assets: the UI's Materialize button (``__ASSET_JOB``,
# ``__ASSET_JOB_0``... before Dagster 1.9), ``materialize()``, and sensors or schedules that target assets.
GENERATED_ASSET_JOB = re.compile(r"__ASSET_JOB(_\d+)?|__ephemeral_asset_job__|__anonymous_asset_job_.*")
URN_PARTS = re.compile(r"urn:li:dataset:\(urn:li:dataPlatform:(?P<platform>[^,]+),(?P<name>.+),(?P<env>[^,)]+)\)")


@dataclass(frozen=True)
class DatasetName:
    namespace: str
    name: str
    catalog_name: str | None = None  # the table identifier, for the symlinks facet
    catalog_namespace: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class NotNamed(KeyError, BridgeError):
    """A dataset the naming policy has no name for."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class IcebergTables:
    """Tables in an Iceberg catalog with a warehouse: each named by ``{warehouse}/{db}/{table}``."""

    warehouse: str
    catalog_uri: str = ""  # the symlink namespace, e.g. ``iceberg+sqlite:///path/catalog.sqlite``
    platform: str = "iceberg"

    def dataset(self, identifier: str) -> DatasetName:
        database, table = identifier.split(".", 1)
        namespace, name = location_dataset(f"{self.warehouse.rstrip('/')}/{database}/{table}")
        return DatasetName(namespace, name, identifier, self.catalog_uri or self.platform)

    def identifier_at(self, namespace: str, name: str) -> str | None:
        """The table a dataset name is the location of, or None."""
        warehouse_namespace, warehouse = location_dataset(self.warehouse.rstrip("/"))
        parts = name.removeprefix(warehouse.rstrip("/") + "/").split("/")
        if namespace != warehouse_namespace or not name.startswith(warehouse.rstrip("/") + "/") or len(parts) != 2:
            return None
        return ".".join(parts)


@dataclass(frozen=True)
class GlueTables:
    """Tables in the AWS Glue Data Catalog, named as the OpenLineage spec names Glue tables."""

    region: str
    account: str
    platform: str = "glue"

    def dataset(self, identifier: str) -> DatasetName:
        database, table = identifier.split(".", 1)
        return DatasetName(
            f"arn:aws:glue:{self.region}:{self.account}", f"table/{database}/{table}", identifier, "glue"
        )

    def identifier_at(self, namespace: str, name: str) -> str | None:
        parts = name.split("/")
        if namespace != f"arn:aws:glue:{self.region}:{self.account}" or len(parts) != 3 or parts[0] != "table":
            return None
        return f"{parts[1]}.{parts[2]}"


@dataclass(frozen=True)
class Naming:
    """A project's naming policy.

    ``tables`` names catalog tables; an asset whose key's first part is one of ``table_namespaces`` is
    the table of the same identifier (``nyc_taxi/raw_yellow`` <-> ``nyc_taxi.raw_yellow``).
    ``locations`` names every other dataset (file assets, models) by where it is kept.
    """

    tables: IcebergTables | GlueTables | None = None
    table_namespaces: tuple[str, ...] = ()
    locations: Mapping[str, str] = field(default_factory=dict)
    job_namespace: str = "default"
    datahub_env: str = "PROD"
    # Local folders and what an event calls them instead (the state folder as its datasets' authority, the
    # project as "."), so no message carries a machine's paths.
    local_folders: Mapping[str, str] = field(default_factory=dict)

    def portable_text(self, text: str | None) -> str | None:
        """``text`` (an error message, a traceback) with every local folder named as events name it."""
        if not text:
            return text
        for folder, named in sorted(self.local_folders.items(), key=lambda item: -len(item[0])):
            # A whole folder only (not /root in /root2), and a file:// URL of it named once, not file://file://.
            scheme = "(?:file://)?" if named.startswith("file://") else ""
            pattern = re.compile(f"{scheme}{re.escape(folder.rstrip('/'))}(?![\\w.-])")
            text = pattern.sub(named.replace("\\", "\\\\"), text)  # the name as it is, no group references
        return text

    def table(self, identifier: str) -> DatasetName:
        if self.tables is None:
            msg = f"No lineage name for table {identifier}: the naming policy has no catalog (tables=...)"
            raise NotNamed(msg)
        return self.tables.dataset(identifier)

    def asset(self, asset_path: Sequence[str]) -> DatasetName:
        """A Dagster asset key (its path) as a dataset."""
        identifier = self.asset_table(asset_path)
        return self.table(identifier) if identifier else self.location(self.asset_location(asset_path))

    def asset_table(self, asset_path: Sequence[str]) -> str | None:
        """The table identifier an asset is (``nyc_taxi/raw_yellow`` -> ``nyc_taxi.raw_yellow``), or None."""
        if len(asset_path) == 2 and asset_path[0] in self.table_namespaces:
            return ".".join(asset_path)
        return None

    def asset_location(self, asset_path: Sequence[str]) -> str:
        """Where an asset that is no table is kept, as ``locations`` says."""
        joined = "/".join(asset_path)
        if joined in self.locations:
            return self.locations[joined]
        msg = f"No lineage name for asset {joined}: add it to the naming policy's locations"
        raise NotNamed(msg)

    def location(self, uri: str) -> DatasetName:
        """A dataset known by where it is kept (a folder, a file, a model's place in a datastore)."""
        return DatasetName(*location_dataset(uri))

    def named(self, namespace: str, name: str) -> DatasetName:
        """A dataset known only by its OpenLineage namespace and name, with its table identifier if it is a table."""
        identifier = self.identifier_at(namespace, name)
        return self.table(identifier) if identifier else DatasetName(namespace, name)

    def identifier_at(self, namespace: str, name: str) -> str | None:
        """The table of the catalog a dataset name is (by its location, or as Glue names it), or None."""
        return self.tables.identifier_at(namespace, name) if self.tables is not None else None

    def recorded(self, name: str, kind: str) -> DatasetName:
        """What a Metaflow step recorded (a table by identifier, anything else by its location's key)."""
        if kind == "table":
            return self.table(name)
        return self.asset(name.split("/"))

    def datahub_urn(self, dataset: DatasetName) -> str:
        """Tables by identifier on the catalog's platform; other datasets by location."""
        if dataset.catalog_name:
            platform = "glue" if dataset.catalog_namespace == "glue" else getattr(self.tables, "platform", "iceberg")
            return f"urn:li:dataset:(urn:li:dataPlatform:{platform},{dataset.catalog_name},{self.datahub_env})"
        if dataset.namespace.startswith("s3://"):
            bucket = dataset.namespace.removeprefix("s3://")
            return f"urn:li:dataset:(urn:li:dataPlatform:s3,{bucket}{dataset.name},{self.datahub_env})"
        host = dataset.namespace.removeprefix("file").removeprefix("://")
        return f"urn:li:dataset:(urn:li:dataPlatform:file,{host}{dataset.name},{self.datahub_env})"


def dataset_urn_name(urn: str) -> str:
    """The name inside a dataset URN: ``db.table`` of ``urn:li:dataset:(urn:li:dataPlatform:iceberg,db.table,PROD)``."""
    found = URN_PARTS.fullmatch(urn)
    return found["name"] if found else urn


def dataset_urn_platform(urn: str) -> str:
    found = URN_PARTS.fullmatch(urn)
    return found["platform"] if found else ""


def location_dataset(uri: str) -> tuple[str, str]:
    """OpenLineage namespace and name of a storage location: ``file`` + absolute path for a local path or
    ``file:///path``, or ``scheme://authority`` + path (``file://host/path`` included)."""
    parsed = urlparse(uri)
    if parsed.scheme == "" or parsed.scheme == "file" and not parsed.netloc:
        return "file", parsed.path if parsed.scheme else os.path.abspath(uri)
    return f"{parsed.scheme}://{parsed.netloc}", parsed.path or "/"


def job_name(parent: str, leaf: str | None = None) -> str:
    """``parent`` or ``parent.leaf``; dots in the leaf become underscores so the split is unambiguous."""
    return parent if leaf is None else f"{parent}.{leaf.replace('.', '_')}"


def dagster_job_name(job: str, code_location: str) -> str:
    """A Dagster run's job for lineage: its own name, or its code location's for a job Dagster made up.

    A generated job is not something a person named or will look for; the code location is what the
    Dagster UI groups those assets under, so its ad-hoc runs become one flow per location, steps
    ``{location}.{step}``. The name is read from the run, so replays name it the same.
    """
    if not code_location or not GENERATED_ASSET_JOB.fullmatch(job):
        return job
    # Location names may hold dots ("defs.py"), which would split the job name in the wrong place.
    return re.sub(r"[^A-Za-z0-9_-]", "_", code_location)
