"""Deliver queued events through the OpenLineage client's ``emit``, so its whole configuration applies.

The client's own configuration (``OPENLINEAGE_CONFIG`` / ``openlineage.yml`` / ``OPENLINEAGE__*`` /
``OPENLINEAGE_URL``: transports, filters, tags, environment facets) is used unchanged. When it names
no transport, events go to a JSON-lines file in the lineage folder instead of the console.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.transport.console import ConsoleTransport
from openlineage.client.transport.file import FileConfig, FileTransport
from openlineage.client.transport.http import HttpTransport
from requests.adapters import HTTPAdapter
from urllib3.util import Retry

from bridge.drain import DrainResult, drain
from bridge.failures import Unsendable, redact
from bridge.outbox import OPENLINEAGE_SINK, Outbox, QueuedEvent
from bridge.raw_send import RawSend, raw_sender

# The longest a pass waits on one HTTP request, whatever the client's configured timeout.
MAX_SEND_SECONDS = 10.0

log = logging.getLogger(__name__)


def make_client(events_file: Path) -> OpenLineageClient:
    """The client as the user configured it; one that appends to ``events_file`` when they configured no transport.

    The client resolves its own configuration; only when it fell back to printing to the console does
    the bridge choose the transport, keeping the rest of the client's configuration (filters, tags, facets).
    """
    with _without_console_fallback_warning():
        client = OpenLineageClient()
    configured = (client.config.transport or {}).get("type")  # what the client itself looks at
    if client.transport.kind == ConsoleTransport.kind and not configured:
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
    return redact(f"{client.transport.kind} {target}".strip())


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


class OpenLineageSink:
    """The OpenLineage client's transport as a sink: its place is kept in the outbox, moved per event.

    HTTP transports are bounded here: no retries inside the transport (an event is sent once per
    attempt, and attempts are counted by :mod:`bridge.drain`), and no wait longer than the pass has left.
    """

    name = OPENLINEAGE_SINK

    def __init__(self, outbox: Outbox, client: OpenLineageClient, ledger: Path | None = None) -> None:
        """``ledger``: a file of the keys of every event delivered, kept apart from the outbox, so an outbox
        rebuilt from the sources does not send the target what it already has."""
        self.outbox, self.client, self.ledger = outbox, client, ledger
        self.known = _keys(ledger) if ledger is not None and outbox.rebuilt else frozenset()
        self.already_there = 0
        self._ledger = None
        self._raw: RawSend | None | bool = False  # decided on the first event: see bridge.raw_send
        self.http = list(_http_transports(client.transport))
        self.configured_timeouts = [transport.timeout for transport in self.http]
        for transport in self.http:
            transport.config.adapter = HTTPAdapter(max_retries=Retry(0, read=False))
            transport.session = None  # a new session, mounted with the adapter above on first use

    def position(self) -> int:
        return self.outbox.sink_offset(self.name)

    def send(self, event: QueuedEvent, seconds_left: float) -> None:
        document = _parsed(event)
        if event.key in self.known:
            self.already_there += 1
            return
        for transport, configured in zip(self.http, self.configured_timeouts, strict=True):
            transport.timeout = max(0.1, min(configured, MAX_SEND_SECONDS, seconds_left))
        if self._raw is False:
            self._raw = raw_sender(self.client, _typed(event), event.payload)
        if self._raw is None or not self._raw(event.payload, document):
            self.client.emit(_typed(event))
        if self.ledger is not None:
            if self._ledger is None:
                self.ledger.parent.mkdir(parents=True, exist_ok=True)
                self._ledger = self.ledger.open("a")
            self._ledger.write(event.key + "\n")

    def advance(self, seq: int) -> None:
        self.outbox.set_sink_offset(self.name, seq)

    def flush(self) -> None:
        """Each move of the place is committed at once: a killed pass re-sends at most the event in flight."""
        if self._ledger is not None:
            self._ledger.flush()

    def close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None
        if self._raw:
            self._raw.close()


def _parsed(event: QueuedEvent) -> dict:
    try:
        document = json.loads(event.payload)
        document["run"]["runId"], document["job"]["name"], RunState(document["eventType"])  # noqa: B018
    except (ValueError, KeyError, TypeError) as err:
        msg = f"event {event.seq} is not an OpenLineage run event ({type(err).__name__}: {err})"
        raise Unsendable(msg) from err
    return document


def _typed(event: QueuedEvent) -> RunEvent:
    try:
        return run_event_from_json(event.payload)
    except (ValueError, KeyError, TypeError) as err:
        msg = f"event {event.seq} is not an OpenLineage run event ({type(err).__name__}: {err})"
        raise Unsendable(msg) from err


def _keys(ledger: Path) -> frozenset[str]:
    if not ledger.exists():
        return frozenset()
    return frozenset(line.strip() for line in ledger.read_text(errors="replace").splitlines() if line.strip())


def _http_transports(transport) -> Iterator[HttpTransport]:
    if isinstance(transport, HttpTransport):
        yield transport
    for inner in getattr(transport, "transports", []):
        yield from _http_transports(inner)


def deliver(outbox: Outbox, client: OpenLineageClient, deadline: float | None = None) -> DrainResult:
    """Send queued events through ``client`` in order until done, waiting on a failure, or ``deadline``."""
    return drain(outbox, OpenLineageSink(outbox, client), deadline or time.monotonic() + 3600)
