"""The command line's delivery commands: a pass, health, the dead letters, queueing them again, rebuilding a sink.

pass [--wait S]             one pass: Dagster + Metaflow -> OpenLineage -> DataHub (the default)
status [--json]             is lineage healthy, and how far behind is each sink (from the outbox alone)
dead-letters [--json]       the events a sink gave up on, with their error, job, run and attempts
retry ID... | --all         queue dead letters again; the next pass sends them first
discard ID... | --all       give up on dead letters for good
rebuild SINK                set a sink's own state aside (DataHub Lite's file, a GMS's place, ...) and refill it
rebuild outbox              set a damaged outbox aside and queue every run again, without sending the
                            OpenLineage target what it already has or reporting Metaflow runs twice
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.config import LineageBridge
from bridge.errors import BridgeError
from bridge.outbox.database import OutboxDamaged
from bridge.outbox.health import HEALTHY, VERDICTS, status, status_lines
from bridge.outbox.lease import PassRunning, one_pass_at_a_time
from bridge.outbox.outbox import Outbox
from bridge.redaction import redact
from bridge.run.unseen import unseen_line, unseen_runs
from bridge.wording import counts, fitted, plural

if TYPE_CHECKING:
    from dagster import DagsterInstance

    from bridge.run.idle import IdleAnswer
    from bridge.run.lineage_pass import PassResult
    from bridge.sources.dagster import AssetGraph


def say(*lines: str) -> None:
    """Print ``lines`` for a person, each wrapped to fit the terminal's usual width (:data:`bridge.wording.WIDTH`)."""
    for line in fitted(lines):
        print(line)


class UsageError(BridgeError):
    """A name or state the command cannot work with; reported like argparse's usage errors."""


def damaged_outbox(bridge: LineageBridge, err: Exception) -> UsageError:
    return UsageError(
        f"{err}. Run `{bridge.repair_command} rebuild outbox`: it sets the file aside and queues every "
        f"Dagster and Metaflow run again, without re-sending what the OpenLineage target already has."
    )


def _workspace_file(bridge: LineageBridge) -> Path:
    """The Dagster workspace the commands that read Dagster load the code location from."""
    if bridge.workspace_file is None:
        raise UsageError(f"No Dagster workspace file is configured to load the code location {bridge.code_location}")
    return bridge.workspace_file


def open_outbox(bridge: LineageBridge) -> Outbox:
    try:
        return Outbox(bridge.outbox_path)
    except OutboxDamaged as err:
        raise damaged_outbox(bridge, err) from err


def lineage_pass(bridge: LineageBridge, wait: float = 10.0) -> int:
    # Only a pass reads the workspace and checks for anything new: the read commands load neither.
    from bridge.run.idle import idle_pass
    from bridge.sources.workspace import CodeLocationNotFound, find_location

    workspace = _workspace_file(bridge)
    try:
        find_location(workspace, bridge.code_location)
    except CodeLocationNotFound as err:
        raise UsageError(str(err)) from err
    try:
        idle = idle_pass(bridge)
    except OutboxDamaged as err:
        raise damaged_outbox(bridge, err) from err
    if idle is not None:
        return _print_idle(idle)
    # Dagster, Metaflow and the OpenLineage client load only for a pass with something to do.
    from bridge.run.lineage_pass import run_pass
    from bridge.sources.code_location import load_asset_graph

    def graph() -> AssetGraph:
        try:
            return load_asset_graph(workspace, bridge.code_location)
        except CodeLocationNotFound as err:
            raise UsageError(str(err)) from err

    try:
        with _instance(bridge) as instance:
            result = run_pass(bridge, instance, graph, purpose="command line", wait=wait)
    except PassRunning as running:
        say(f"Lineage pass skipped: {running}; it delivers what is queued.")
        return 0
    except OutboxDamaged as err:
        raise damaged_outbox(bridge, err) from err
    say(*pass_lines(result, bridge))
    return result.health


def pass_lines(result: PassResult, bridge: LineageBridge) -> list[str]:
    """What a pass did, for a person: events queued by type and by source, each sink, and what to look at."""
    new = sum(result.queued.values())
    sources = ", ".join(f"{count:,} from {name}" for name, count in result.queued.items()) or "none"
    lines = [
        f"Lineage pass: {plural(new, 'new event')} ({counts(result.event_types)}) in {result.seconds:.1f} s",
        f"  per source: {sources}",
    ]
    for sink in result.sinks.values():
        line = f"  {sink.target}: {sink.counts()}" + (f" ({sink.detail})" if sink.detail else "")
        if sink.dead_letters:
            line += f"; see `{bridge.repair_command} dead-letters`"
        lines.append(line)
        if sink.waiting_on:
            lines.append(f"    failing: {sink.waiting_on} (every event waits, in order, for a later pass)")
        if sink.held_on:
            lines.append(f"    an event failed: {sink.held_on} (it and the rest of its run wait; other runs go on)")
        if sink.out_of_time:
            lines.append(f"    out of time after {bridge.pass_seconds:.0f} s; the rest goes on the next pass")
    if result.reported:
        runs = plural(len(result.reported), "Metaflow run")
        lines.append(f"  reported {runs} made outside Dagster to Dagster as materializations")
    if result.untranslated:
        records = plural(len(result.untranslated), "Dagster record")
        lines.append(f"  {records} could not be translated (storage ids in the log)")
    lines += [f"  {problem}" for problem in result.problems]
    if result.health != HEALTHY:
        verdict = f"{VERDICTS[result.health]} (exit {result.health})"
        lines.append(f"Lineage is not healthy: {verdict}; see `{bridge.repair_command} status`")
    return lines


def _print_idle(idle: IdleAnswer) -> int:
    """What a pass prints when it found nothing new (:mod:`bridge.run.idle`); its exit code is lineage's health."""
    from bridge.sinks.drain import DrainResult  # as the pass's own lines say what each sink did

    say(f"Lineage pass: 0 new events in {idle.seconds:.1f} s: nothing new in Dagster, Metaflow or the outbox")
    for sink in idle.status.sinks:
        say(f"  {sink.target}: " + DrainResult(sink.sink, sink.target, dead_letters=sink.parked).counts())
    if idle.status.code != HEALTHY:
        say(f"Lineage is not healthy: {VERDICTS[idle.status.code]} (exit {idle.status.code})")
    return idle.status.code


def watch_lineage(
    bridge: LineageBridge, interval: float, while_sensor_ticks: bool, started_by: int | None = None
) -> int:
    # As for a pass: Dagster and the OpenLineage client load only for the commands that write.
    from functools import cache

    from bridge.run.lineage_pass import run_pass, summary
    from bridge.run.watch import watch
    from bridge.sources.code_location import load_asset_graph

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s", force=True)
    logging.getLogger("bridge").setLevel(logging.INFO)  # what each pass did; not every library's chatter
    graph = cache(lambda: load_asset_graph(_workspace_file(bridge), bridge.code_location))
    last = None

    def one_pass() -> str | None:
        nonlocal last
        result = run_pass(bridge, instance, graph, purpose="watcher")
        moved = sum(result.queued.values()) or any(sink.sent or sink.parked for sink in result.sinks.values())
        said = summary(result)
        news = said if moved or (result.failing and said != last) else None
        last = said
        return news

    with _instance(bridge) as instance:
        sinks = ", ".join(spec.key for spec in bridge.sinks)
        say(f"Watching Dagster and Metaflow every {interval} s; delivering to {sinks}. Ctrl-C stops.")
        try:
            passes = watch(bridge, one_pass, interval, while_sensor_ticks, started_by=started_by)
        except KeyboardInterrupt:
            return 0
    say(f"Stopped after {plural(passes, 'pass', 'passes')}")
    return 0


def dead_letters(bridge: LineageBridge, as_json: bool = False) -> int:
    outbox = open_outbox(bridge)
    letters = outbox.letters.dead_letters(requeued=False)
    queued = outbox.letters.dead_letters(requeued=True)
    if as_json:
        print(json.dumps([letter.__dict__ for letter in [*letters, *queued]], indent=2))
        return 0
    if not letters and not queued:
        say("No dead letters: every sink has every event it was sent, or is still trying.")
        return 0
    for letter in letters:
        say(
            f"#{letter.id}  {letter.sink}  event {letter.seq}: {letter.event_type} {letter.job}  run {letter.run_id}",
            f"    {plural(letter.attempts, 'attempt')}, parked {letter.parked_at} UTC: {redact(letter.error)}",
        )
    if queued:
        say(f"{len(queued)} queued again for the next pass: {', '.join(f'#{letter.id}' for letter in queued)}")
    if letters:
        say(f"Queue them again with `{bridge.repair_command} retry ID` or `retry --all` once the cause is fixed.")
    return 0


def retry(bridge: LineageBridge, ids: list[int], everything: bool) -> int:
    outbox = _dead_letters_named(bridge, ids, everything, "queue again")
    count = outbox.letters.requeue(None if everything else ids)
    say(f"Queued {plural(count, 'dead letter')} again; the next pass sends them before anything new.")
    return 0


def discard(bridge: LineageBridge, ids: list[int], everything: bool) -> int:
    outbox = _dead_letters_named(bridge, ids, everything, "give up on")
    count = outbox.letters.discard(None if everything else ids)
    say(f"Gave up on {plural(count, 'dead letter')}: they stay in the outbox and are never sent, even after a rebuild.")
    return 0


def _dead_letters_named(bridge: LineageBridge, ids: list[int], everything: bool, doing: str) -> Outbox:
    if not ids and not everything:
        raise UsageError(f"name the dead letters to {doing} (their #ID) or --all")
    outbox = open_outbox(bridge)
    known = {letter.id for letter in outbox.letters.dead_letters()}
    unknown = sorted(set(ids) - known)
    if unknown:
        names = ", ".join(f"#{i}" for i in unknown)
        raise UsageError(f"no dead letter {names}; see `{bridge.repair_command} dead-letters`")
    return outbox


def lineage_status(bridge: LineageBridge, as_json: bool = False) -> int:
    """Lineage's health as the latest pass left it; the exit code is the verdict (:mod:`bridge.outbox.health`)."""
    if not bridge.outbox_path.exists():
        raise UsageError(f"No lineage yet in {bridge.lineage_dir}; {bridge.how_to_fill_graph}")
    outbox = open_outbox(bridge)
    try:
        found = status(outbox)
        ended = ended_runs(outbox.queue.cursor("metaflow"))
    finally:
        outbox.close()
    behind = unseen_runs(bridge)
    if as_json:
        print(json.dumps(found.as_json() | {"unseen": behind.as_json(), "ended_runs": ended}, indent=2))
        return found.code
    say(*status_lines(found, time.time(), bridge.repair_command, behind.any))
    if ended:
        say(f"Ended by the bridge (Metaflow never said; their process was gone), latest {len(ended)}:")
        say(*(f"  {run['run']} at {run['at']}: {run['why']}" for run in ended))
    behind_line = unseen_line(behind, bridge.repair_command)
    if behind_line:
        say(behind_line)
    return found.code


def ended_runs(cursor: dict[str, Any]) -> list[dict[str, str]]:
    """The Metaflow runs the bridge ended (their process gone), oldest first, from the Metaflow source's cursor."""
    ended = [{"run": run, **said} for flow in cursor.values() for run, said in flow.get("ended", {}).items()]
    return sorted(ended, key=lambda run: run["at"])


def rebuild(bridge: LineageBridge, what: str, run_a_pass: Callable[[], int]) -> int:
    """Set ``what`` aside (the outbox, or the sink configured under that key) under the pass lease, then refill it."""
    if what != "outbox" and bridge.sink_spec(what) is None:
        known = ", ".join(["outbox", *(spec.key for spec in bridge.sinks)])
        raise UsageError(f"nothing called '{what}' to rebuild: name one of {known}")
    try:
        said = _rebuild_outbox(bridge) if what == "outbox" else _rebuild_sink(bridge, what)
    except PassRunning as running:
        raise UsageError(f"{running}; try again when it has finished") from running
    say(said)
    return run_a_pass()


def _rebuild_sink(bridge: LineageBridge, key: str) -> str:
    # The sink's kind may load its SDK: only commands that write need it.
    from bridge.sinks.contract import SinkContext, SinkMisconfigured
    from bridge.sinks.registry import build_sink, config_of, sink_class

    spec = bridge.sink_spec(key)
    assert spec is not None  # checked by rebuild
    outbox = open_outbox(bridge)
    try:
        with one_pass_at_a_time(outbox, 60, f"rebuild {key}", wait=bridge.pass_seconds):
            context = SinkContext(bridge, outbox, key)
            try:
                kind = sink_class(spec.kind)
                sink = build_sink(spec, context)
                sink.close()
                return kind.set_aside(config_of(spec, kind), context, sink.name)
            except SinkMisconfigured as err:
                raise UsageError(str(err)) from err
    finally:
        outbox.close()


def _rebuild_outbox(bridge: LineageBridge) -> str:
    """Move the outbox aside while holding its lease: no pass delivers from it during or after the move."""
    path = bridge.outbox_path
    said = f"No outbox at {path}: a new one is filled from the sources"
    if path.exists():
        aside = path.with_name(f"{path.name}.{time.strftime('%Y%m%dT%H%M%S')}.aside")
        old = _outbox_to_set_aside(bridge)
        try:
            with one_pass_at_a_time(old, 60, "rebuild outbox", wait=bridge.pass_seconds) if old else _no_lease():
                if old is not None:
                    old.mark_set_aside(aside)
                for suffix in ("", "-wal", "-shm"):
                    part = path.with_name(path.name + suffix)
                    if part.exists():
                        part.replace(aside.with_name(aside.name + suffix))
        finally:
            if old is not None:
                old.close()
        bridge.index_path.unlink(missing_ok=True)
        said = f"Set {path} aside as {aside}"
    Outbox(path).mark_rebuilt()
    return said


def _outbox_to_set_aside(bridge: LineageBridge) -> Outbox | None:
    """The outbox, to hold its lease while it moves; ``None`` when it is too damaged to hold one (no pass can run)."""
    try:
        return Outbox(bridge.outbox_path)
    except OutboxDamaged:
        return None


@contextmanager
def _no_lease() -> Iterator[None]:
    yield


def _instance(bridge: LineageBridge) -> DagsterInstance:
    """The instance the bridge names, or the one ``DAGSTER_HOME`` names (as Dagster's own commands open it)."""
    from dagster import DagsterInstance  # Dagster loads only for the commands that read its event log

    home = bridge.dagster_home or (Path(os.environ["DAGSTER_HOME"]) if os.environ.get("DAGSTER_HOME") else None)
    if home is not None and not home.is_dir():
        raise UsageError(f"The Dagster instance's folder {home} does not exist: set DAGSTER_HOME to the instance's")
    if bridge.dagster_home is None:
        return DagsterInstance.get()
    return DagsterInstance.from_config(str(bridge.dagster_home))
