"""One bridge pass: read each source past its cursor, queue the events, deliver them to every sink, report back.

Passes run one at a time (:mod:`bridge.outbox.lease`) and within ``bridge.pass_seconds``. Each step
stands alone: every sink delivers in a thread of its own, with its own connection to the outbox, so a
slow, damaged or misconfigured sink never keeps events from another, and no sink keeps Metaflow runs
from being reported to Dagster. A sink's failure to build or to read its own state is one line in the
pass's problems (naming the setting or the repair command), recorded so ``status`` says so.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from dagster import DagsterInstance
from openlineage.client.event_v2 import RunEvent

from bridge.config import LineageBridge, SinkSpec
from bridge.index.lineage_index import LineageIndex
from bridge.outbox.health import HEALTHY, record_pass, verdict
from bridge.outbox.lease import PassLease, one_pass_at_a_time
from bridge.outbox.outbox import Outbox
from bridge.redaction import redact
from bridge.run.collections_paused import fewer_collections
from bridge.run.idle import configuration, remember_configuration
from bridge.run.reports import report_metaflow_outputs
from bridge.sinks.contract import SinkContext, SinkDamaged, SinkMisconfigured
from bridge.sinks.drain import DrainResult, drain
from bridge.sinks.registry import build_sink
from bridge.sources.dagster import AssetGraph, DagsterSource
from bridge.sources.metaflow import MetaflowSource
from bridge.translate.event_json import event_json
from bridge.wording import counts, plural

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
    translator = bridge.translation
    dagster = DagsterSource(
        instance, graph, translator, default_location=bridge.code_location, launcher_kinds=bridge.launcher_kinds
    )
    return [
        dagster,
        MetaflowSource(bridge.flows, translator, dagster_run=dagster.run_job, dagster_step=dagster.step_job),
    ]


def queue_source(outbox: Outbox, source: Source) -> tuple[int, Counter[str]]:
    """Read ``source`` past its cursor and queue its events with the new cursor, atomically."""
    events, cursor = source.read(outbox.queue.cursor(source.name))
    types: Counter[str] = Counter()
    with outbox.queue.batch(source.name) as batch:
        for key, event in events:
            if batch.add(key, event_json(event)):
                types[_event_type(event)] += 1
        batch.set_cursor(cursor)
    return batch.added, types


def _event_type(event: RunEvent) -> str:
    if event.eventType is None:  # an internal invariant: the translators give every run event its type
        raise ValueError(f"A run event of {event.job.name} without its type")
    return event.eventType.value


def run_pass(
    bridge: LineageBridge,
    instance: DagsterInstance,
    graph: AssetGraph | Callable[[], AssetGraph],
    client: Any = None,
    purpose: str = "pass",
    wait: float = 0.0,
) -> PassResult:
    """One pass over ``instance`` (with its asset ``graph``, or a function that loads it) and the followed flows.

    ``client``: an OpenLineage client the ``openlineage`` sink uses instead of the one the user configured
    (:func:`with_client`). Raises :class:`bridge.outbox.lease.PassRunning` when another pass holds the lease for
    longer than ``wait`` seconds, and :class:`bridge.outbox.database.OutboxDamaged` when the outbox cannot be read.
    """
    started = time.monotonic()
    deadline = started + bridge.pass_seconds
    if client is not None:
        bridge = with_client(bridge, client)
    configured = configuration(bridge)  # before any sink's client changes the environment it reads
    outbox = Outbox(bridge.outbox_path)
    try:
        with one_pass_at_a_time(outbox, LEASE_SECONDS, purpose, wait) as lease, fewer_collections():
            try:
                result = _pass(bridge, instance, graph, outbox, deadline, lease)
            except Exception as err:  # the pass failed: status must not keep the last pass's verdict
                said = redact(" ".join(f"{type(err).__name__}: {err}".split()))
                record_pass(outbox, [], [f"the last lineage pass ({purpose}) failed: {said}"])
                raise
            remember_configuration(outbox, configured, {key: sink.sink for key, sink in result.sinks.items()})
    finally:
        outbox.close()
    result.seconds = time.monotonic() - started
    return result


def with_client(bridge: LineageBridge, client: Any) -> LineageBridge:
    """``bridge`` with its ``openlineage`` sinks sending through ``client`` (tests, and projects embedding one)."""
    sinks = tuple(
        replace(spec, options={**dict(spec.options), "client": client}) if spec.kind == "openlineage" else spec
        for spec in bridge.sinks
    )
    return replace(bridge, sinks=sinks)


def _pass(
    bridge: LineageBridge,
    instance: DagsterInstance,
    graph: AssetGraph | Callable[[], AssetGraph],
    outbox: Outbox,
    deadline: float,
    lease: PassLease,
) -> PassResult:
    sources = sources_for(bridge, instance, graph)
    try:
        return _read_and_deliver(bridge, instance, outbox, deadline, lease, sources)
    finally:
        for source in sources:
            if isinstance(source, DagsterSource):
                source.close()


def _read_and_deliver(
    bridge: LineageBridge,
    instance: DagsterInstance,
    outbox: Outbox,
    deadline: float,
    lease: PassLease,
    sources: list[Source],
) -> PassResult:
    renew = lease.renew
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
    delivered = deliver_to_sinks(bridge, lease, deadline)
    for key, outcome in delivered.items():
        if isinstance(outcome, DrainResult):
            result.sinks[key] = outcome
        else:
            result.problems.append(outcome)
    dagster = next((source for source in sources if isinstance(source, DagsterSource)), None)
    parents = (lambda key: dagster.parents(key)) if dagster else None  # the graph loads only to report a run
    result.reported = report_metaflow_outputs(instance, outbox, bridge, parents)
    record_pass(outbox, [sink.sink for sink in result.sinks.values()], result.problems)
    return result


def deliver_to_sinks(bridge: LineageBridge, lease: PassLease, deadline: float) -> dict[str, DrainResult | str]:
    """Each configured sink drained in a thread of its own until ``deadline``: what it did, or the problem that
    stopped it (one line). Ctrl-C stops every sink after the event in flight."""
    stop = threading.Event()
    with ThreadPoolExecutor(max_workers=max(1, len(bridge.sinks)), thread_name_prefix="lineage-sink") as pool:
        futures = {spec.key: pool.submit(_deliver, bridge, spec, lease, deadline, stop) for spec in bridge.sinks}
        try:
            return {key: future.result() for key, future in futures.items()}
        except BaseException:
            stop.set()
            raise


def _deliver(
    bridge: LineageBridge, spec: SinkSpec, lease: PassLease, deadline: float, stop: threading.Event
) -> DrainResult | str:
    outbox = Outbox(bridge.outbox_path)
    outbox.fence = lease.token
    sink = None
    try:
        sink = build_sink(spec, SinkContext(bridge, outbox, spec.key))
        return drain(outbox, sink, deadline, lambda: lease.renew_with(outbox), stop.is_set)
    except SinkMisconfigured as err:  # a sink configured wrong: the others go on
        return f"lineage sink {spec.key} ({spec.kind}) is configured wrong: {redact(str(err))}"
    except (SinkDamaged, sqlite3.DatabaseError) as err:
        return f"{redact(str(err))}: run `{bridge.repair_command} rebuild {spec.key}` to set it aside and refill it"
    except Exception as err:  # a sink's own bug: one line, the other sinks and the pass go on
        log.exception("Lineage sink %s failed", spec.key)
        return f"lineage sink {spec.key} failed: {redact(' '.join(f'{type(err).__name__}: {err}'.split()))}"
    finally:
        if sink is not None:
            sink.close()
        outbox.close()


def summary(result: PassResult) -> str:
    """One line for a sensor tick or a log."""
    kinds = counts(result.event_types) if result.event_types else ""
    line = f"queued {plural(sum(result.queued.values()), 'new event')}" + (f" ({kinds})" if kinds else "")
    for sink in result.sinks.values():
        line += f"; {sink.target}: {sink.counts()}"
        if sink.waiting_on:
            line += f" (failing: {sink.waiting_on})"
        elif sink.held_on:
            line += f" (an event failed: {sink.held_on})"
        elif sink.out_of_time:
            line += " (out of time, the rest goes next pass)"
    if result.reported:
        line += f"; reported {plural(len(result.reported), 'Metaflow run')} made outside Dagster as materializations"
    if result.untranslated:
        line += f"; {plural(len(result.untranslated), 'record')} could not be translated (storage ids in the log)"
    return "; ".join([line, *result.problems])
