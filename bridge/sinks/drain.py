"""Deliver queued events to one sink within a deadline: in order per run, never held behind one bad event.

The loop is the same for every sink (the OpenLineage transport, DataHub Lite, a GMS, a metadata
file); a sink only knows how to send one event, where its place is, and how to make it durable.
What a failure means is :func:`bridge.sinks.failures.classify`'s judgement:

- **Order.** A sink gets the events of one run in the order they were queued (a run's START before
  its COMPLETE). Runs may overtake one another while one of them waits.
- A target that is **away**, or refuses our **credentials**, stops the sink: every event waits, in
  order. The next pass tries once, then passes leave the target alone longer each time (1 s, 2 s,
  ... up to 2 minutes).
- An event the target **refused**, or that cannot be translated, is parked at once as a dead letter
  with its reason; the events behind it go on.
- An event the target failed on **this time** (a 500, or a 502-504 a proxy gave for it) is held out of
  line: it backs off on its own (at least as long as the target's ``Retry-After`` says), the later events
  of its run wait behind it, every other run goes on, however many events are held. After
  ``EVENT_ATTEMPTS`` it is parked too, whatever its code.
- When events of ``FAILURES_BEFORE_WAITING`` different jobs fail so one after another, with nothing
  taken between, the target itself is failing, not the events: the whole sink waits, as for one away.
  The attempts of the events that failed in that row go back to what they were: a target failing
  everything parks nothing. One job's events never make that judgement alone, so any number of them
  held cannot stall a target (and a target failing only one job's events parks them: a person decides).
- Dead letters queued again (``retry``) are sent first, out of order, once each; what a person discarded
  is never sent, even from a rebuilt outbox.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from bridge.outbox.letters import EVENT_ATTEMPTS, Failing
from bridge.outbox.outbox import Outbox
from bridge.outbox.queue import QueuedEvent, UnreadableEvent, event_document
from bridge.sinks.contract import Sink, SinkDamaged
from bridge.sinks.failures import Failure, classify
from bridge.wording import plural

FAILURES_BEFORE_WAITING = 3
FIRST_BACKOFF_SECONDS = 1.0
LONGEST_BACKOFF_SECONDS = 120.0
BATCH = 500

Outcome = Literal["done", "held", "stop"]


@dataclass
class DrainResult:
    sink: str
    target: str = ""
    sent: int = 0
    already_there: int = 0  # events the target had already (a rebuilt outbox): confirmed, not sent
    redelivered: int = 0
    parked: int = 0
    held: int = 0  # events held out of line, included in ``pending``
    pending: int = 0
    dead_letters: int = 0
    waiting_on: str | None = None  # why the whole sink waits
    held_on: str | None = None  # the last error an event was held out of line for
    out_of_time: bool = False
    detail: str = ""  # what else the sink says of the pass (e.g. DataHub aspects written)

    @property
    def failing(self) -> bool:
        """The target failed in this pass: the sink waits, or an event is held on an error."""
        return self.waiting_on is not None or self.held_on is not None

    def counts(self) -> str:
        """What the sink got and what waits, for a pass's summary and the command line."""
        said = f"sent {self.sent}"
        if self.already_there:
            said += f", {self.already_there} already there (not sent again)"
        said += f", {self.pending} waiting"
        if self.held:
            said += f" ({self.held} held out of line)"
        if self.redelivered:
            said += f", {plural(self.redelivered, 'dead letter')} delivered"
        if self.dead_letters:
            said += f", {self.dead_letters:,} parked (dead letters)"
        return said


def backoff(attempts: int) -> float:
    """How long a target that failed ``attempts`` times in a row is left alone: the next pass may try once at once."""
    return 0.0 if attempts <= 1 else min(FIRST_BACKOFF_SECONDS * 2 ** (attempts - 2), LONGEST_BACKOFF_SECONDS)


def drain(
    outbox: Outbox,
    sink: Sink[Any],
    deadline: float,
    renew: Callable[[], None] = lambda: None,
    stopping: Callable[[], bool] = lambda: False,
) -> DrainResult:
    """Send what ``sink`` has not had until done, waiting on its target, ``deadline`` (monotonic), or ``stopping()``."""
    return _Drain(outbox, sink, deadline, renew, stopping).run()


class _Drain:
    def __init__(
        self,
        outbox: Outbox,
        sink: Sink[Any],
        deadline: float,
        renew: Callable[[], None],
        stopping: Callable[[], bool],
    ) -> None:
        self.outbox, self.sink, self.deadline, self.renew, self.stopping = outbox, sink, deadline, renew, stopping
        self.letters, self.places = outbox.letters, outbox.places
        self.result = DrainResult(sink.name, sink.target)
        self.blocked: dict[str, int] = {}  # run id -> the held event its later events wait behind
        self.wait = self.places.wait(sink.name)
        self.target_failing = self.wait is not None
        self.durable_counts = (0, 0)  # sent and already there, as of the last batch made durable
        # Events that failed on their own since the target last took one, and their jobs: the target may be failing.
        self.failed_in_a_row: list[_Held] = []
        self.jobs_in_a_row: set[str] = set()
        self.discarded = self.letters.discarded(sink.name)

    def run(self) -> DrainResult:
        wait = self.wait
        if wait is not None and wait.retry_after > time.time():
            self.result.waiting_on = wait.error
        elif self._redeliver() and (position := self._position()) is not None:
            self.letters.forget_held(self.sink.name, after=position)  # its place went back: resent in order
            held = self.letters.failing(self.sink.name)
            if self._retry_held(held):
                self._new_events(position)
        return self._finish()

    def _seconds_left(self) -> float:
        seconds_left = 0.0 if self.stopping() else self.deadline - time.monotonic()
        if seconds_left <= 0:
            self.result.out_of_time = True
        return seconds_left

    def _attempt(self, event: QueuedEvent, earlier: Failing | None) -> Outcome:
        """Send ``event`` once and judge the outcome: done (sent or parked), held out of line, or stop the sink."""
        sink, letters, result = self.sink, self.letters, self.result
        try:
            sent = sink.send(event, self._seconds_left())
        except Exception as err:  # every failure is judged: wait, hold, or park
            failure = classify(err, sink.credentials_setting, sink.target_setting)
            before = earlier.attempts if earlier else 0
            if failure.kind == "this event":
                self.failed_in_a_row.append(_Held(event, before, before + 1, failure.reason, 0.0))
                self.jobs_in_a_row.add(_job_of(event))
                if len(self.jobs_in_a_row) >= FAILURES_BEFORE_WAITING:  # not the events: the target is failing
                    said = f"events of {FAILURES_BEFORE_WAITING} jobs in a row failed: {failure.reason}"
                    failure = Failure("away", said, failure.wait_at_least)
                    self._not_the_events_fault()
            if failure.permanent or (failure.kind == "this event" and before + 1 >= EVENT_ATTEMPTS):
                letters.park(sink.name, event, failure.reason, before + 1)
                result.parked += 1
                return "done"
            if failure.whole_sink:
                self.places.note_failure(sink.name, failure.reason, backoff, failure.wait_at_least)
                result.waiting_on = failure.reason
                return "stop"
            retry_after = time.time() + max(backoff(before + 1), failure.wait_at_least)
            held = _Held(event, before, before + 1, failure.reason, retry_after)
            letters.hold(sink.name, event.seq, held.attempts, held.error, held.retry_after)
            self.failed_in_a_row[-1] = held
            result.held_on = failure.reason
            return "held"
        self.failed_in_a_row.clear()
        self.jobs_in_a_row.clear()
        if sent:
            result.sent += 1
        else:
            result.already_there += 1
        if earlier is not None:
            letters.release(sink.name, event.seq)
        if self.target_failing:
            self.places.clear_failure(sink.name)
            self.target_failing = False
        return "done"

    def _not_the_events_fault(self) -> None:
        """The events held in a row were the target's failure, not theirs: their attempts go back to what they were,
        so a target that is failing does not get them parked."""
        for held in self.failed_in_a_row[:-1]:
            self.letters.hold(self.sink.name, held.event.seq, held.before, held.error, held.retry_after)
        self.result.held_on = None

    def _redeliver(self) -> bool:
        """Send the dead letters queued again; ``False`` when the target is away (the sink waits for the next pass)."""
        letters, sink, result = self.letters, self.sink, self.result
        for letter in letters.dead_letters(sink.name, requeued=True):
            event = self.outbox.queue.event(letter.seq)
            if event is None:  # its outbox was rebuilt without it: nothing left to send
                letters.resolve(letter.id)
                continue
            if self._seconds_left() <= 0:
                return False
            try:
                sink.send(event, self._seconds_left())
                sink.flush()
            except Exception as err:  # refused again: parked again; away: stays queued
                failure = classify(err, sink.credentials_setting, sink.target_setting)
                if failure.whole_sink:
                    self.places.note_failure(sink.name, failure.reason, backoff, failure.wait_at_least)
                    result.waiting_on = failure.reason
                    return False
                letters.repark(letter.id, failure.reason)
                result.parked += 1
                continue
            letters.resolve(letter.id)
            result.redelivered += 1
        return True

    def _retry_held(self, held: list[Failing]) -> bool:
        """Try the events held out of line, oldest first; ``False`` when the sink must stop."""
        for earlier in held:
            event = self.outbox.queue.event(earlier.seq)
            if event is None:
                self.letters.release(self.sink.name, earlier.seq)
                continue
            run = _run_of(event)
            if run in self.blocked:
                continue
            if earlier.retry_after > time.time():
                self.blocked[run] = earlier.seq
                continue
            if self._seconds_left() <= 0:
                return False
            outcome = self._attempt(event, earlier)
            if outcome == "stop":
                return False
            if outcome == "held":
                self.blocked[run] = event.seq
        return self._flushed() if held else True

    def _new_events(self, position: int) -> None:
        sink, letters = self.sink, self.letters
        parked = {letter.seq for letter in letters.dead_letters(sink.name)}
        while events := self.outbox.queue.after(position, BATCH):
            stop = False
            for event in events:
                if self._seconds_left() <= 0:
                    stop = True
                    break
                # else parked by a pass that died before moving the sink's place, or given up on by a person
                if event.seq not in parked and event.key not in self.discarded:
                    run = _run_of(event) if self.blocked else None
                    if run in self.blocked:
                        behind = f"waiting behind event {self.blocked[run]} of its run"
                        letters.hold(sink.name, event.seq, 0, behind, 0.0)
                    else:
                        outcome = self._attempt(event, None)
                        if outcome == "stop":
                            stop = True
                            break
                        if outcome == "held":
                            self.blocked[_run_of(event)] = event.seq
                sink.advance(event.seq)
                position = event.seq
            if not self._flushed():
                break
            self.renew()
            if stop:
                break

    def _position(self) -> int | None:
        """The sink's place, or ``None`` when the sink cannot read it (its target is away): the sink waits."""
        try:
            return self.sink.position()
        except (SinkDamaged, sqlite3.DatabaseError):
            raise  # the sink's own state is damaged: the pass names it and its repair
        except Exception as err:  # a place kept in the target is as reachable as the target
            self._wait_on(err)
            return None

    def _wait_on(self, err: Exception) -> None:
        failure = classify(err, self.sink.credentials_setting, self.sink.target_setting)
        self.places.note_failure(self.sink.name, failure.reason, backoff, failure.wait_at_least)
        self.result.waiting_on = failure.reason

    def _flushed(self) -> bool:
        """Make the batch durable; a sink that cannot waits as a whole, and what it took is not counted as sent."""
        try:
            self.sink.flush()
        except Exception as err:  # judged like a send failure, but a batch is never parked: the sink waits
            self._wait_on(err)
            self.result.sent, self.result.already_there = self.durable_counts
            return False
        self.durable_counts = (self.result.sent, self.result.already_there)
        return True

    def _last_known_position(self) -> int:
        try:
            return self.sink.position()
        except Exception:  # the target is away (already judged): the place the last pass recorded
            known = {state.sink: state.position for state in self.places.states()}
            return known.get(self.sink.name) or 0

    def _finish(self) -> DrainResult:
        sink, result = self.sink, self.result
        position = self._last_known_position()
        result.held = len(self.letters.failing(sink.name))
        result.pending = self.outbox.pending(sink.name, position)
        result.dead_letters = self.letters.parked_count(sink.name)
        result.detail = sink.detail()
        counts = {"position": position, "pending": result.pending, "held": result.held, "parked": result.dead_letters}
        delivered = bool(result.sent or result.already_there or result.redelivered)
        self.places.record(sink.name, sink.target, counts, delivered)
        return result


@dataclass(frozen=True)
class _Held:
    """An event held in this pass on an error of its own: its attempts before and after, why, and when to try again."""

    event: QueuedEvent
    before: int
    attempts: int
    error: str
    retry_after: float


def _job_of(event: QueuedEvent) -> str:
    try:
        job = event_document(event.payload)["job"]
        return f"{job['namespace']}/{job['name']}"
    except UnreadableEvent:
        return f"unreadable event {event.seq}"


def _run_of(event: QueuedEvent) -> str:
    try:
        run_id: str = event_document(event.payload)["run"]["runId"]
        return run_id
    except UnreadableEvent:
        return f"unreadable event {event.seq}"
