"""The one place that names things for lineage: datasets, jobs and run ids, for both tools.

Datasets follow the OpenLineage naming spec: an Iceberg table is named by its storage location
(``file`` + absolute path locally, ``s3://bucket`` + key on AWS) and carries a ``symlinks`` facet to
its catalog identifier (``nyc_taxi.raw_yellow``). Jobs are ``{parent}.{leaf}`` with no dot in the
leaf. Run ids are UUIDs derived from what identifies a run, so a replay yields the same ids.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlparse
from uuid import UUID

from openlineage.client.uuid import generate_static_uuid

from forecast_assets.lakehouse.catalog import CatalogConfig
from forecast_assets.settings import NAMESPACE, state_dir

JOB_NAMESPACE_ENV = "OPENLINEAGE_NAMESPACE"
DEFAULT_JOB_NAMESPACE = "taxi-demand"
MODEL_NAME = "forecast_model"
FILE_ASSETS = {"taxi_trip_files": "taxi", "weather_files": "weather"}
# Jobs Dagster makes up to run a selection of assets: the UI's Materialize button (``__ASSET_JOB``,
# ``__ASSET_JOB_0``... before Dagster 1.9), ``materialize()``, and sensors or schedules that target assets.
GENERATED_ASSET_JOB = re.compile(r"__ASSET_JOB(_\d+)?|__ephemeral_asset_job__|__anonymous_asset_job_.*")


@dataclass(frozen=True)
class DatasetName:
    namespace: str
    name: str
    catalog_name: str | None = None  # the table identifier, for the symlinks facet
    catalog_namespace: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def job_namespace() -> str:
    return os.environ.get(JOB_NAMESPACE_ENV) or DEFAULT_JOB_NAMESPACE


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


def run_id(started_at: datetime, *identity: str) -> UUID:
    """The same identity and start time always give the same run id."""
    return generate_static_uuid(started_at, "/".join(identity).encode())


def _location_dataset(uri: str) -> tuple[str, str]:
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return "file", parsed.path if parsed.scheme else os.path.abspath(uri)
    return f"{parsed.scheme}://{parsed.netloc}", parsed.path or "/"


def table_dataset(identifier: str, catalog: CatalogConfig | None = None) -> DatasetName:
    """An Iceberg table by its location, with its catalog identifier for the symlink."""
    catalog = catalog or CatalogConfig.from_env()
    database, table = identifier.split(".", 1)
    if catalog.kind == "glue":
        region = catalog.aws_region or os.environ.get("AWS_REGION", "")
        account = os.environ.get("AWS_ACCOUNT_ID", "")
        return DatasetName(f"arn:aws:glue:{region}:{account}", f"table/{database}/{table}", identifier, "glue")
    warehouse = catalog.warehouse.rstrip("/")
    namespace, name = _location_dataset(f"{warehouse}/{database}/{table}")
    return DatasetName(namespace, name, identifier, f"iceberg+sqlite://{catalog.sqlite_path}")


def staging_dataset(asset_name: str, staging_location: str | None = None) -> DatasetName:
    """A file asset: the folder of its staged monthly files."""
    location = staging_location or os.environ.get("TAXI_STAGING") or str(state_dir() / "staging")
    namespace, name = _location_dataset(f"{location.rstrip('/')}/{FILE_ASSETS[asset_name]}")
    return DatasetName(namespace, name)


def model_dataset() -> DatasetName:
    """The trained model, kept in Metaflow's datastore; its versions are run pathspecs."""
    root = os.environ.get("METAFLOW_DATASTORE_SYSROOT_S3") or os.environ.get("METAFLOW_DATASTORE_SYSROOT_LOCAL")
    namespace, path = _location_dataset(root or str(state_dir() / "metaflow"))
    return DatasetName(namespace, f"{path.rstrip('/')}/TrainForecastModelFlow/{MODEL_NAME}")


def dataset_for_asset(asset_path: list[str]) -> DatasetName:
    """A Dagster asset key as a dataset: tables by identifier, files by staging folder, the model."""
    if len(asset_path) == 2 and asset_path[0] == NAMESPACE:
        return table_dataset(".".join(asset_path))
    if asset_path == [MODEL_NAME]:
        return model_dataset()
    if len(asset_path) == 1 and asset_path[0] in FILE_ASSETS:
        return staging_dataset(asset_path[0])
    msg = f"No lineage name for asset {'/'.join(asset_path)}; add it to bridge/naming.py"
    raise KeyError(msg)


def dataset_for_metaflow_use(name: str, kind: str) -> DatasetName:
    """What a Metaflow step recorded (``flows/lineage.py``) as a dataset."""
    return model_dataset() if kind == "model" else table_dataset(name)


def datahub_urn(dataset: DatasetName, env: str = "PROD") -> str:
    """The DataHub URN of a dataset: tables on platform iceberg (glue on AWS) by identifier."""
    if dataset.catalog_name:
        platform = "glue" if dataset.catalog_namespace == "glue" else "iceberg"
        return f"urn:li:dataset:(urn:li:dataPlatform:{platform},{dataset.catalog_name},{env})"
    if dataset.namespace.startswith("s3://"):
        return f"urn:li:dataset:(urn:li:dataPlatform:s3,{dataset.namespace.removeprefix('s3://')}{dataset.name},{env})"
    return f"urn:li:dataset:(urn:li:dataPlatform:file,{dataset.name},{env})"
