"""Write the queued lineage into DataHub: DataHub Lite, a GMS over REST, or a metadata file.

The sink keeps its own position in the outbox and writes upserts, so a replay leaves the graph as
it was. It translates each event (:mod:`bridge.datahub_metadata`) and writes; it reads nothing else.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.emitter.rest_emitter import DatahubRestEmitter
from datahub.metadata.schema_classes import DataJobInputOutputClass

from bridge.config import DataHubTarget
from bridge.datahub_metadata import metadata_for
from bridge.lite import open_lite
from bridge.naming import Naming
from bridge.outbox import Outbox

log = logging.getLogger(__name__)


class RestWriter:
    """The same writes, to a DataHub GMS through the SDK's REST emitter."""

    def __init__(self, server: str, token: str | None) -> None:
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


def open_writer(target: DataHubTarget):
    """The target's writer, or ``None`` when DataHub is off."""
    if target.kind == "off":
        return None
    if target.kind == "rest":
        return RestWriter(target.gms_url, target.gms_token)
    if target.kind == "file":
        return FileWriter(target.file)
    return open_lite(target.lite_path)


@dataclass(frozen=True)
class SinkResult:
    events: int
    aspects: int
    error: str | None


def _with_all_runs_edges(outbox: Outbox, sink: str, mcp):
    """A job's dataset and job edges as the union over its runs, not just the latest run's.

    DataHub replaces a job's edges on each write; per-run differences (a model version that
    started reading weather) stay on the runs (DataProcessInstance) and the model versions.
    """
    if not isinstance(mcp.aspect, DataJobInputOutputClass):
        return mcp
    edges = {
        "inputDatasets": mcp.aspect.inputDatasets or [],
        "outputDatasets": mcp.aspect.outputDatasets or [],
        "inputDatajobs": mcp.aspect.inputDatajobs or [],
    }
    merged = outbox.merge_job_edges(sink, mcp.entityUrn, edges)
    return MetadataChangeProposalWrapper(entityUrn=mcp.entityUrn, aspect=DataJobInputOutputClass(**merged))


def write_to_datahub(outbox: Outbox, writer, sink: str, naming: Naming) -> SinkResult:
    """Translate every event past ``sink``'s offset and write it; stop at the first failure."""
    events = aspects = 0
    offset = outbox.sink_offset(sink)
    while batch := outbox.events_after(offset):
        for queued in batch:
            try:
                for mcp in metadata_for(json.loads(queued.payload), naming):
                    writer.write(_with_all_runs_edges(outbox, sink, mcp))
                    aspects += 1
            except Exception as err:  # DataHub down or refusing: resume from this event next pass
                log.warning("DataHub write stopped at event %s (%s)", queued.seq, err)
                return SinkResult(events, aspects, str(err))
            offset = queued.seq
            outbox.set_sink_offset(sink, offset)
            events += 1
    return SinkResult(events, aspects, None)
