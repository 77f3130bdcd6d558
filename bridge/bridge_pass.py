"""One bridge pass: read each source past its cursor, queue the events, deliver them, write DataHub, report back."""

from __future__ import annotations

import logging
import sqlite3
from collections import Counter
from dataclasses import dataclass, field

from dagster import DagsterInstance
from openlineage.client import OpenLineageClient
from openlineage.client.serde import Serde

from bridge.config import LineageBridge
from bridge.dagster_reports import report_metaflow_outputs
from bridge.dagster_source import AssetGraph, DagsterSource
from bridge.datahub_sink import SinkResult, open_writer, write_to_datahub
from bridge.delivery import DeliveryResult, deliver, make_client
from bridge.lineage_index import LineageIndex
from bridge.metaflow_source import MetaflowSource
from bridge.outbox import Outbox

log = logging.getLogger(__name__)


@dataclass
class PassResult:
    queued: dict[str, int] = field(default_factory=dict)
    event_types: Counter = field(default_factory=Counter)
    untranslated: list[int] = field(default_factory=list)
    delivery: DeliveryResult | None = None
    datahub: SinkResult | None = None
    reported: list[str] = field(default_factory=list)
    indexed: int = 0


def sources_for(bridge: LineageBridge, instance: DagsterInstance, graph: AssetGraph) -> list:
    """The Dagster event log of ``instance`` and the followed Metaflow flows (their Dagster roots named from it)."""
    dagster = DagsterSource(
        instance, graph, bridge.naming, default_location=bridge.code_location, launcher_kinds=bridge.launcher_kinds
    )
    return [
        dagster,
        MetaflowSource(bridge.flows, bridge.naming, dagster_run=dagster.run_job, dagster_step=dagster.step_job),
    ]


def queue_source(outbox: Outbox, source) -> tuple[int, Counter]:
    """Read ``source`` past its cursor and queue its events with the new cursor, atomically."""
    events, cursor = source.read(outbox.cursor(source.name))
    types: Counter = Counter()
    with outbox.batch(source.name) as batch:
        for key, event in events:
            if batch.add(key, Serde.to_json(event)):
                types[event.eventType.value] += 1
        batch.set_cursor(cursor)
    return batch.added, types


def run_pass(
    bridge: LineageBridge,
    instance: DagsterInstance,
    graph: AssetGraph,
    client: OpenLineageClient | None = None,
    datahub_writer=None,
) -> PassResult:
    """One pass over ``instance`` (with its asset ``graph``) and the followed flows.

    ``client`` defaults to the OpenLineage client as configured (:func:`bridge.delivery.make_client`);
    ``datahub_writer`` to a writer for ``bridge.datahub``, opened and closed here.
    """
    outbox = Outbox(bridge.outbox_path)
    result = PassResult()
    for source in sources_for(bridge, instance, graph):
        added, types = queue_source(outbox, source)
        result.queued[source.name] = added
        result.event_types.update(types)
        result.untranslated += source.untranslated
    try:
        result.indexed = LineageIndex(bridge.index_path, outbox).catch_up()
    except sqlite3.Error as err:  # the index is derived: readers rebuild it, delivery must go on
        log.warning("Lineage index %s not updated: %s (delete it to rebuild)", bridge.index_path, err)
    result.delivery = deliver(outbox, client or make_client(bridge.events_file))
    writer = datahub_writer if datahub_writer is not None else open_writer(bridge.datahub)
    if writer is not None:
        try:
            result.datahub = write_to_datahub(outbox, writer, bridge.datahub.sink, bridge.naming)
        finally:
            if datahub_writer is None:
                writer.close()
    result.reported = report_metaflow_outputs(instance, outbox, bridge)
    return result


def summary(result: PassResult) -> str:
    """One line for a sensor tick or a log."""
    delivery = result.delivery
    line = (
        f"queued {sum(result.queued.values())} new events {dict(result.event_types)}; "
        f"delivered {delivery.delivered}, {delivery.pending} waiting"
    )
    if result.datahub is not None:
        line += f"; DataHub: {result.datahub.events} events as {result.datahub.aspects} aspects"
    if result.reported:
        line += f"; reported {len(result.reported)} Metaflow runs made outside Dagster as materializations"
    if result.untranslated:
        line += f"; {len(result.untranslated)} records could not be translated (storage ids in the log)"
    if delivery.error:
        line += f" (backend unavailable: {delivery.error})"
    return line
