"""This project's lineage bridge: its naming policy and translator, its flow and its DataHub target.

Light to import (no Dagster, no Metaflow): the `taxi-lineage` read commands build it too.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from bridge.config import LineageBridge, SinkSpec
from bridge.index.picture import picture_file
from bridge.translate.naming import GlueTables, IcebergTables, Naming
from bridge.translate.translator import LineageTranslator
from taxi_core.catalog import CatalogConfig
from taxi_core.names import (
    FLOW_NAME,
    LIVE_ACCURACY_FILE,
    LOCATION_NAME,
    MODEL_CANDIDATE_PARAM,
    MODEL_NAME,
    MODEL_TARGET,
    NAMESPACE,
)
from taxi_core.settings import PROJECT_ROOT, Settings

if TYPE_CHECKING:  # the read commands load no Dagster
    from dagster import AssetKey
    from dagster._core.definitions.metadata import RawMetadataValue

    from forecast_assets.assets.training import FlowCheck

WORKSPACE_FILE = PROJECT_ROOT / "workspace.yaml"
TITLE = "NYC taxi demand: lineage across Dagster and Metaflow"


def naming(settings: Settings) -> Naming:
    """Tables by their Iceberg location and identifier; staged files by folder; the model in Metaflow's datastore.

    What lives in the state folder is named inside it (``file://{store}/warehouse/...``): no home folder
    in any name, and the same names after the folder moves.
    """
    catalog = CatalogConfig.from_settings(settings)
    tables: IcebergTables | GlueTables
    if catalog.kind == "glue":
        tables = GlueTables(region=settings.aws_region, account=settings.aws_account_id)
    else:
        catalog_uri = catalog.uri_for_lineage
        if catalog.kind == "sql":
            catalog_uri = "iceberg+sqlite:" + portable_location(settings, catalog.sqlite_path).removeprefix("file:")
        tables = IcebergTables(warehouse=portable_location(settings, catalog.warehouse), catalog_uri=catalog_uri)
    staging = portable_location(settings, settings.staging_location).rstrip("/")
    metaflow = portable_location(settings, settings.metaflow_root).rstrip("/")
    return Naming(
        tables=tables,
        table_namespaces=(NAMESPACE,),
        locations=SourceLocations(staging, {MODEL_NAME: f"{metaflow}/{FLOW_NAME}/{MODEL_NAME}"}),
        job_namespace=settings.lineage_namespace,
        local_folders={
            str(settings.state_dir): f"file://{settings.lineage_local_store}",
            str(PROJECT_ROOT): ".",
            sys.base_prefix: "<python>",
            str(Path.home()): "~",
        },
    )


class SourceLocations(Mapping[str, str]):
    """Where each registered source's staged files are, by file asset, besides the ``others`` given.

    The sources' declarations import Spark, which the lineage read commands never need: they are read
    only when a name outside ``others`` is looked up.
    """

    def __init__(self, staging: str, others: Mapping[str, str]) -> None:
        self._staging, self._others = staging, dict(others)

    @cached_property
    def _all(self) -> dict[str, str]:
        from forecast_assets.source_specs.registry import registered_sources  # the declarations import Spark

        files = {source.file_asset: f"{self._staging}/{source.staging_folder}" for source in registered_sources()}
        return files | self._others

    def __getitem__(self, key: str) -> str:
        return self._others[key] if key in self._others else self._all[key]

    def __contains__(self, key: object) -> bool:
        return key in self._others or key in self._all

    def __iter__(self) -> Iterator[str]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)


def portable_location(settings: Settings, location: str) -> str:
    """A local path (or ``file:`` URI) inside the state folder as ``file://{store}/{path inside it}``; else as given."""
    parsed = urlsplit(location)
    if parsed.scheme not in ("", "file") or parsed.netloc:
        return location
    path = Path(os.path.abspath(parsed.path if parsed.scheme else location))
    if not path.is_relative_to(settings.state_dir):
        return location
    return f"file://{settings.lineage_local_store}/{path.relative_to(settings.state_dir).as_posix()}"


@dataclass(frozen=True)
class AssetLineage:
    """Where a Dagster asset's lineage is: its dataset's name in lineage, the command that shows it, its own
    picture and the whole graph's, its DataHub URN (and, with a GMS, the GMS's page of it)."""

    dataset: str
    show: str
    picture: Path
    whole_picture: Path
    urn: str
    datahub_url: str | None = None


def asset_lineage(settings: Settings, asset_path: Sequence[str]) -> AssetLineage:
    bridge = taxi_bridge(settings)
    translator = bridge.translation
    dataset = translator.asset_dataset(list(asset_path))
    name = dataset.catalog_name or dataset.name
    urn = translator.datahub_dataset_urn(dataset)
    url = None
    if settings.datahub == "rest" and settings.datahub_gms_url:
        url = f"{settings.datahub_gms_url.rstrip('/')}/entities/{quote(urn, safe='')}"
    return AssetLineage(
        dataset=name,
        show=f"./run taxi-lineage show {name}",
        picture=picture_file(bridge.pictures_dir, name),
        whole_picture=bridge.picture_path,
        urn=urn,
        datahub_url=url,
    )


def lineage_markdown(lineage: AssetLineage, drawn: bytes | None) -> str:
    """An asset's way to its lineage as Markdown for its page: the command, its own picture inline, DataHub.

    ``drawn`` is the asset's picture as the code location loaded it (Dagster's definitions are fixed until a
    reload); the text says so and how to draw it again. Names and paths stay here, where they wrap, rather than
    in the metadata table, which cuts long values off.
    """
    lines = [f"In a shell: `{lineage.show}`", ""]
    if drawn is not None:
        svg = base64.b64encode(drawn).decode("ascii")
        lines += [
            f"![{lineage.dataset} and its lineage across Dagster and Metaflow](data:image/svg+xml;base64,{svg})",
            "",
            f"The picture as the last `./run taxi-lineage picture` before this code location loaded drew it "
            f"(`{lineage.picture}`); that command draws it again, *Reload definitions* shows the new one. "
            f"The whole graph: `{lineage.whole_picture}`.",
        ]
    else:
        lines.append(
            f"No lineage picture yet: `./run taxi-lineage picture` draws one to `{lineage.picture}` "
            f"(and the whole graph to `{lineage.whole_picture}`)."
        )
    datahub = f"[{lineage.urn}]({lineage.datahub_url})" if lineage.datahub_url else f"`{lineage.urn}`"
    lines += ["", f"In DataHub: {datahub}"]
    return "\n".join(lines)


def lite_path(settings: Settings) -> Path:
    """The DataHub Lite graph's file (TAXI_DATAHUB=lite, the default)."""
    return settings.state_dir / "datahub" / "lite.sqlite"


def datahub_sink(settings: Settings) -> SinkSpec | None:
    """DataHub as ``TAXI_DATAHUB`` says: DataHub Lite, a GMS over REST, a metadata file, or off (``None``)."""
    if settings.datahub == "off":
        return None
    if settings.datahub == "rest":
        return SinkSpec(
            "datahub-rest", {"server": settings.datahub_gms_url, "token": settings.datahub_gms_token}, "datahub"
        )
    if settings.datahub == "file":
        path = (
            Path(settings.datahub_file) if settings.datahub_file else settings.state_dir / "datahub" / "metadata.json"
        )
        return SinkSpec("datahub-file", {"path": path}, "datahub")
    return SinkSpec("datahub-lite", {"path": lite_path(settings)}, "datahub")


def _report_metadata(pathspec: str) -> Mapping[AssetKey, Mapping[str, RawMetadataValue]]:
    """The training asset's own metadata for a flow run made outside Dagster (the pass reports it)."""
    # Dagster and Metaflow load only when a pass reports a run, never for the read commands.
    from forecast_assets.assets.training import FORECAST_MODEL, FORECAST_TABLE, training_run_metadata

    model, table = training_run_metadata(pathspec)
    return {FORECAST_MODEL: model, FORECAST_TABLE: table}


def _report_checks(pathspec: str) -> Mapping[AssetKey, Sequence[FlowCheck]]:
    """The forecast table's checks as the flow run evaluated them on the rows it wrote (none for older runs)."""
    # Dagster and Metaflow load only when a pass reports a run, never for the read commands.
    from forecast_assets.assets.training import FORECAST_TABLE, training_run_checks

    return {FORECAST_TABLE: training_run_checks(pathspec)}


def _live_accuracy(settings: Settings) -> Mapping[str, Mapping[str, float]]:
    """Each model version's scores so far, as the newest scoring of nyc_taxi.forecast_accuracy left them (none before
    the first day is scored); JSON, so reading the lineage loads no table format's library."""
    path = settings.state_dir / LIVE_ACCURACY_FILE
    found: dict[str, dict[str, float]] = json.loads(path.read_text()) if path.is_file() else {}
    return found


def taxi_bridge(settings: Settings) -> LineageBridge:
    return LineageBridge(
        naming=naming(settings),
        # The bridge's own job and dataset names and facets: a subclass here renames or adds (docs/lineage.md).
        translator=LineageTranslator,
        lineage_dir=settings.path("lineage"),
        flows=(FLOW_NAME,),
        code_location=LOCATION_NAME,
        workspace_file=WORKSPACE_FILE,
        report_metadata=_report_metadata,
        report_checks=_report_checks,
        how_to_fill_graph="run `./run demo`, or a lineage pass (`./run taxi-lineage`) after Dagster or Metaflow runs",
        repair_command="taxi-lineage",
        pass_seconds=settings.lineage_pass_seconds,
        watch_command=(sys.executable, "-m", "forecast_assets.lineage_cli", "watch"),
        sinks=sinks(settings),
        dagster_home=settings.dagster_home,
        model_candidate_param=MODEL_CANDIDATE_PARAM,
        model_targets=(MODEL_TARGET,),
        live_accuracy=lambda: _live_accuracy(settings),
    )


def sinks(settings: Settings) -> tuple[SinkSpec, ...]:
    """The OpenLineage client's target always, DataHub unless it is off, the archive when configured, and the sinks
    ``TAXI_LINEAGE_SINKS`` adds."""
    configured = [SinkSpec("openlineage"), *filter(None, [datahub_sink(settings)])]
    if settings.lineage_archive:
        options = {
            "url": settings.lineage_archive,
            "endpoint_url": settings.s3_endpoint_url,
            "region": settings.aws_region,
        }
        configured.append(SinkSpec("object-store", options, name="archive"))
    configured += [
        SinkSpec(sink.kind, _in_state_folder(settings, sink.options), sink.name) for sink in settings.lineage_sinks
    ]
    return tuple(configured)


def _in_state_folder(settings: Settings, options: Mapping[str, Any]) -> dict[str, Any]:
    """A sink's relative ``path`` is inside the state folder, as all local state is, wherever the command runs."""
    path = options.get("path")
    if isinstance(path, str) and path and not Path(path).expanduser().is_absolute() and "://" not in path:
        return {**options, "path": str(settings.state_dir / path)}
    return dict(options)
