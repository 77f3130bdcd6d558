"""What a lineage sink is: one class that owns its whole life, in the style of DataHub's sinks.

A sink kind is a subclass of :class:`Sink` with a typed :class:`SinkConfig` (its options, validated:
a wrong or missing one is refused with its name). The bridge, not the sink, owns order, retries and
dead letters (:mod:`bridge.sinks.drain`); a sink knows

- how to **send** one event, where its **place** is and how to make what it sent durable (``flush``);
- cheaply, from its own state alone (no SDK, no network), whether it is **caught up** (the idle check);
- how to **set itself aside** for repair (``rebuild``): the next pass refills its target from the first event.

Constructing a sink loads nothing heavy and opens nothing: it connects on its first send. The
defaults keep the place in the outbox (:mod:`bridge.outbox.places`); a sink that keeps it elsewhere
(in its own file, in its target) overrides ``position``, ``advance``, ``caught_up`` and ``set_aside``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from bridge.errors import BridgeError

if TYPE_CHECKING:
    from bridge.config import LineageBridge
    from bridge.outbox.outbox import Outbox
    from bridge.outbox.queue import QueuedEvent


class SinkConfig(BaseModel):
    """A sink's options; a kind with none uses this as it is."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class SinkDamaged(BridgeError):
    """A sink's own state cannot be read; the message names it (the pass adds how to rebuild it)."""


class SinkMisconfigured(BridgeError):
    """A sink's configuration cannot work; the message names the setting to fix (and never a secret)."""


@dataclass(frozen=True)
class SinkContext:
    """What every sink may use: the bridge, its outbox, and the sink's key in the bridge's configuration."""

    bridge: LineageBridge
    outbox: Outbox
    key: str


C = TypeVar("C", bound=SinkConfig)


class Sink(Generic[C]):
    """One target of lineage events. Subclasses set ``Config``, ``name``, ``target`` and implement ``send``."""

    Config: ClassVar[type[SinkConfig]] = SinkConfig
    credentials_setting: str = "nothing: the target takes no credentials"  # where a user sets them, for messages
    target_setting: str = "the target in the sink's options"  # where a user sets the target, for messages

    def __init__(self, config: C, context: SinkContext) -> None:
        self.config, self.context, self.outbox = config, context, context.outbox
        self.name = context.key  # its key in the outbox, one per target: a new target starts from the first event
        self.target = context.key  # the target, for a person (no credentials)

    # Delivery

    def position(self) -> int:
        """The last event this sink has (sent, parked or held out of line), as durable."""
        return self.outbox.places.offset(self.name) or 0

    def send(self, event: QueuedEvent, seconds_left: float) -> bool:
        """Send one event, raising on failure; ``False`` when the target already had it and nothing was sent."""
        raise NotImplementedError

    def advance(self, seq: int) -> None:
        """The sink's place is now past ``seq``; durable at once or at :meth:`flush`."""
        self.outbox.places.move(self.name, seq)

    def flush(self) -> None:
        """Make what was sent and the place durable together; on failure neither moved (raise)."""

    def detail(self) -> str:
        """What else a person wants to know of this pass (e.g. aspects written), or ``""``."""
        return ""

    def close(self) -> None:
        """Let go of connections and files."""

    # Life

    @classmethod
    def caught_up(cls, config: C, context: SinkContext, name: str, last_seq: int) -> bool:
        """Whether the sink last known as ``name`` has every event up to ``last_seq``, from its own state alone.

        Cheap: no SDK, no network. :class:`SinkDamaged` when its state cannot be read.
        """
        return (context.outbox.places.offset(name) or 0) >= last_seq

    @classmethod
    def set_aside(cls, config: C, context: SinkContext, name: str) -> str:
        """Put the sink's own state aside so the next pass refills its target from the first event; what was done."""
        context.outbox.places.forget(name)
        context.outbox.letters.forget_held(name)
        return f"{name} is refilled from the first queued event"
