"""Write the queued lineage into DataHub: DataHub Lite in the state folder by default, a GMS by config.

``TAXI_DATAHUB`` chooses the emitter: ``lite`` (default; ``.state/datahub/lite.sqlite``), ``rest``
(``DATAHUB_GMS_URL`` and ``DATAHUB_GMS_TOKEN``), ``file`` (``TAXI_DATAHUB_FILE``, a metadata file
that ``datahub ingest`` and ``datahub check metadata-file`` read) or ``off``. The sink keeps its own offset in the
outbox and writes upserts, so a replay leaves the graph as it was.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import flows  # noqa: F401  (points Metaflow at the state folder before Metaflow is imported)
from bridge.datahub_metadata import metadata_for
from bridge.lite import open_lite
from bridge.outbox import Outbox
from forecast_assets.settings import state_path

log = logging.getLogger(__name__)

DATAHUB_ENV = "TAXI_DATAHUB"


class RestWriter:
    """The same writes, to a DataHub GMS through the SDK's REST emitter."""

    def __init__(self, server: str, token: str | None) -> None:
        from datahub.emitter.rest_emitter import DatahubRestEmitter

        self.emitter = DatahubRestEmitter(gms_server=server, token=token)

    def write(self, mcp) -> None:
        self.emitter.emit(mcp)

    def close(self) -> None:
        self.emitter.close()


class FileWriter:
    """Metadata change proposals appended to a JSON file in DataHub's metadata-file format."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records = json.loads(path.read_text()) if path.exists() else []

    def write(self, mcp) -> None:
        self.records.append(mcp.to_obj())

    def close(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".part")
        tmp.write_text(json.dumps(self.records, indent=2))
        tmp.replace(self.path)


def sink_name(kind: str) -> str:
    """Each emitter keeps its own offset, so switching emitters sends it the whole graph."""
    return f"datahub-{kind}"


def datahub_kind() -> str:
    return os.environ.get(DATAHUB_ENV, "lite")


def open_writer():
    """The configured DataHub writer, or ``None`` when DataHub is off."""
    kind = datahub_kind()
    if kind == "off":
        return None
    if kind == "rest":
        server = os.environ.get("DATAHUB_GMS_URL")
        if not server:
            raise ValueError(f"{DATAHUB_ENV}=rest needs DATAHUB_GMS_URL (and DATAHUB_GMS_TOKEN if GMS has auth)")
        return RestWriter(server, os.environ.get("DATAHUB_GMS_TOKEN"))
    if kind == "file":
        return FileWriter(Path(os.environ.get("TAXI_DATAHUB_FILE") or state_path("datahub") / "metadata.json"))
    if kind != "lite":
        raise ValueError(f"{DATAHUB_ENV}={kind!r} is not one of lite, rest, file, off")
    return open_lite()


@dataclass(frozen=True)
class SinkResult:
    events: int
    aspects: int
    error: str | None


def metaflow_model_details(version: str) -> dict:
    """Metrics and hyperparameters of a model version, from its Metaflow run's artifacts."""
    from metaflow import Run, namespace

    namespace(None)
    data = Run(version).data
    metrics = data.metrics.set_index("candidate").loc[data.champion]
    return {
        "metrics": {f"backtest_{name}": round(float(metrics[name]), 4) for name in ("mae", "rmse", "wape")},
        "params": dict(data.model_parameters),
    }


def _with_all_runs_edges(outbox: Outbox, sink: str, mcp):
    """A job's dataset and job edges as the union over its runs, not just the latest run's.

    DataHub replaces a job's edges on each write; per-run differences (a model version that
    started reading weather) stay on the runs (DataProcessInstance) and the model versions.
    """
    from datahub.emitter.mcp import MetadataChangeProposalWrapper
    from datahub.metadata.schema_classes import DataJobInputOutputClass

    if not isinstance(mcp.aspect, DataJobInputOutputClass):
        return mcp
    edges = {
        "inputDatasets": mcp.aspect.inputDatasets or [],
        "outputDatasets": mcp.aspect.outputDatasets or [],
        "inputDatajobs": mcp.aspect.inputDatajobs or [],
    }
    merged = outbox.merge_job_edges(sink, mcp.entityUrn, edges)
    return MetadataChangeProposalWrapper(entityUrn=mcp.entityUrn, aspect=DataJobInputOutputClass(**merged))


def write_to_datahub(outbox: Outbox, writer, sink: str, model_details=metaflow_model_details) -> SinkResult:
    """Translate every event past ``sink``'s offset and write it; stop at the first failure."""
    events = aspects = 0
    offset = outbox.sink_offset(sink)
    while batch := outbox.events_after(offset):
        for queued in batch:
            try:
                for mcp in metadata_for(json.loads(queued.payload), model_details):
                    writer.write(_with_all_runs_edges(outbox, sink, mcp))
                    aspects += 1
            except Exception as err:  # DataHub down or refusing: resume from this event next pass
                log.warning("DataHub write stopped at event %s (%s)", queued.seq, err)
                return SinkResult(events, aspects, str(err))
            offset = queued.seq
            outbox.set_sink_offset(sink, offset)
            events += 1
    return SinkResult(events, aspects, None)
