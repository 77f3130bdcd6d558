"""Deliver queued events through the OpenLineage client's ``emit``, so its whole configuration applies.

The client's own configuration (``OPENLINEAGE_CONFIG`` / ``openlineage.yml`` / ``OPENLINEAGE__*`` /
``OPENLINEAGE_URL``: transports, filters, tags, environment facets) is used unchanged. When it names
no transport, events go to a JSON-lines file in the lineage folder instead of the console.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.transport.console import ConsoleTransport
from openlineage.client.transport.file import FileConfig, FileTransport

from bridge.outbox import Outbox

log = logging.getLogger(__name__)


def make_client(events_file: Path) -> OpenLineageClient:
    """The client as the user configured it; one that appends to ``events_file`` when they configured no transport.

    The client resolves its own configuration; only when it fell back to printing to the console does
    the bridge choose the transport, keeping the rest of the client's configuration (filters, tags, facets).
    """
    with _without_console_fallback_warning():
        client = OpenLineageClient()
    if client.transport.kind == ConsoleTransport.kind and not client.config.transport:
        events_file.parent.mkdir(parents=True, exist_ok=True)
        client = OpenLineageClient(transport=FileTransport(FileConfig(log_file_path=str(events_file), append=True)))
    return client


@contextmanager
def _without_console_fallback_warning() -> Iterator[None]:
    """Hide the client's "will print events to console" warning: when it falls back, the bridge picks the file."""
    logger = logging.getLogger("openlineage.client.client")

    def not_the_fallback(record: logging.LogRecord) -> bool:
        return "transport configuration" not in record.getMessage()

    logger.addFilter(not_the_fallback)
    try:
        yield
    finally:
        logger.removeFilter(not_the_fallback)


def describe(client: OpenLineageClient) -> str:
    config = getattr(client.transport, "config", None)
    target = getattr(config, "log_file_path", None) or getattr(config, "url", None) or ""
    return f"{client.transport.kind} {target}".strip()


def run_event_from_json(payload: str) -> RunEvent:
    """A queued event as the client's typed ``RunEvent``; facets stay as they were serialized."""
    event = json.loads(payload)
    return RunEvent(
        eventType=RunState(event["eventType"]),
        eventTime=event["eventTime"],
        run=Run(runId=event["run"]["runId"], facets=event["run"].get("facets", {})),
        job=Job(namespace=event["job"]["namespace"], name=event["job"]["name"], facets=event["job"].get("facets", {})),
        inputs=[
            InputDataset(
                namespace=d["namespace"],
                name=d["name"],
                facets=d.get("facets", {}),
                inputFacets=d.get("inputFacets", {}),
            )
            for d in event.get("inputs", [])
        ],
        outputs=[
            OutputDataset(
                namespace=d["namespace"],
                name=d["name"],
                facets=d.get("facets", {}),
                outputFacets=d.get("outputFacets", {}),
            )
            for d in event.get("outputs", [])
        ],
        producer=event["producer"],
    )


@dataclass(frozen=True)
class DeliveryResult:
    delivered: int
    pending: int
    error: str | None


def deliver(outbox: Outbox, client: OpenLineageClient, limit: int = 10_000) -> DeliveryResult:
    """Emit queued events in order; stop at the first failure and leave the rest queued."""
    delivered = 0
    for queued in outbox.pending(limit):
        try:
            client.emit(run_event_from_json(queued.payload))
        except Exception as err:  # any transport failure: keep the event, retry on the next pass
            log.warning("Lineage delivery stopped at event %s (%s); it stays queued", queued.seq, err)
            return DeliveryResult(delivered, outbox.counts()["pending"], str(err))
        outbox.mark_delivered(queued.seq)
        delivered += 1
    return DeliveryResult(delivered, outbox.counts()["pending"], None)
