"""The bridge as a Dagster sensor: each tick is one pass over the instance and the sensor's own asset graph."""

from __future__ import annotations

import time
from collections.abc import Callable

from dagster import DefaultSensorStatus, SensorDefinition, SensorEvaluationContext, SkipReason, sensor

from bridge.config import LineageBridge
from bridge.errors import BridgeError
from bridge.outbox.health import HEALTHY, status, status_lines
from bridge.outbox.lease import PassRunning
from bridge.outbox.outbox import Outbox
from bridge.run.lineage_pass import PassResult, run_pass, summary
from bridge.run.watch import keep_watcher_running
from bridge.sources.dagster import AssetGraph


class LineageFailing(BridgeError):
    """Raised by a tick whose pass left events waiting on a failure or parked, so the tick shows as failed."""


class SensorWithoutRepository(BridgeError, ValueError):
    """The sensor was evaluated without its code location's repository, so without the asset graph it reads."""


def lineage_sensor(
    bridge: LineageBridge | Callable[[], LineageBridge],
    name: str = "openlineage_bridge",
    minimum_interval_seconds: int = 30,
) -> SensorDefinition:
    """A sensor for a code location's ``Definitions``; ``bridge`` may be a function, called on each tick.

    Each tick is a catch-up pass, and keeps the bridge's watcher running (:mod:`bridge.run.watch`), which
    delivers a finished step within seconds.
    """

    @sensor(
        name=name,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=DefaultSensorStatus.RUNNING,
        description=(
            "Turns new Dagster events and Metaflow runs into OpenLineage events and DataHub metadata, "
            "and reports Metaflow runs made outside Dagster as materializations."
        ),
    )
    def bridge_sensor(context: SensorEvaluationContext) -> SkipReason:
        configured = bridge() if callable(bridge) else bridge
        watcher = keep_watcher_running(configured)
        try:
            graph = lambda: _asset_graph(context)  # noqa: E731 -- loaded only when a run is new
            result = run_pass(configured, context.instance, graph, purpose="sensor")
        except PassRunning as running:
            said = f"{running}; this tick leaves the work to it"
            _log_tick(context, configured, watcher, said, idle=True)
            return SkipReason(said)
        said = summary(result)
        _log_tick(context, configured, watcher, f"This tick's pass: {said}", idle=_idle(result))
        if result.failing:
            raise LineageFailing(said)
        return SkipReason(said)

    return bridge_sensor


def _asset_graph(context: SensorEvaluationContext) -> AssetGraph:
    """The asset graph of the sensor's own code location: Dagster evaluates a sensor with its repository."""
    repository = context.repository_def
    if repository is None:
        msg = (
            "The lineage sensor was evaluated without its repository, so without an asset graph: put it in the code "
            "location's Definitions, or in a test build its context with them "
            "(build_sensor_context(instance=..., definitions=defs))"
        )
        raise SensorWithoutRepository(msg)
    return repository.asset_graph


def _idle(result: PassResult) -> bool:
    """The pass found nothing to do and lineage is healthy."""
    moved = sum(result.queued.values()) + sum(sink.sent + sink.parked for sink in result.sinks.values())
    return not moved and not result.reported and not result.failing


def _log_tick(
    context: SensorEvaluationContext, bridge: LineageBridge, watcher: int | None, said: str, idle: bool
) -> None:
    """What the tick did and lineage's health as the latest pass (this tick's, or the watcher's) left it.

    The daemon prints a tick's log every 30 s: an idle tick on healthy lineage says so in one line (the
    verdict), the rest at debug level; any other tick says what it did and how each target stands.
    """
    found = None
    if bridge.outbox_path.exists():
        outbox = Outbox(bridge.outbox_path)
        try:
            found = status(outbox)
        finally:
            outbox.close()
    quiet = idle and (found is None or found.code == HEALTHY)
    detail = context.log.debug if quiet else context.log.info
    if watcher is not None:
        detail(
            "The lineage watcher (process %s) delivers within seconds; its log: %s",
            watcher,
            bridge.lineage_dir / "watcher.log",
        )
    detail(said)
    if found is not None:
        verdict, *targets = status_lines(found, time.time(), bridge.repair_command)
        context.log.info(verdict)
        for line in targets:
            detail(line)
