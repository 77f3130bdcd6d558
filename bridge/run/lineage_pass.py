"""One bridge pass: read each source past its cursor, queue the events, deliver them, write DataHub, report back.

Passes run one at a time (:mod:`bridge.outbox.lease`) and within ``bridge.pass_seconds``. Each step
stands alone: a damaged or unreachable DataHub never keeps events from the OpenLineage target, and
neither keeps Metaflow runs from being reported to Dagster.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from dagster import DagsterInstance
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import RunEvent

from bridge.config import LineageBridge
from bridge.index.lineage_index import LineageIndex
from bridge.outbox.health import HEALTHY, record_pass, verdict
from bridge.outbox.lease import one_pass_at_a_time
from bridge.outbox.queue import Outbox
from bridge.run.collections_paused import fewer_collections
from bridge.run.idle import remember_configuration
from bridge.run.reports import report_metaflow_outputs
from bridge.sinks.contract import SinkContext, SinkDamaged
from bridge.sinks.drain import DrainResult, drain
from bridge.sinks.failures import redact
from bridge.sinks.registry import build_sink
from bridge.sources.dagster import AssetGraph, DagsterSource
from bridge.sources.metaflow import MetaflowSource
from bridge.translate.event_json import event_json

log = logging.getLogger(__name__)

# A pass renews its lease after every batch; this is how long a silent holder keeps it.
LEASE_SECONDS = 90.0


@dataclass
class PassResult:
    queued: dict[str, int] = field(default_factory=dict)
    event_types: Counter[str] = field(default_factory=Counter)
    untranslated: list[int] = field(default_factory=list)
    sinks: dict[str, DrainResult] = field(default_factory=dict)  # by the sink's name in the bridge's configuration
    reported: list[str] = field(default_factory=list)
    indexed: int = 0
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def sink(self, name: str) -> DrainResult:
        """What the sink configured as ``name`` did (``KeyError`` when it did not run in this pass)."""
        return self.sinks[name]

    @property
    def health(self) -> int:
        """The verdict on lineage after this pass, as an exit code (:mod:`bridge.outbox.health`)."""
        return verdict(
            damaged=bool(self.problems),
            failing=any(sink.failing or sink.held for sink in self.sinks.values()),
            parked=any(sink.dead_letters for sink in self.sinks.values()),
        )

    @property
    def failing(self) -> bool:
        """Lineage is not healthy: a sink waits on its target, an event is held or parked, or state is damaged."""
        return self.health != HEALTHY


Source = DagsterSource | MetaflowSource


def sources_for(
    bridge: LineageBridge, instance: DagsterInstance, graph: AssetGraph | Callable[[], AssetGraph]
) -> list[Source]:
    """The Dagster event log of ``instance`` and the followed Metaflow flows (their Dagster roots named from it)."""
    dagster = DagsterSource(
        instance, graph, bridge.naming, default_location=bridge.code_location, launcher_kinds=bridge.launcher_kinds
    )
    return [
        dagster,
        MetaflowSource(bridge.flows, bridge.naming, dagster_run=dagster.run_job, dagster_step=dagster.step_job),
    ]


def queue_source(outbox: Outbox, source: Source) -> tuple[int, Counter[str]]:
    """Read ``source`` past its cursor and queue its events with the new cursor, atomically."""
    events, cursor = source.read(outbox.cursor(source.name))
    types: Counter[str] = Counter()
    with outbox.batch(source.name) as batch:
        for key, event in events:
            if batch.add(key, event_json(event)):
                types[_event_type(event)] += 1
        batch.set_cursor(cursor)
    return batch.added, types


def _event_type(event: RunEvent) -> str:
    if event.eventType is None:  # the translators give every run event its type
        raise ValueError(f"A run event of {event.job.name} without its type")
    return event.eventType.value


def run_pass(
    bridge: LineageBridge,
    instance: DagsterInstance,
    graph: AssetGraph | Callable[[], AssetGraph],
    client: OpenLineageClient | None = None,
    purpose: str = "pass",
    wait: float = 0.0,
) -> PassResult:
    """One pass over ``instance`` (with its asset ``graph``, or a function that loads it) and the followed flows.

    ``client`` defaults to the OpenLineage client as configured (:func:`bridge.sinks.openlineage.make_client`).
    Raises :class:`bridge.outbox.lease.PassRunning` when another pass holds the lease for longer than ``wait``
    seconds, and :class:`bridge.outbox.queue.OutboxDamaged` when the outbox cannot be read.
    """
    started = time.monotonic()
    deadline = started + bridge.pass_seconds
    outbox = Outbox(bridge.outbox_path)
    try:
        with one_pass_at_a_time(outbox, LEASE_SECONDS, purpose, wait) as lease, fewer_collections():
            result = _pass(bridge, instance, graph, client, outbox, deadline, lease.renew)
    finally:
        outbox.close()
    result.seconds = time.monotonic() - started
    return result


def _pass(
    bridge: LineageBridge,
    instance: DagsterInstance,
    graph: AssetGraph | Callable[[], AssetGraph],
    client: OpenLineageClient | None,
    outbox: Outbox,
    deadline: float,
    renew: Callable[[], None],
) -> PassResult:
    sources = sources_for(bridge, instance, graph)
    try:
        return _read_and_deliver(bridge, instance, client, outbox, deadline, renew, sources)
    finally:
        for source in sources:
            if isinstance(source, DagsterSource):
                source.close()


def _read_and_deliver(
    bridge: LineageBridge,
    instance: DagsterInstance,
    client: OpenLineageClient | None,
    outbox: Outbox,
    deadline: float,
    renew: Callable[[], None],
    sources: list[Source],
) -> PassResult:
    result = PassResult()
    for source in sources:
        added, types = queue_source(outbox, source)
        result.queued[source.name] = added
        result.event_types.update(types)
        result.untranslated += source.untranslated
    renew()
    try:
        result.indexed = LineageIndex(bridge.index_path, outbox).catch_up()
    except sqlite3.Error as err:  # the index is derived: readers rebuild it, delivery must go on
        log.warning("Lineage index %s not updated: %s (delete it to rebuild)", bridge.index_path, err)
    context = SinkContext(bridge, outbox, client)
    for spec in bridge.sinks:
        try:
            sink = build_sink(spec, context)
        except ValueError as err:  # a sink configured wrong: the others go on
            result.problems.append(f"lineage sink {spec.key}: {err}")
            continue
        if sink is None:
            continue
        try:
            result.sinks[spec.key] = drain(outbox, sink, deadline, renew)
        except (SinkDamaged, sqlite3.DatabaseError) as err:
            result.problems.append(
                f"{redact(str(err))}: run `{bridge.repair_command} rebuild {spec.kind}` to set it aside and refill it"
            )
        finally:
            sink.close()
    dagster = next((source for source in sources if isinstance(source, DagsterSource)), None)
    parents = (lambda key: dagster.parents(key)) if dagster else None  # the graph loads only to report a run
    result.reported = report_metaflow_outputs(instance, outbox, bridge, parents)
    record_pass(outbox, [sink.sink for sink in result.sinks.values()], result.problems)
    remember_configuration(outbox, bridge, [sink.sink for sink in result.sinks.values()])
    return result


def summary(result: PassResult) -> str:
    """One line for a sensor tick or a log."""
    kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(result.event_types.items()))
    line = f"queued {sum(result.queued.values())} new events" + (f" ({kinds})" if kinds else "")
    for sink in result.sinks.values():
        line += f"; {sink.target}: {sink.counts()}"
        if sink.waiting_on:
            line += f" (failing: {sink.waiting_on})"
        elif sink.held_on:
            line += f" (an event failed: {sink.held_on})"
        elif sink.out_of_time:
            line += " (out of time, the rest goes next pass)"
    if result.reported:
        line += f"; reported {len(result.reported)} Metaflow runs made outside Dagster as materializations"
    if result.untranslated:
        line += f"; {len(result.untranslated)} records could not be translated (storage ids in the log)"
    return "; ".join([line, *result.problems])
