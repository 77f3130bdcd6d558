"""Send a queued event's JSON as the OpenLineage client would, without building the typed event again.

``client.emit`` turns the typed event back into JSON (``Serde.to_json``), which costs about a
millisecond for an event with schema and column lineage facets. What ``emit`` adds to an event is
the client's configuration, the same for every event: tags, environment variables, source-code
location facets. So, on the first event, the client's own enrichment is applied and the facets it
added are taken; when nothing else changed (and there are no filters or dataset reduction), every
later event is its queued JSON plus those facets, handed to the transport itself:

- the HTTP transport's own request (see :class:`_TransportEmit`), through its own session: its URL and
  endpoint, credentials (``user:password@`` in the URL, an API key or token provider, a ``.netrc``),
  custom headers, compression, TLS verification, CA bundle and client certificate, proxies and
  redirects all apply exactly as they do to ``client.emit``;
- a local file transport's file, appended to as the file transport does, kept open for the pass.

An event that already has one of those facets (the client would merge them), any other transport,
and any other configuration go through ``client.emit``.
"""

from __future__ import annotations

import json
from typing import Any, TextIO
from urllib.parse import urljoin

from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import RunEvent
from openlineage.client.serde import Serde
from openlineage.client.transport.file import FileTransport
from openlineage.client.transport.http import HttpTransport

from bridge.errors import BridgeError

FACETED = ("run", "job")


class RedirectRefused(BridgeError, RuntimeError):
    """The target answered with a redirect, which a request with a client certificate never follows."""


def enriched_sender(client: OpenLineageClient, typed: RunEvent, payload: str) -> Enriched | None:
    """A function sending an event (its JSON and its parsed JSON) as ``client.emit`` would (False when it
    cannot); None when it never can with this client."""
    transport = client.transport
    if client.config.filters or client.config.dataset.reducing_enabled:
        return None
    if isinstance(transport, FileTransport):
        path = str(transport.config.log_file_path)
        if not transport.config.append or "://" in path or transport.config.debug_mode:
            return None
        send: _FileAppender | _TransportEmit = _FileAppender(path)
    elif type(transport) is HttpTransport:
        send = _TransportEmit(transport)
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
    return Enriched(send, added) if enriched == original else None


def _added_facets(original: dict[str, Any], enriched: dict[str, Any]) -> dict[str, Any]:
    before = original.get("facets", {})
    return {name: facet for name, facet in enriched.get("facets", {}).items() if name not in before}


class Enriched:
    """Adds the client's facets to each event, then sends it; ``False`` when the client must (it would merge)."""

    def __init__(self, send: _FileAppender | _TransportEmit, added: dict[str, dict[str, Any]]) -> None:
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
    """The HTTP transport's own request for the event's JSON, posted through the transport's own session.

    What ``HttpTransport.emit`` does after serializing the event, with the queued JSON as the serialization:
    the transport prepares the body and headers (credentials, custom headers, compression), and its
    ``requests`` session posts them with its timeout, TLS verification and client certificate (never
    following a redirect with a certificate, as ``emit`` refuses to). ``emit`` itself walks the whole event
    again to drop nulls the queued JSON never has: a third of a delivery to a local target.
    """

    def __init__(self, transport: HttpTransport) -> None:
        self.transport = transport
        self.url = urljoin(transport.url, transport.endpoint)

    def __call__(self, payload: str | None, event: dict[str, Any]) -> None:
        transport = self.transport
        text = payload if payload is not None else json.dumps(event, sort_keys=True)
        body, headers = transport._prepare_request(text)
        post: dict[str, Any] = {"data": body, "headers": headers, "timeout": transport.timeout}
        post["verify"] = transport.verify
        if transport.cert is not None:
            post["cert"], post["allow_redirects"] = transport.cert, False
        answer = transport.session.post(self.url, **post)
        answer.close()
        if transport.cert is not None and answer.is_redirect:
            moved_to = answer.headers.get("location") or "another address"
            msg = (
                f"{self.url} redirected to {moved_to}: with a client certificate no redirect is followed (the "
                "OpenLineage client's transport follows none either); set the transport's url to where it redirects"
            )
            raise RedirectRefused(msg)
        answer.raise_for_status()

    def close(self) -> None:
        """The transport's session is the sink's to close."""
