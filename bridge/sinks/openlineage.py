"""Deliver queued events through the OpenLineage client's ``emit``, so its whole configuration applies.

The client's own configuration (``OPENLINEAGE_CONFIG`` / ``openlineage.yml`` / ``OPENLINEAGE__*`` /
``OPENLINEAGE_URL``: transports, filters, tags, environment facets) is used unchanged. When it names
no transport, events go to a JSON-lines file in the lineage folder instead of the console.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urljoin, urlsplit

from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.transport.console import ConsoleTransport
from openlineage.client.transport.file import FileConfig, FileTransport
from openlineage.client.transport.http import HttpTransport, TokenProvider
from openlineage.client.transport.transport import Transport
from requests.adapters import HTTPAdapter
from requests.exceptions import ReadTimeout
from requests.utils import get_netrc_auth
from urllib3.util import Retry

from bridge.config import SinkSpec
from bridge.outbox.queue import OPENLINEAGE_SINK, Outbox, QueuedEvent
from bridge.sinks.contract import Sink, SinkContext
from bridge.sinks.drain import DrainResult, drain
from bridge.sinks.failures import NoAnswer, Unsendable, redact
from bridge.sinks.raw_send import RawSend, raw_sender

# How long a sent request is waited on for its answer, unless the client's configured timeout is longer.
DEFAULT_ANSWER_SECONDS = 60.0
LEGACY_LEDGER = "openlineage_delivered.keys"

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
    """The OpenLineage client's transport as a sink, one per target: its place is kept in the outbox, per event.

    A new or changed target (another URL, endpoint or file) starts from the first event, so it gets the
    whole history in order. HTTP requests are bounded: no retries inside the transport (an event is sent
    once per attempt, and attempts are judged by :mod:`bridge.sinks.drain`); connecting waits as long as the
    client's configured timeout or what the pass has left, but once sent, a request is waited on for
    ``answer_seconds`` (at least the configured timeout): a slow target is not sent an event again while
    it is still taking the first one in. Each request carries an ``Idempotency-Key`` header, the same for
    every attempt at one event, so a target can drop a repeat.
    """

    def __init__(
        self,
        outbox: Outbox,
        client: OpenLineageClient,
        lineage_dir: Path | None = None,
        answer_seconds: float = DEFAULT_ANSWER_SECONDS,
    ) -> None:
        """``lineage_dir``: where each target's ledger of delivered keys is kept, apart from the outbox, so an
        outbox rebuilt from the sources does not send a target what it already has."""
        self.outbox, self.client = outbox, client
        self.target = target_of(client)
        # A file in the lineage folder is named inside it: moving the folder keeps the target's place.
        self.name = f"{OPENLINEAGE_SINK} {target_of(client, lineage_dir)}"
        self.credentials_setting = credentials_setting(client.transport)
        self.answer_seconds = answer_seconds
        outbox.adopt(OPENLINEAGE_SINK, self.name)
        self.ledger: Path | None = None
        if lineage_dir is not None:
            self.ledger = _ledger_path(lineage_dir, self.name)
            if (lineage_dir / LEGACY_LEDGER).exists() and not self.ledger.exists():
                self.ledger.parent.mkdir(parents=True, exist_ok=True)
                (lineage_dir / LEGACY_LEDGER).replace(self.ledger)  # kept for one target before ledgers were per target
        self.known = _keys(self.ledger) if self.ledger is not None and outbox.rebuilt else frozenset()
        self._ledger: TextIO | None = None
        self._raw: RawSend | None = None
        self._raw_decided = False  # on the first event: see bridge.sinks.raw_send
        self.http = list(_http_transports(client.transport))
        self.configured = [(transport.timeout, dict(transport.config.custom_headers)) for transport in self.http]
        self.verify = [transport.verify for transport in self.http]
        for transport in self.http:
            transport.config.adapter = HTTPAdapter(max_retries=Retry(0, read=False))
            transport.session = None  # a new session, mounted with the adapter above
            _read_environment_once(transport)

    def position(self) -> int:
        return self.outbox.sink_offset(self.name)

    def send(self, event: QueuedEvent, seconds_left: float) -> bool:
        document = _parsed(event)
        if event.key in self.known:
            return False
        answer = 0.0
        for transport, (timeout, headers) in zip(self.http, self.configured, strict=True):
            answer = max(timeout, self.answer_seconds)
            # The transport hands its timeout to requests, which also takes (connect, read).
            transport.timeout = (max(0.1, min(timeout, seconds_left)), answer)  # type: ignore[assignment]
            transport.config.custom_headers = headers | {"Idempotency-Key": idempotency_key(event.key)}
        try:
            if not self._raw_decided:
                self._raw, self._raw_decided = raw_sender(self.client, _typed(event), event.payload), True
            if self._raw is None or not self._raw(event.payload, document):
                self.client.emit(_typed(event))
        except ReadTimeout as err:
            msg = f"no answer from {self.target} within {answer:.0f} s: it may have the event; sent again later"
            raise NoAnswer(msg, answer) from err
        self._note_delivered(event.key)
        return True

    def _note_delivered(self, key: str) -> None:
        if self.ledger is None:
            return
        if self._ledger is None:
            self.ledger.parent.mkdir(parents=True, exist_ok=True)
            new = not self.ledger.exists()
            self._ledger = self.ledger.open("a")
            if new:
                self._ledger.write(f"# {self.target}\n")
        self._ledger.write(key + "\n")

    def advance(self, seq: int) -> None:
        self.outbox.set_sink_offset(self.name, seq)

    def flush(self) -> None:
        """Each move of the place is committed at once: a killed pass re-sends at most the event in flight."""
        if self._ledger is not None:
            self._ledger.flush()

    def detail(self) -> str:
        return ""

    def close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None
        if self._raw:
            self._raw.close()
        for transport, (timeout, headers), verify in zip(self.http, self.configured, self.verify, strict=True):
            transport.timeout, transport.config.custom_headers, transport.verify = timeout, headers, verify
            transport.close()


def _read_environment_once(transport: HttpTransport) -> None:
    """What requests reads from the environment for every request, read once for the pass's session.

    With ``trust_env`` a session looks up the proxies for the URL (``*_PROXY``, ``NO_PROXY``), the CA bundle
    (``REQUESTS_CA_BUNDLE``, ``CURL_CA_BUNDLE``) and ``.netrc`` credentials on every request: a walk over the
    whole environment each time, about a third of sending an event to a local target. The URL is the
    transport's, the same for every event, so the answers are too: they are set on the session and the
    transport, as requests would have applied them.
    """
    session = transport.session
    url = urljoin(transport.url, transport.endpoint)
    found = session.merge_environment_settings(url, {}, None, transport.verify, None)
    session.proxies = found["proxies"]
    transport.verify = found["verify"]
    if session.auth is None:
        session.auth = get_netrc_auth(url)
    session.trust_env = False


def idempotency_key(event_key: str) -> str:
    """The ``Idempotency-Key`` header's value for an event (a quoted string, as the IETF draft has it)."""
    return f'"{uuid.uuid5(uuid.NAMESPACE_URL, event_key)}"'


def target_of(client: OpenLineageClient, lineage_dir: Path | None = None) -> str:
    """Where ``client`` sends events, without credentials; a file inside ``lineage_dir`` named relative to it."""
    return redact(_target(client.transport, lineage_dir))


def _target(transport: Transport, lineage_dir: Path | None) -> str:
    inner = getattr(transport, "transports", None)
    if inner is not None:
        return f"{transport.kind} [" + ", ".join(_target(each, lineage_dir) for each in inner) + "]"
    if isinstance(transport, HttpTransport):
        url = urlsplit(urljoin(transport.url, transport.endpoint))
        # The credentials are not the target: changing them keeps its place.
        return f"http {url._replace(netloc=url.netloc.rpartition('@')[2]).geturl()}"
    config = getattr(transport, "config", None)
    path = getattr(config, "log_file_path", None)
    if path is not None:
        if lineage_dir is not None and Path(path).is_relative_to(lineage_dir):
            path = Path(path).relative_to(lineage_dir)
        return f"{transport.kind} {path}"
    where = next((str(getattr(config, a)) for a in ("url", "topic", "endpoint") if getattr(config, a, None)), "")
    return f"{transport.kind} {where}".strip()


def credentials_setting(transport: Transport) -> str:
    """Where this transport's credentials are set, for a message about refused credentials."""
    http = next(iter(_http_transports(transport)), None)
    if http is None:
        return "the transport's credentials in the OpenLineage client's configuration"
    if urlsplit(http.url).username:
        return "the user and password in the transport's URL (OPENLINEAGE_URL, or transport.url in openlineage.yml)"
    if type(http.config.auth) is not TokenProvider:  # a provider of its own; asking it for a token may fetch one
        return "transport.auth in openlineage.yml (or OPENLINEAGE__TRANSPORT__AUTH__*, OPENLINEAGE_API_KEY)"
    return (
        "the transport's credentials: none are configured (set OPENLINEAGE_API_KEY, transport.auth in "
        "openlineage.yml, or user:password in OPENLINEAGE_URL)"
    )


def _ledger_path(lineage_dir: Path, target: str) -> Path:
    digest = hashlib.sha256(target.encode()).hexdigest()[:16]
    return lineage_dir / "delivered" / f"openlineage-{digest}.keys"


def _parsed(event: QueuedEvent) -> dict[str, Any]:
    try:
        document: dict[str, Any] = json.loads(event.payload)
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
    lines = ledger.read_text(errors="replace").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def _http_transports(transport: Transport) -> Iterator[HttpTransport]:
    if isinstance(transport, HttpTransport):
        yield transport
    for inner in getattr(transport, "transports", []):
        yield from _http_transports(inner)


def deliver(outbox: Outbox, client: OpenLineageClient, deadline: float | None = None) -> DrainResult:
    """Send queued events through ``client`` in order until done, waiting on a failure, or ``deadline``."""
    sink = OpenLineageSink(outbox, client)
    try:
        return drain(outbox, sink, deadline or time.monotonic() + 3600)
    finally:
        sink.close()


def openlineage_sink(spec: SinkSpec, context: SinkContext) -> Sink:
    """The OpenLineage client's own transport, configured as the client is (``openlineage.yml``, ``OPENLINEAGE__*``)."""
    bridge = context.bridge
    client = context.client or make_client(bridge.events_file)
    return OpenLineageSink(context.outbox, client, bridge.lineage_dir, bridge.answer_seconds)
