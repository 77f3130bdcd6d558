"""Deliver queued events to one sink in order, within a deadline: waits with backoff, dead letters.

The loop is the same for every sink (the OpenLineage transport, DataHub Lite, a GMS, a metadata
file); a sink only knows how to send one event, where its place is, and how to make it durable.

- An event that fails for a reason that may pass (the backend is away) stops the sink: it and
  everything behind it wait, in order; the next pass tries again, then passes back off (1 s, 2 s,
  ... up to 2 minutes) while it keeps failing.
- An event the backend refused, or that cannot be translated, is tried again on a few passes,
  then parked as a dead letter with its error; the events behind it go on.
- Dead letters queued again (``retry``) are sent first, out of order, once each.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bridge.failures import classify
from bridge.outbox import Outbox, QueuedEvent

MAX_ATTEMPTS = 3
FIRST_BACKOFF_SECONDS = 1.0
LONGEST_BACKOFF_SECONDS = 120.0
BATCH = 500


class Sink(Protocol):
    name: str

    def position(self) -> int:
        """The last event this sink has (sent or parked)."""

    def send(self, event: QueuedEvent, seconds_left: float) -> None:
        """Send one event, raising on failure; ``seconds_left`` bounds any wait on a backend."""

    def advance(self, seq: int) -> None:
        """The sink's place is now past ``seq``; durable at once or at :meth:`flush`."""

    def flush(self) -> None:
        """Make what was sent and the place durable together."""


@dataclass
class DrainResult:
    sink: str
    sent: int = 0
    redelivered: int = 0
    parked: int = 0
    pending: int = 0
    dead_letters: int = 0
    waiting_on: str | None = None  # the error the first waiting event failed with
    out_of_time: bool = False

    @property
    def failing(self) -> bool:
        return self.waiting_on is not None

    def counts(self) -> str:
        """What the sink got and what waits, for a pass's summary and the command line."""
        said = f"sent {self.sent}, {self.pending} waiting"
        if self.redelivered:
            said += f", {self.redelivered} dead letters delivered"
        if self.dead_letters:
            said += f", {self.dead_letters} parked (dead letters)"
        return said


def backoff(attempts: int) -> float:
    """How long a backend that failed ``attempts`` times in a row is left alone: the next pass may try once at once."""
    return 0.0 if attempts <= 1 else min(FIRST_BACKOFF_SECONDS * 2 ** (attempts - 2), LONGEST_BACKOFF_SECONDS)


def drain(outbox: Outbox, sink: Sink, deadline: float, renew: Callable[[], None] = lambda: None) -> DrainResult:
    """Send what ``sink`` has not had, in order, until done, waiting on a failure, or ``deadline`` (monotonic)."""
    result = DrainResult(sink.name)
    if _redeliver(outbox, sink, deadline, result):
        position = sink.position()
        failing = {f.seq: f for f in outbox.failing_now(sink.name)}
        parked = {letter.seq for letter in outbox.dead_letters(sink.name)}
        while events := outbox.events_after(position, BATCH):
            stop = False
            for event in events:
                seconds_left = deadline - time.monotonic()
                if seconds_left <= 0:
                    result.out_of_time = stop = True
                    break
                if event.seq in parked:  # parked by a pass that died before moving the sink's place
                    sink.advance(event.seq)
                    position = event.seq
                    continue
                earlier = failing.get(event.seq)
                if earlier is not None and earlier.retry_after > time.time():
                    result.waiting_on = earlier.error
                    stop = True
                    break
                try:
                    sink.send(event, seconds_left)
                except Exception as err:  # every failure is judged: wait in order, or park
                    failure = classify(err)
                    attempts = (earlier.attempts if earlier else 0) + 1
                    if failure.permanent and attempts >= MAX_ATTEMPTS:
                        outbox.park(sink.name, event, failure.reason, attempts, move_offset=False)
                        result.parked += 1
                    else:
                        # A refused event is tried once per pass; an unreachable backend is left alone longer each time.
                        retry_after = time.time() + (0.0 if failure.permanent else backoff(attempts))
                        outbox.note_failure(sink.name, event.seq, attempts, failure.reason, retry_after)
                        result.waiting_on = failure.reason
                        stop = True
                        break
                else:
                    result.sent += 1
                    if earlier is not None:
                        outbox.clear_failure(sink.name, event.seq)
                sink.advance(event.seq)
                position = event.seq
            sink.flush()
            renew()
            if stop:
                break
    result.pending = outbox.pending_count(sink.name, sink.position())
    result.dead_letters = len(outbox.dead_letters(sink.name, requeued=False))
    return result


def _redeliver(outbox: Outbox, sink: Sink, deadline: float, result: DrainResult) -> bool:
    """Send the dead letters queued again; ``False`` when the backend is away (the sink waits for the next pass)."""
    for letter in outbox.dead_letters(sink.name, requeued=True):
        event = outbox.event(letter.seq)
        seconds_left = deadline - time.monotonic()
        if event is None:  # its outbox was rebuilt without it: nothing left to send
            outbox.resolve(letter.id)
            continue
        if seconds_left <= 0:
            result.out_of_time = True
            return False
        try:
            sink.send(event, seconds_left)
            sink.flush()
        except Exception as err:  # refused again: parked again; away: stays queued
            failure = classify(err)
            if not failure.permanent:
                result.waiting_on = failure.reason
                return False
            outbox.repark(letter.id, failure.reason)
            result.parked += 1
            continue
        outbox.resolve(letter.id)
        result.redelivered += 1
    return True
