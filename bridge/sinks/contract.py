"""What a lineage sink is: the contract :mod:`bridge.sinks.drain` delivers through, and what it is built from.

A sink knows how to send one event, where its place is and how to make what it sent durable; the
drain owns order, retries and dead letters. A sink keeps its own state (its place, a ledger) where it
chooses: in the outbox's per-sink places, in a file of its own, or in the target itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from bridge.config import SinkSpec
from bridge.errors import BridgeError

__all__ = ["Sink", "SinkContext", "SinkDamaged", "SinkSpec"]

if TYPE_CHECKING:
    from openlineage.client import OpenLineageClient

    from bridge.config import LineageBridge
    from bridge.outbox.queue import Outbox, QueuedEvent


class Sink(Protocol):
    name: str  # the sink's key in the outbox: one per target
    target: str  # the target, for a person (no credentials)
    credentials_setting: str  # where a user sets this target's credentials

    def position(self) -> int:
        """The last event this sink has (sent, parked or held out of line), as durable."""

    def send(self, event: QueuedEvent, seconds_left: float) -> bool:
        """Send one event, raising on failure; ``False`` when the target already had it and nothing was sent."""

    def advance(self, seq: int) -> None:
        """The sink's place is now past ``seq``; durable at once or at :meth:`flush`."""

    def flush(self) -> None:
        """Make what was sent and the place durable together; on failure neither moved (raise)."""

    def detail(self) -> str:
        """What else a person wants to know of this pass (e.g. aspects written), or ``""``."""

    def close(self) -> None:
        """Let go of connections and files."""


class SinkDamaged(BridgeError):
    """A sink's own state cannot be read; the message names it and how to rebuild it."""


@dataclass(frozen=True)
class SinkContext:
    """What a sink's factory may use: the bridge, its outbox and, for tests and commands, a ready client."""

    bridge: LineageBridge
    outbox: Outbox
    client: OpenLineageClient | None = None
