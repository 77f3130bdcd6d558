"""The durable outbox: one SQLite file holding the queue, the sinks' places and what they could not deliver.

Each job has its module and its tables: :mod:`bridge.outbox.queue` (events and source cursors),
:mod:`bridge.outbox.places` (each sink's place and target health), :mod:`bridge.outbox.letters` (events
held out of line, dead letters, discards) and :mod:`bridge.outbox.lease` (one pass at a time). Nothing
outside this package reads or writes the file's tables.
"""

from __future__ import annotations

from pathlib import Path

from bridge.outbox import letters, places, queue
from bridge.outbox.database import Database

REBUILT = "rebuilt"
SET_ASIDE = "set-aside"


class Outbox(Database):
    def __init__(self, path: Path) -> None:
        super().__init__(path, (queue.SCHEMA, places.SCHEMA, letters.SCHEMA))
        self.queue = queue.EventQueue(self)
        self.places = places.SinkPlaces(self)
        self.letters = letters.Letters(self)

    def mark_rebuilt(self) -> None:
        """This outbox replaces a lost one: sinks skip what they already had (their ledgers say what)."""
        self.remember(REBUILT, "1")

    @property
    def rebuilt(self) -> bool:
        return self.recall(REBUILT) is not None

    def mark_set_aside(self, aside: Path) -> None:
        """This file is being replaced: a pass that opened it before it moved must not deliver from it."""
        self.remember(SET_ASIDE, str(aside))

    @property
    def set_aside(self) -> str | None:
        return self.recall(SET_ASIDE)

    def pending(self, sink: str, position: int) -> int:
        """Events ``sink`` has not had: those past its place, and those it holds out of line."""
        return self.queue.count_after(position) + self.letters.held_up_to(sink, position)

    def oldest_pending_time(self, sink: str, position: int) -> str | None:
        """The event time of the oldest event ``sink`` has not had (held, or first past its place)."""
        held = self.letters.first_held(sink, position)
        if held is not None:
            return self.queue.event_time(held)
        first = self.queue.after(position, limit=1)
        return self.queue.event_time(first[0].seq) if first else None
