"""Is lineage healthy? One verdict, the same for a pass, the sensor's tick and ``status``, as an exit code.

    0  healthy: every sink has every queued event, or is sending them
    1  the bridge's own state is damaged (the outbox, DataHub Lite): the message names the repair
    3  a sink is failing: its target is away or refuses the credentials, or an event is held on an error
    4  events are parked as dead letters, waiting for a person (``dead-letters``, ``retry``, ``discard``)

(2 is a usage error, as for any command line.) The worst applies: 1, then 3, then 4.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

from bridge.outbox.letters import EVENT_ATTEMPTS, describe_event
from bridge.outbox.outbox import Outbox
from bridge.outbox.places import SinkState
from bridge.wording import plural

HEALTHY, DAMAGED, FAILING, PARKED = 0, 1, 3, 4
VERDICTS = {HEALTHY: "healthy", DAMAGED: "damaged", FAILING: "failing", PARKED: "dead letters waiting"}
LAST_PASS = "last_pass"


def verdict(damaged: bool, failing: bool, parked: bool) -> int:
    if damaged:
        return DAMAGED
    if failing:
        return FAILING
    return PARKED if parked else HEALTHY


def record_pass(outbox: Outbox, sinks: list[str], problems: list[str]) -> None:
    """What ``status`` reads: the sinks the latest pass delivered to, and what it found damaged."""
    where = str(outbox.path.parent)  # the lineage folder then: a copied or moved state names its own files
    outbox.remember(LAST_PASS, json.dumps({"at": time.time(), "sinks": sinks, "problems": problems, "in": where}))


@dataclass(frozen=True)
class SinkHealth:
    sink: str
    target: str
    pending: int
    held: int
    parked: int
    oldest_pending: str | None  # the event time of the oldest event the sink has not had
    failing_for: int  # passes in a row its whole target failed
    error: str | None
    retry_in: float  # seconds until it is tried again
    last_delivery: float | None  # when it last sent or confirmed an event (epoch seconds)
    held_events: list[str]  # each event held out of line on an error of its own: which, why, attempts, next try

    @property
    def failing(self) -> bool:
        return self.failing_for > 0 or self.held > 0


@dataclass(frozen=True)
class Status:
    code: int
    queued: int
    last_pass: float | None
    problems: list[str]
    sinks: list[SinkHealth]
    earlier_targets: list[str]  # sinks of targets no longer configured at the latest pass

    def as_json(self) -> dict[str, Any]:
        return {"health": VERDICTS[self.code], "exit_code": self.code, **asdict(self)}


def status(outbox: Outbox) -> Status:
    """Lineage's health as the latest pass left it, read from the outbox alone (no Dagster, no client)."""
    recalled = outbox.recall(LAST_PASS)
    last = json.loads(recalled) if recalled else {"at": None, "sinks": [], "problems": []}
    states = {state.sink: state for state in outbox.places.states()}
    then, now = last.get("in"), str(outbox.path.parent)
    if then and then != now:  # the state folder was copied or moved since: its targets are the ones here now
        states = {
            name: replace(state, target=(state.target or "").replace(then, now)) for name, state in states.items()
        }
    current = [_health(outbox, states[name]) for name in last["sinks"] if name in states]
    code = verdict(
        damaged=bool(last["problems"]),
        failing=any(sink.failing for sink in current),
        parked=any(sink.parked for sink in current),
    )
    queued = outbox.queue.last_seq()
    earlier = [state.target or state.sink for name, state in states.items() if name not in last["sinks"]]
    return Status(code, queued, last["at"], last["problems"], current, earlier)


def _health(outbox: Outbox, state: SinkState) -> SinkHealth:
    position = state.position or 0
    pending = outbox.pending(state.sink, position)
    return SinkHealth(
        sink=state.sink,
        target=state.target or state.sink,
        pending=pending,
        held=state.held or 0,
        parked=state.parked or 0,
        oldest_pending=outbox.oldest_pending_time(state.sink, position) if pending else None,
        failing_for=state.failures,
        error=state.error,
        retry_in=max(0.0, state.retry_after - time.time()),
        last_delivery=state.delivered_at,
        held_events=_held_events(outbox, state.sink),
    )


def _held_events(outbox: Outbox, sink: str) -> list[str]:
    """The events ``sink`` holds on an error of their own (not those merely waiting behind one of their run)."""
    lines = []
    for held in outbox.letters.failing(sink):
        if held.attempts == 0:
            continue
        event = outbox.queue.event(held.seq)
        what = describe_event(event.payload) if event else "(no longer queued)"
        retry_in = duration(max(0.0, held.retry_after - time.time()))
        lines.append(
            f"event {held.seq} ({what}): {held.error}; attempt {held.attempts} of {EVENT_ATTEMPTS}, "
            f"next try in {retry_in}, then parked as a dead letter"
        )
    return lines


def status_lines(found: Status, now: float, repair_command: str, runs_since: bool = False) -> list[str]:
    """``found`` for a person: the verdict, then one line per target (and why it fails), then what to do.

    ``runs_since``: runs happened after the last pass, so a target with every queued event is up to date with
    that pass only."""
    ago = f"{duration(now - found.last_pass)} ago" if found.last_pass else "never"
    verdict = f"Lineage: {VERDICTS[found.code]} (exit {found.code})"
    lines = [f"{verdict}; {plural(found.queued, 'event')} in the outbox; last pass {ago}"]
    for sink in found.sinks:
        caught_up = "up to date with the last pass" if runs_since else "up to date"
        line = f"  {sink.target}: " + (f"{sink.pending} behind" if sink.pending else caught_up)
        if sink.oldest_pending:
            line += f" (oldest from {sink.oldest_pending})"
        if sink.held:
            line += f", {sink.held} held out of line"
        if sink.parked:
            line += f", {plural(sink.parked, 'dead letter')}"
        if sink.last_delivery:
            line += f"; last delivery {duration(now - sink.last_delivery)} ago"
        lines.append(line)
        if sink.failing_for:
            lines.append(
                f"    failing for {plural(sink.failing_for, 'pass', 'passes')}: {sink.error}; "
                f"next try in {duration(sink.retry_in)}"
            )
        lines += [f"    held out of line: {held}" for held in sink.held_events]
    lines += [f"  {problem}" for problem in found.problems]
    if found.earlier_targets:
        others = ", ".join(found.earlier_targets)
        lines.append(f"  not delivered to by the latest pass (no longer configured, or failed): {others}")
    if any(sink.parked for sink in found.sinks):
        lines.append(f"  see `{repair_command} dead-letters`, then `retry` or `discard` them")
    return lines


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
