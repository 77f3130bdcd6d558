"""Deliver queued events through the OpenLineage client's ``emit``, so its whole configuration applies
(:mod:`bridge.sinks.openlineage_client`).

The module loads neither the client nor ``requests``: the idle check reads this sink's place without them.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pydantic import Field

from bridge.outbox.queue import QueuedEvent, UnreadableEvent, event_document
from bridge.redaction import redact
from bridge.sinks.contract import Sink, SinkConfig, SinkContext, SinkMisconfigured
from bridge.sinks.failures import NoAnswer, Unsendable

if TYPE_CHECKING:
    from openlineage.client import OpenLineageClient
    from openlineage.client.event_v2 import RunEvent

    from bridge.sinks.enriched_send import Enriched

# How long a sent request is waited on for its answer, unless the client's configured timeout is longer.
DEFAULT_ANSWER_SECONDS = 60.0
EVENT_TYPES = frozenset({"START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER"})  # the spec's RunState
LEGACY_NAME = "openlineage"  # the sink's name in the outbox before places were kept per target
FILE_TARGET = f"{LEGACY_NAME} file "  # the name of a sink whose target is one file of events, appended to


class OpenLineageConfig(SinkConfig):
    """The OpenLineage client's own configuration applies unchanged; these are the bridge's additions."""

    client: Any = None  # a ready OpenLineageClient (tests, embedding); None: the client as the user configured it
    events_file: Path | None = None  # where events go when the client names no transport (default: the lineage folder)
    answer_seconds: float = Field(DEFAULT_ANSWER_SECONDS, gt=0)  # how long a request already sent is waited on


class OpenLineageSink(Sink[OpenLineageConfig]):
    """The OpenLineage client's transport as a sink, one per target: its place is kept in the outbox, per event.

    A new or changed target (another URL, endpoint or file) starts from the first event, so it gets the
    whole history in order. HTTP requests are bounded: no retries inside the transport (an event is sent
    once per attempt, and attempts are judged by :mod:`bridge.sinks.drain`); connecting waits as long as the
    client's configured timeout or what the pass has left, but once sent, a request is waited on for
    ``answer_seconds`` (at least the configured timeout): a slow target is not sent an event again while
    it is still taking the first one in. Each request carries an ``Idempotency-Key`` header, the same for
    every attempt at one event, so a target can drop a repeat.

    A ledger of delivered keys is kept per target apart from the outbox, so an outbox rebuilt from the
    sources does not send a target what it already has.
    """

    Config = OpenLineageConfig
    target_setting = "OPENLINEAGE_URL (or transport.url in openlineage.yml)"

    def __init__(self, config: OpenLineageConfig, context: SinkContext) -> None:
        # The client and requests load when a pass delivers, never for the idle check.
        from requests.adapters import HTTPAdapter
        from urllib3.util import Retry

        from bridge.sinks.http_answers import only_a_success
        from bridge.sinks.openlineage_client import (
            credentials_setting,
            http_transports,
            read_environment_once,
            target_of,
        )

        super().__init__(config, context)
        lineage_dir = context.bridge.lineage_dir
        client = config.client or _configured_client(config.events_file or context.bridge.events_file)
        self.client: OpenLineageClient = client
        self.target = target_of(client)
        # A file in the lineage folder is named inside it: moving the folder keeps the target's place.
        self.name = f"{LEGACY_NAME} {target_of(client, lineage_dir)}"
        self.credentials_setting = credentials_setting(client.transport)
        self.answer_seconds = config.answer_seconds
        self.outbox.places.adopt(LEGACY_NAME, self.name)
        self.ledger = _ledger_path(lineage_dir, self.name)
        self.known = _keys(self.ledger) if self.outbox.rebuilt else frozenset()
        self._ledger: TextIO | None = None
        self._send: Enriched | None = None
        self._send_decided = False  # on the first event: see bridge.sinks.enriched_send
        self.http = list(http_transports(client.transport))
        self.configured = [(transport.timeout, dict(transport.config.custom_headers)) for transport in self.http]
        self.verify = [transport.verify for transport in self.http]
        for transport in self.http:
            transport.config.adapter = HTTPAdapter(max_retries=Retry(0, read=False))
            transport.session = None  # a new session, mounted with the adapter above
            read_environment_once(transport)
            transport.session.hooks["response"].append(only_a_success)

    def position(self) -> int:
        """The bridge's own events file, gone or emptied, starts again from the first event, as DataHub's files do."""
        events_file = _own_events_file(self.config, self.context, self.name)
        if events_file is not None and not _holds_events(events_file):
            return 0
        return super().position()

    @classmethod
    def caught_up(cls, config: OpenLineageConfig, context: SinkContext, name: str, last_seq: int) -> bool:
        events_file = _own_events_file(config, context, name)
        if events_file is not None and not _holds_events(events_file):
            return last_seq == 0
        return super().caught_up(config, context, name, last_seq)

    def send(self, event: QueuedEvent, seconds_left: float) -> bool:
        # Loaded with the client by now; deferred so the idle check, which imports this module, never loads them.
        from requests.exceptions import ReadTimeout

        from bridge.sinks.enriched_send import enriched_sender
        from bridge.sinks.openlineage_client import idempotency_key

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
            if not self._send_decided:
                self._send, self._send_decided = enriched_sender(self.client, _typed(event), event.payload), True
            if self._send is None or not self._send(event.payload, document):
                self.client.emit(_typed(event))
        except ReadTimeout as err:
            msg = f"no answer from {self.target} within {answer:.0f} s: it may have the event; sent again later"
            raise NoAnswer(msg, answer) from err
        self._note_delivered(event.key)
        return True

    def _note_delivered(self, key: str) -> None:
        if self._ledger is None:
            self.ledger.parent.mkdir(parents=True, exist_ok=True)
            new = not self.ledger.exists()
            self._ledger = self.ledger.open("a")
            if new:
                self._ledger.write(f"# {self.target}\n")
        self._ledger.write(key + "\n")

    def flush(self) -> None:
        """Each move of the place is committed at once: a killed pass re-sends at most the event in flight."""
        if self._ledger is not None:
            self._ledger.flush()

    def close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None
        if self._send:
            self._send.close()
        for transport, (timeout, headers), verify in zip(self.http, self.configured, self.verify, strict=True):
            transport.timeout, transport.config.custom_headers, transport.verify = timeout, headers, verify
            transport.close()

    @classmethod
    def set_aside(cls, config: OpenLineageConfig, context: SinkContext, name: str) -> str:
        """The target gets every event again, from the first: its ledger of delivered keys is set aside too."""
        ledger = _ledger_path(context.bridge.lineage_dir, name)
        if ledger.exists():
            ledger.replace(ledger.with_name(f"{ledger.name}.{time.strftime('%Y%m%dT%H%M%S')}.aside"))
        return super().set_aside(config, context, name)


def _configured_client(events_file: Path) -> OpenLineageClient:
    """:func:`make_client`, its configuration errors as one line naming the setting (never a credential)."""
    # The client loads only when a pass delivers (see the module's docstring).
    from bridge.sinks.openlineage_client import make_client

    try:
        return make_client(events_file)
    except Exception as err:  # the client raises KeyError, ValueError, RuntimeError or TypeError for its settings
        reason = redact(" ".join(f"{type(err).__name__}: {err}".split()))
        msg = (
            f"the OpenLineage client's configuration cannot work ({reason}); fix OPENLINEAGE_URL / "
            "OPENLINEAGE_API_KEY, the OPENLINEAGE__TRANSPORT__* variables or the transport in openlineage.yml "
            "(OPENLINEAGE_CONFIG)"
        )
        raise SinkMisconfigured(msg) from None


def _own_events_file(config: OpenLineageConfig, context: SinkContext, name: str) -> Path | None:
    """The file of events the bridge appends to when the client names no transport, if the sink ``name`` is it (a
    transport the user configured keeps its own files); ``None`` for any other target."""
    lineage_dir = context.bridge.lineage_dir
    own = config.events_file or context.bridge.events_file
    named = lineage_dir / name.removeprefix(FILE_TARGET)  # an absolute path stays itself
    return own if name.startswith(FILE_TARGET) and named == own else None


def _holds_events(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 0


def _ledger_path(lineage_dir: Path, target: str) -> Path:
    digest = hashlib.sha256(target.encode()).hexdigest()[:16]
    return lineage_dir / "delivered" / f"openlineage-{digest}.keys"


def _parsed(event: QueuedEvent) -> dict[str, Any]:
    try:
        document = event_document(event.payload)
    except UnreadableEvent as err:
        raise Unsendable(f"event {event.seq} is {err}") from err
    if document.get("eventType") not in EVENT_TYPES:
        msg = f"event {event.seq} is not an OpenLineage run event (no event type {document.get('eventType')!r})"
        raise Unsendable(msg)
    return document


def _typed(event: QueuedEvent) -> RunEvent:
    # The client loads only when a pass delivers (see the module's docstring).
    from bridge.sinks.openlineage_client import run_event_from_json

    try:
        return run_event_from_json(event.payload)
    except (ValueError, KeyError, TypeError) as err:  # the client's parser raises these for JSON it cannot type
        msg = f"event {event.seq} is not an OpenLineage run event ({type(err).__name__}: {err})"
        raise Unsendable(msg) from err


def _keys(ledger: Path) -> frozenset[str]:
    if not ledger.exists():
        return frozenset()
    lines = ledger.read_text(errors="replace").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))
