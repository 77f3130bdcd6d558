"""One bridge pass: read each source past its cursor, queue the events, deliver what is queued."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field

from openlineage.client.serde import Serde

from bridge.datahub_sink import SinkResult, datahub_kind, open_writer, sink_name, write_to_datahub
from bridge.delivery import DeliveryResult, deliver, make_client
from bridge.outbox import Outbox, default_outbox

log = logging.getLogger(__name__)


@dataclass
class PassResult:
    queued: dict[str, int] = field(default_factory=dict)
    event_types: Counter = field(default_factory=Counter)
    untranslated: list[int] = field(default_factory=list)
    delivery: DeliveryResult | None = None
    datahub: SinkResult | None = None


def queue_source(outbox: Outbox, name: str, source) -> tuple[int, Counter]:
    """Read ``source`` past its cursor and queue its events with the new cursor, atomically."""
    events, cursor = source.read(outbox.cursor(name))
    types: Counter = Counter()
    with outbox.batch(name) as batch:
        for key, event in events:
            if batch.add(key, Serde.to_json(event)):
                types[event.eventType.value] += 1
        batch.set_cursor(cursor)
    return batch.added, types


def run_pass(sources: dict, outbox: Outbox | None = None, client=None, datahub=None) -> PassResult:
    """``datahub``: ``(sink name, writer)``; by default the configured one (DataHub Lite unless set off)."""
    outbox = outbox or default_outbox()
    result = PassResult()
    for name, source in sources.items():
        added, types = queue_source(outbox, name, source)
        result.queued[name] = added
        result.event_types.update(types)
        result.untranslated += getattr(source, "untranslated", [])
    result.delivery = deliver(outbox, client or make_client())
    name, writer = datahub if datahub is not None else (sink_name(datahub_kind()), open_writer())
    if writer is not None:
        try:
            result.datahub = write_to_datahub(outbox, writer, name)
        finally:
            if datahub is None:
                writer.close()
    return result
