"""Write the queued lineage into DataHub: DataHub Lite, a GMS over REST, or a metadata file.

Each is a sink for :func:`bridge.sinks.drain.drain`: it translates one event (:mod:`bridge.translate.datahub`)
and writes its aspects as upserts, so a replay leaves the graph as it was (every aspect carries its
event's time as ``lastObserved``, so even that does not change).

Each sink knows where it is in a way that follows the sink itself:
- DataHub Lite keeps its place inside its own file, written in the same transaction as a batch of
  aspects: a new, emptied or replaced file starts from the first event, a killed pass rolls back.
- A GMS's place is kept in the outbox per server URL, so pointing at another GMS sends it everything.
- A metadata file's place is kept in the outbox and starts over when the file is gone.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import SecretStr, field_validator

from bridge.outbox.queue import QueuedEvent
from bridge.redaction import redact
from bridge.sinks.contract import Sink, SinkConfig, SinkContext, SinkDamaged
from bridge.sinks.failures import Unsendable
from bridge.sinks.file_place import CREATE_PLACE_TABLE, keep_place, place_in_file, set_aside
from bridge.sinks.job_edges import Edges, EdgeStore
from bridge.translate.translator import LineageTranslator

if TYPE_CHECKING:
    from datahub.emitter.mcp import MetadataChangeProposalWrapper
    from datahub.emitter.rest_emitter import DataHubRestEmitter
    from datahub.lite.sqlite_lite import SqliteLite
    from datahub.metadata.schema_classes import DataJobInputOutputClass, _Aspect

# A job's edges: its input and output datasets, upstream jobs and column lineage (each as sorted JSON).


class LiteDamaged(SinkDamaged):
    """The DataHub Lite file cannot be read as SQLite."""


def _translated(event: QueuedEvent, translator: LineageTranslator) -> list[MetadataChangeProposalWrapper]:
    # DataHub loads only when there is something to write: an idle pass never imports it.
    from datahub.metadata.schema_classes import SystemMetadataClass

    from bridge.translate.datahub import metadata_for

    try:
        payload = json.loads(event.payload)
        mcps = metadata_for(payload, translator)
        observed = int(datetime.fromisoformat(payload["eventTime"]).timestamp() * 1000)
    except Exception as err:  # any translation failure is this event's, and permanent
        msg = f"event {event.seq} cannot be translated to DataHub aspects ({type(err).__name__}: {err})"
        raise Unsendable(msg) from err
    observed_at = SystemMetadataClass(lastObserved=observed)  # one for the event's aspects: serialized once
    for mcp in mcps:
        mcp.systemMetadata = mcp.systemMetadata or observed_at
    return mcps


class _JobEdges:
    """A job's dataset, job and column edges as the union over its runs, not just the latest run's.

    DataHub replaces a job's edges on each write; per-run differences (a model version that started
    reading weather) stay on the runs (DataProcessInstance) and the model versions.
    """

    def __init__(
        self, store: EdgeStore | None, sink: str, fresh: bool, held: Callable[[str], Edges] | None = None
    ) -> None:
        """``store`` keeps the union for a sink that cannot read it back; ``fresh``: the sink holds nothing yet
        (new, emptied, replaced), so neither do its jobs' edges.

        ``held(urn)``: the edges the sink itself holds for a job, for a sink that can be read (DataHub
        Lite): then the union is the sink's own and nothing is kept elsewhere.
        """
        self.store, self.sink, self.fresh, self.held = store, sink, fresh, held
        self.known: dict[str, Edges] = {} if fresh or store is None else store.load(sink)
        self.changed: set[str] = set()
        # What this sink made of a job's edges last (the merged edges and their aspect): edges that did not
        # change reuse the aspect, and a sink that is read back (Lite) starts the job's next run from these
        # instead of its copy while its transaction is open (nobody else writes the job's edges then).
        self.latest: dict[str, tuple[Edges, DataJobInputOutputClass]] = {}
        self.arrived: dict[str, tuple[DataJobInputOutputClass, Edges]] = {}  # each job's last translated aspect

    def _edges_of(self, urn: str, aspect: DataJobInputOutputClass) -> Edges:
        """The edges an aspect names, its column lineage serialized; a job's runs mostly repeat them."""
        arrived = self.arrived.get(urn)
        if arrived is not None and arrived[0] == aspect:  # compared field by field, without serializing
            return arrived[1]
        edges = {
            "inputDatasets": aspect.inputDatasets or [],
            "outputDatasets": aspect.outputDatasets or [],
            "inputDatajobs": aspect.inputDatajobs or [],
            "fineGrainedLineages": [
                json.dumps(column.to_obj(), sort_keys=True) for column in aspect.fineGrainedLineages or []
            ],
        }
        self.arrived[urn] = (aspect, edges)
        return edges

    def forget_latest(self) -> None:
        """The sink's transaction ended (committed or rolled back): read its copy again next time."""
        self.latest.clear()

    def merged(self, mcp: MetadataChangeProposalWrapper) -> MetadataChangeProposalWrapper:
        # DataHub loads only when there is something to write (as in _translated).
        from datahub.emitter.mcp import MetadataChangeProposalWrapper
        from datahub.metadata.schema_classes import DataJobInputOutputClass, FineGrainedLineageClass

        if not isinstance(mcp.aspect, DataJobInputOutputClass):
            return mcp
        urn = mcp.entityUrn
        if urn is None:  # an internal invariant: a proposal names its entity by URN or key, the translation by URN
            raise ValueError("A job's inputs and outputs without the job's URN")
        edges = self._edges_of(urn, mcp.aspect)
        latest = self.latest.get(urn)
        known = latest[0] if latest else (self.held(urn) if self.held else self.known.get(urn, {}))
        merged = {key: sorted(set(known.get(key, [])) | set(values)) for key, values in edges.items()}
        if merged != known and not self.held:
            self.known[urn] = merged
            self.changed.add(urn)
        if latest is not None and merged == known:
            aspect = latest[1]
        else:
            columns = [FineGrainedLineageClass.from_obj(json.loads(f)) for f in merged["fineGrainedLineages"]]
            aspect = DataJobInputOutputClass(
                inputDatasets=merged["inputDatasets"],
                outputDatasets=merged["outputDatasets"],
                inputDatajobs=merged["inputDatajobs"],
                fineGrainedLineages=columns or None,
            )
        self.latest[urn] = (merged, aspect)
        return MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect, systemMetadata=mcp.systemMetadata)

    def save(self) -> None:
        if self.store is not None and (self.changed or self.fresh):
            self.store.save(self.sink, {urn: self.known[urn] for urn in self.changed}, replace=self.fresh)
            self.changed.clear()
            self.fresh = False


class FileConfig(SinkConfig):
    path: Path  # the file


class RestConfig(SinkConfig):
    server: str  # the GMS URL
    token: SecretStr | None = None  # a personal access token, when GMS has auth

    @field_validator("server")
    @classmethod
    def _a_url(cls, server: str) -> str:
        if urlsplit(server).scheme not in ("http", "https") or not urlsplit(server).netloc:
            # A pydantic validator raises ValueError: the sink's options refuse it as SinkMisconfigured, naming it.
            raise ValueError("DataHub over REST needs the GMS URL (DATAHUB_GMS_URL), e.g. http://localhost:8080")
        return server


def _shown_as(path: Path, context: SinkContext) -> str:
    """A file in the lineage folder is known by its path there: moving the folder keeps the sink's place."""
    folder = context.bridge.lineage_dir
    return str(path.relative_to(folder)) if path.is_relative_to(folder) else str(path)


class LiteSink(Sink[FileConfig]):
    """DataHub Lite, written through the SDK's Lite, a batch of events per SQLite transaction."""

    Config = FileConfig
    credentials_setting = "nothing: DataHub Lite is a local file"
    target_setting = "the DataHub Lite file's path"

    def __init__(self, config: FileConfig, context: SinkContext) -> None:
        super().__init__(config, context)
        self.path, self.translator = config.path, context.bridge.translation
        self.target = f"DataHub Lite {self.path}"
        self.name = f"datahub-lite {_shown_as(self.path, context)}"
        self.outbox.places.adopt("datahub-lite", self.name)
        self.lite: SqliteLite | None = None
        self._position: int | None = None
        self._edges: _JobEdges | None = None
        self.aspects = 0
        self.written: set[str] = set()  # the entities this pass wrote: their browse edges are rebuilt on close

    def position(self) -> int:
        if self._position is None:
            self._position = lite_position(self.path, self.outbox.id)
        return self._position

    @property
    def edges(self) -> _JobEdges:
        if self._edges is None:
            self._edges = _JobEdges(None, self.name, fresh=False, held=self._held_edges)
        return self._edges

    def _held_edges(self, urn: str) -> Edges:
        """A job's edges as this Lite file holds them now (inside the batch's transaction)."""
        # Only a sink that is writing asks, and DataHub is loaded by then.
        from datahub.metadata.schema_classes import FineGrainedLineageClass

        if self.lite is None:  # an internal invariant: only a sink writing a batch merges a job's edges
            raise RuntimeError("DataHub Lite's job edges are read only while a batch is written")
        row = self.lite.sqlite_client.execute(
            "SELECT metadata FROM metadata_aspect_v2 WHERE urn = ? AND aspect_name = 'dataJobInputOutput' "
            "AND version = 0",
            (urn,),
        ).fetchone()
        if row is None:
            return {}
        held = json.loads(row[0])
        columns = [FineGrainedLineageClass.from_obj(c).to_obj() for c in held.get("fineGrainedLineages") or []]
        return {
            "inputDatasets": sorted(held.get("inputDatasets") or []),
            "outputDatasets": sorted(held.get("outputDatasets") or []),
            "inputDatajobs": sorted(held.get("inputDatajobs") or []),
            "fineGrainedLineages": sorted(json.dumps(column, sort_keys=True) for column in columns),
        }

    def _open(self) -> SqliteLite:
        if self.lite is None:
            # DataHub loads only when there is something to write (as in _translated).
            from bridge.sinks.lite import open_lite

            self.lite = open_lite(self.path)
            connection = self.lite.sqlite_client
            connection.isolation_level = None  # transactions are this sink's, not one per aspect
            # Lite commits after every aspect; inside a batch only the batch's COMMIT may.
            self.lite._commit = self.lite._rollback = lambda: None  # type: ignore[method-assign]
            # Lite rebuilds its browse index from the whole graph on close: only what this pass wrote is.
            self.lite.reindex = self._reindex_written  # type: ignore[method-assign]
            connection.execute(CREATE_PLACE_TABLE)
        if not self.lite.sqlite_client.in_transaction:
            self.lite.sqlite_client.execute("BEGIN IMMEDIATE")
        return self.lite

    def _reindex_written(self) -> None:
        # Only a sink that wrote has Lite open, and DataHub is loaded by then.
        from bridge.sinks.lite_write import reindex_written

        if self.lite is not None and self.written:
            connection = self.lite.sqlite_client
            connection.execute("BEGIN IMMEDIATE")
            reindex_written(self.lite, self.written)
            connection.execute("COMMIT")
            self.written.clear()

    def send(self, event: QueuedEvent, seconds_left: float) -> bool:
        # DataHub loads only when there is something to write (as in _translated).
        from bridge.sinks.lite_write import OnceSerialized

        mcps = _translated(event, self.translator)
        lite = self._open()
        connection = lite.sqlite_client
        connection.execute("SAVEPOINT event")
        try:
            for mcp in mcps:
                if not self._older_than_held(connection, mcp):
                    lite.write(OnceSerialized.of(self.edges.merged(mcp)))
                    self.written.add(str(mcp.entityUrn))
        except BaseException:
            connection.execute("ROLLBACK TO event")
            connection.execute("RELEASE event")
            self.edges.forget_latest()
            raise
        connection.execute("RELEASE event")
        self.aspects += len(mcps)
        return True

    @staticmethod
    def _older_than_held(connection: sqlite3.Connection, mcp: MetadataChangeProposalWrapper) -> bool:
        """Lite holds this aspect from a later event already: writing it would step back (a replay, or late).

        DataHub keeps the latest observation of an aspect; an earlier one written again would add a
        version row per replay and, for a run's properties, show its START over its COMPLETE.
        """
        # SQLite reads the two numbers out of the JSON it holds: no document is parsed here.
        row = connection.execute(
            "SELECT json_extract(metadata, '$.timestampMillis'), json_extract(system_metadata, '$.lastObserved') "
            "FROM metadata_aspect_v2 WHERE urn = ? AND aspect_name = ? AND version = 0",
            (mcp.entityUrn, mcp.aspectName),
        ).fetchone()
        if row is None:
            return False
        if mcp.aspect is not None and mcp.aspect.ASPECT_TYPE == "timeseries":
            return bool((row[0] or 0) >= _timestamp_millis(mcp.aspect))
        observed = mcp.systemMetadata.lastObserved if mcp.systemMetadata is not None else None
        if observed is None:  # an internal invariant: every translated aspect carries its event's time (_translated)
            raise ValueError(f"Aspect {mcp.aspectName} of {mcp.entityUrn} carries no time it was observed")
        return (row[1] or 0) > observed

    def advance(self, seq: int) -> None:
        self._position = seq

    def flush(self) -> None:
        lite = self.lite
        if lite is None:
            if self._position is not None and self._position != lite_position(self.path, self.outbox.id):
                lite = self._open()  # only parked events since the last write: the place still moves
            else:
                return
        connection = lite.sqlite_client
        if not connection.in_transaction:
            connection.execute("BEGIN IMMEDIATE")
        keep_place(connection, self.outbox.id, self.position())
        connection.execute("COMMIT")
        if self._edges is not None:
            self._edges.forget_latest()
            self._edges.save()

    def detail(self) -> str:
        return f"{self.aspects} aspects"

    def close(self) -> None:
        if self.lite is not None:
            if self.lite.sqlite_client.in_transaction:
                self.lite.sqlite_client.execute("ROLLBACK")
            if self._edges is not None:
                self._edges.forget_latest()
            self.lite.close()
            self.lite = None

    @classmethod
    def caught_up(cls, config: FileConfig, context: SinkContext, name: str, last_seq: int) -> bool:
        """Its place is in its own file: a deleted or replaced file is not caught up, a damaged one raises."""
        return lite_position(config.path, context.outbox.id) >= last_seq

    @classmethod
    def set_aside(cls, config: FileConfig, context: SinkContext, name: str) -> str:
        aside = set_aside(config.path)
        context.outbox.letters.forget_held(name)
        return f"Set {config.path} aside as {aside}" if aside else f"No file at {config.path}: it is written anew"


def _timestamp_millis(aspect: _Aspect) -> int:
    """A timeseries aspect's time: every timeseries aspect has ``timestampMillis``, which _Aspect does not declare."""
    millis: int = getattr(aspect, "timestampMillis")  # noqa: B009
    return millis


def lite_position(path: Path, outbox_id: str) -> int:
    """The last event of outbox ``outbox_id`` that the Lite file at ``path`` holds (0 for a new or empty file)."""
    return place_in_file(path, outbox_id, f"The DataHub Lite file {path}", LiteDamaged)


class RestSink(Sink[RestConfig]):
    """A GMS through the SDK's REST emitter; the place is kept in the outbox, per server."""

    Config = RestConfig
    credentials_setting = "the GMS token (DATAHUB_GMS_TOKEN)"
    target_setting = "the GMS URL (DATAHUB_GMS_URL)"

    def __init__(self, config: RestConfig, context: SinkContext) -> None:
        super().__init__(config, context)
        self.server, self.translator = config.server, context.bridge.translation
        self.token = config.token.get_secret_value() if config.token else None
        self.name = f"datahub-rest {redact(self.server)}"
        self.target = f"DataHub GMS {redact(self.server)}"
        self.edges = _JobEdges(EdgeStore.beside(self.outbox, self.name), self.name, fresh=self.position() == 0)
        self.emitter: DataHubRestEmitter | None = None
        from bridge.sinks.http_answers import Redirects  # requests loads with a GMS sink only, never for the idle check

        self.redirects = Redirects()
        self.aspects = 0

    def send(self, event: QueuedEvent, seconds_left: float) -> bool:
        mcps = [self.edges.merged(mcp) for mcp in _translated(event, self.translator)]
        if self.emitter is None:
            # DataHub loads only when there is something to write (as in _translated).
            from datahub.emitter.rest_emitter import DatahubRestEmitter

            self.emitter = DatahubRestEmitter(
                gms_server=self.server, token=self.token, retry_max_times=0, read_timeout_sec=10, connect_timeout_sec=5
            )
            self.emitter.session.hooks["response"].append(self.redirects)
        self.emitter.emit_mcps(mcps)
        self.redirects.raise_noted()  # the emitter takes a redirect for success: it is no delivery
        self.aspects += len(mcps)
        return True

    def advance(self, seq: int) -> None:
        self.outbox.places.move(self.name, seq)
        self.edges.save()

    def flush(self) -> None:
        self.edges.save()

    def detail(self) -> str:
        return f"{self.aspects} aspects"

    def close(self) -> None:
        if self.emitter is not None:
            self.emitter.close()
        if self.edges.store is not None:
            self.edges.store.close()


class FileSink(Sink[FileConfig]):
    """Metadata change proposals appended to a JSON file in DataHub's metadata-file format."""

    Config = FileConfig
    credentials_setting = "nothing: a metadata file is local"
    target_setting = "the metadata file's path"

    def __init__(self, config: FileConfig, context: SinkContext) -> None:
        super().__init__(config, context)
        self.path, self.translator = config.path, context.bridge.translation
        self.target = f"DataHub metadata file {self.path}"
        self.name = f"datahub-file {_shown_as(self.path, context)}"
        self.outbox.places.adopt("datahub-file", self.name)
        self.records: list[dict[str, Any]] | None = None
        self._position = (self.outbox.places.offset(self.name) or 0) if self.path.exists() else 0
        self.edges = _JobEdges(EdgeStore.beside(self.outbox, self.name), self.name, fresh=self._position == 0)
        self.aspects = 0

    def position(self) -> int:
        return self._position

    def send(self, event: QueuedEvent, seconds_left: float) -> bool:
        mcps = _translated(event, self.translator)
        if self.records is None:
            self.records = json.loads(self.path.read_text()) if self.path.exists() and self._position else []
        self.records += [self.edges.merged(mcp).to_obj() for mcp in mcps]
        self.aspects += len(mcps)
        return True

    def advance(self, seq: int) -> None:
        self._position = seq

    def flush(self) -> None:
        if self.records is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        part = self.path.with_name(self.path.name + ".part")
        part.write_text(json.dumps(self.records, indent=2))
        part.replace(self.path)
        self.outbox.places.move(self.name, self._position)
        self.edges.save()

    def detail(self) -> str:
        return f"{self.aspects} aspects"

    def close(self) -> None:
        if self.edges.store is not None:
            self.edges.store.close()

    @classmethod
    def caught_up(cls, config: FileConfig, context: SinkContext, name: str, last_seq: int) -> bool:
        """A metadata file that is gone is written again from the first event."""
        return config.path.exists() and super().caught_up(config, context, name, last_seq)

    @classmethod
    def set_aside(cls, config: FileConfig, context: SinkContext, name: str) -> str:
        aside = set_aside(config.path)
        super().set_aside(config, context, name)
        return f"Set {config.path} aside as {aside}" if aside else f"No file at {config.path}: it is written anew"
