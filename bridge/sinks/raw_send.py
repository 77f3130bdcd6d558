"""Send a queued event's JSON as the OpenLineage client would, without building the typed event again.

``client.emit`` turns the typed event back into JSON (``Serde.to_json``), which costs about a
millisecond for an event with schema and column lineage facets. What ``emit`` adds to an event is
the client's configuration, the same for every event: tags, environment variables, source-code
location facets. So, on the first event, the client's own enrichment is applied and the facets it
added are taken; when nothing else changed (and there are no filters or dataset reduction), every
later event is its queued JSON plus those facets, handed to the transport itself:

- the HTTP transport's own ``emit``, given the event as a dictionary (which its ``Serde`` serialises
  to the same bytes): its URL and endpoint, credentials (``user:password@`` in the URL, an API key or
  token provider, a ``.netrc``), custom headers, compression, TLS verification, CA bundle and client
  certificate, proxies and redirects all apply exactly as they do to ``client.emit``;
- a local file transport's file, appended to as the file transport does, kept open for the pass.

To a plain ``http://`` target (no proxy, client certificate or ``.netrc`` credentials in play, as the
sink's session found its environment), the transport's request itself (its body and headers, made by
the transport: credentials, custom headers, compression) is written on a connection kept open for the
pass (:mod:`bridge.sinks.http_wire`), with the session's own default headers: the request a target gets
is the one ``requests`` would send, without the per-request work of ``requests`` and ``http.client``
(most of a loopback delivery). A failed answer raises the error ``requests`` would; a connection that
cannot be opened, a header ``requests`` would refuse, and a redirect go through the transport's own
``emit``, which then raises or follows as it always does.

An event that already has one of those facets (the client would merge them), any other transport,
and any other configuration go through ``client.emit``.
"""

from __future__ import annotations

import http.client
import json
from typing import Any, Protocol, TextIO
from urllib.parse import urljoin, urlsplit

from httptools import HttpParserError
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import RunEvent
from openlineage.client.serde import Serde
from openlineage.client.transport.file import FileTransport
from openlineage.client.transport.http import HttpTransport
from requests import Response
from requests.exceptions import ConnectionError as RequestsConnectionError
from requests.exceptions import ReadTimeout
from requests.structures import CaseInsensitiveDict
from requests.utils import requote_uri

from bridge.sinks.http_wire import KeptConnection, UnsendableHeaders, host_header, request_head

FACETED = ("run", "job")


class RawSend(Protocol):
    """Sends an event (its JSON and its parsed JSON) as ``client.emit`` would; False when it cannot."""

    def __call__(self, payload: str, event: dict[str, Any]) -> bool: ...

    def close(self) -> None: ...


def raw_sender(client: OpenLineageClient, typed: RunEvent, payload: str) -> RawSend | None:
    """A function sending an event (its JSON and its parsed JSON) as ``client.emit`` would (False when it
    cannot); None when it never can with this client."""
    transport = client.transport
    if client.config.filters or client.config.dataset.reducing_enabled:
        return None
    if isinstance(transport, FileTransport):
        path = str(transport.config.log_file_path)
        if not transport.config.append or "://" in path or transport.config.debug_mode:
            return None
        send: _FileAppender | _TransportEmit | _DirectHttp = _FileAppender(path)
    elif type(transport) is HttpTransport:
        send = _DirectHttp(transport) if _DirectHttp.usable(transport) else _TransportEmit(transport)
    else:
        return None
    enriched = client.update_event_tags_facets(client.add_environment_facets(typed))
    enriched = json.loads(Serde.to_json(client.add_source_code_location_facet(enriched)))
    original = json.loads(payload)
    added = {part: _added_facets(original[part], enriched[part]) for part in FACETED}
    for part in FACETED:
        enriched[part]["facets"] = {k: v for k, v in enriched[part].get("facets", {}).items() if k not in added[part]}
        if not enriched[part]["facets"] and "facets" not in original[part]:
            del enriched[part]["facets"]
    return _Enriched(send, added) if enriched == original else None


def _added_facets(original: dict[str, Any], enriched: dict[str, Any]) -> dict[str, Any]:
    before = original.get("facets", {})
    return {name: facet for name, facet in enriched.get("facets", {}).items() if name not in before}


class _Enriched:
    """Adds the client's facets to each event, then sends it."""

    def __init__(self, send: _FileAppender | _TransportEmit | _DirectHttp, added: dict[str, dict[str, Any]]) -> None:
        self.send, self.added = send, added

    def __call__(self, payload: str, event: dict[str, Any]) -> bool:
        queued: str | None = payload  # None once facets are added and the event must be serialized again
        if any(self.added.values()):
            tail = _tail(event) if not self.added["job"] and "schemaURL" in event else None
            for part, facets in self.added.items():
                present = event[part].setdefault("facets", {})
                if present.keys() & facets.keys():
                    return False  # the client would merge its facet with the event's: let it
                present.update(facets)
            queued = payload[: -len(tail)] + _tail(event) if tail and payload.endswith(tail) else None
        self.send(queued, event)
        return True

    def close(self) -> None:
        self.send.close()


def _tail(event: dict[str, Any]) -> str:
    """The end of an event's JSON with sorted keys: its last two keys, ``run`` and ``schemaURL``.

    The client adds its facets to the run (its tags): only this part of the queued JSON changes, so the
    rest is kept as it is, not serialized again (the event's inputs and outputs are most of it).
    """
    return f', "run": {json.dumps(event["run"], sort_keys=True)}, "schemaURL": {json.dumps(event["schemaURL"])}}}'


class _FileAppender:
    """The file transport's file, opened once; each event is flushed before its place moves."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.handle: TextIO | None = None

    def __call__(self, payload: str | None, event: dict[str, Any]) -> None:
        if self.handle is None:
            self.handle = open(self.path, "a")  # noqa: SIM115 -- kept open for the pass, closed by close()
        # The queued JSON is the client's serialization, and so are the facets it adds: their union
        # is what Serde writes (no null, enum or date left to turn), with sorted keys.
        self.handle.write((payload if payload is not None else json.dumps(event, sort_keys=True)) + "\n")
        self.handle.flush()

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None


class _TransportEmit:
    """The HTTP transport's own ``emit``, given the event as a dictionary."""

    def __init__(self, transport: HttpTransport) -> None:
        self.transport = transport

    def __call__(self, payload: str | None, event: dict[str, Any]) -> None:
        self.transport.emit(event)  # type: ignore[arg-type]  # Serde.to_json takes a dictionary as it is

    def close(self) -> None:
        """The transport's session is the sink's to close."""


class _DirectHttp:
    """The HTTP transport's request on a connection kept open for the pass (see the module's docstring)."""

    def __init__(self, transport: HttpTransport) -> None:
        self.transport = transport
        self.emit = _TransportEmit(transport)
        self.url = urljoin(transport.url, transport.endpoint)
        parts = urlsplit(self.url)
        self.port = parts.port or 80
        self.host = host_header(parts.hostname or "", self.port)
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.connection = KeptConnection(parts.hostname or "", self.port)
        self.redirected = False

    @staticmethod
    def usable(transport: HttpTransport) -> bool:
        """A plain ``http://`` URL whose requests nothing else changes: no proxy, certificate or other credentials."""
        session = transport.session
        url = urljoin(transport.url, transport.endpoint)
        parts = urlsplit(url)
        return (
            parts.scheme == "http"
            and not parts.username
            and not session.trust_env  # the sink read the environment once (bridge.sinks.openlineage)
            and not session.proxies
            and session.auth is None
            and transport.cert is None
            and requote_uri(url) == url
        )

    def __call__(self, payload: str | None, event: dict[str, Any]) -> None:
        if self.redirected:
            self.emit(payload, event)
            return
        # As for the file: the queued JSON and the client's facets are its serialization already.
        text = payload if payload is not None else json.dumps(event, sort_keys=True)
        body, headers = self.transport._prepare_request(text)  # the transport's own body and headers
        data = body.encode() if isinstance(body, str) else body
        try:
            # requests puts its session's defaults first
            head = request_head("POST", self.path, self.host, {**self.transport.session.headers, **headers}, len(data))
        except UnsendableHeaders:
            self.emit(payload, event)  # requests refuses the header with its own error
            return
        timeout: Any = self.transport.timeout  # the sink sets (connect, answer), as requests takes it
        connect, answer = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        for attempt in (1, 2):
            reused = self.connection.opened
            if not reused:
                try:
                    self.connection.open(connect)
                except OSError:
                    self.connection.close()
                    self.emit(payload, event)  # it cannot connect either, and raises what requests raises
                    return
            try:
                answered = self.connection.exchange(head, data, answer)
            except TimeoutError as err:
                msg = f"no answer from {self.url} within {answer} s"
                raise ReadTimeout(msg) from err
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as err:
                if reused and attempt == 1:
                    continue  # the target had closed the kept-open connection: once more on a new one
                raise RequestsConnectionError(err) from err
            except (http.client.IncompleteRead, HttpParserError) as err:
                raise RequestsConnectionError(err) from err
            break
        if 300 <= answered.status < 400:
            self.redirected = True  # requests follows redirects: from now on, it sends
            self.emit(payload, event)
            return
        if answered.status >= 400:
            response = Response()
            response.status_code, response.reason, response.url = answered.status, answered.reason, self.url
            response.headers = CaseInsensitiveDict(answered.headers)
            response._content = answered.content
            response.raise_for_status()

    def close(self) -> None:
        self.connection.close()
