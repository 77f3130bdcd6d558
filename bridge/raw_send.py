"""Send a queued event's JSON as the OpenLineage client would, without building and serialising it again.

``client.emit`` turns the typed event back into JSON (``Serde.to_json``), which costs about a
millisecond for an event with schema and column lineage facets. What ``emit`` adds to an event is
the client's configuration, the same for every event: tags, environment variables, source-code
location facets. So, on the first event, the client's own enrichment is applied and the facets it
added are taken; when nothing else changed (and there are no filters or dataset reduction), every
later event is sent as its queued JSON plus those facets, through the same local file, or through
the HTTP transport's own session, URL, auth, headers, compression, TLS settings and timeout. An
event that already has one of those facets (the client would merge them), any other transport,
and any other configuration go through ``client.emit``.
"""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Callable
from urllib.parse import urljoin, urlsplit
from urllib.request import getproxies, proxy_bypass

from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import RunEvent
from openlineage.client.serde import Serde
from openlineage.client.transport.file import FileTransport
from openlineage.client.transport.http import HttpTransport

RawSend = Callable[[str, dict], bool]
FACETED = ("run", "job")


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
        send: _FileAppender | _HttpPoster = _FileAppender(path)
    elif type(transport) is HttpTransport:
        send = _HttpPoster(transport)
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


def _added_facets(original: dict, enriched: dict) -> dict:
    before = original.get("facets", {})
    return {name: facet for name, facet in enriched.get("facets", {}).items() if name not in before}


class _Enriched:
    """Adds the client's facets to each event's JSON, then sends it."""

    def __init__(self, send, added: dict[str, dict]) -> None:
        self.send, self.added = send, added

    def __call__(self, payload: str, event: dict) -> bool:
        if any(self.added.values()):
            for part, facets in self.added.items():
                present = event[part].setdefault("facets", {})
                if present.keys() & facets.keys():
                    return False  # the client would merge its facet with the event's: let it
                present.update(facets)
            payload = json.dumps(event)
        self.send(payload)
        return True

    def close(self) -> None:
        self.send.close()


class _FileAppender:
    """The file transport's file, opened once; each event is flushed before its place moves."""

    def __init__(self, path: str) -> None:
        self.path, self.handle = path, None

    def __call__(self, payload: str) -> None:
        if self.handle is None:
            self.handle = open(self.path, "a")  # noqa: SIM115 -- kept open for the pass, closed by close()
        self.handle.write(payload + "\n")
        self.handle.flush()

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None


class HttpRefused(Exception):
    """The backend answered with an error status."""

    def __init__(self, status: int, reason: str, url: str) -> None:
        super().__init__(f"{status} {reason} for {url}")
        self.status = status


class _HttpPoster:
    """What ``HttpTransport.emit`` does after serialising: the same request (URL, auth and custom headers,
    compression, timeout, TLS verification), on one kept-alive connection.

    ``requests`` costs about a millisecond per call; ``http.client`` a tenth of that. A client
    certificate, or a proxy in the environment for this URL, keeps the transport's own session.
    """

    def __init__(self, transport: HttpTransport) -> None:
        self.transport = transport
        self.url = urljoin(transport.url, transport.endpoint)
        parts = urlsplit(self.url)
        self.https, self.host, self.port = parts.scheme == "https", parts.hostname, parts.port
        self.path = parts.path + (f"?{parts.query}" if parts.query else "")
        self.own_session = transport.cert is not None or bool(getproxies()) and not proxy_bypass(parts.hostname)
        self.connection: http.client.HTTPConnection | None = None

    def __call__(self, payload: str) -> None:
        transport = self.transport
        body, headers = transport._prepare_request(payload)
        if self.own_session:
            self._through_session(body, headers)
            return
        data = body.encode() if isinstance(body, str) else body
        reused = self.connection is not None
        try:
            response = self._post(data, headers)
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            self.close()
            if not reused:
                raise
            response = self._post(data, headers)  # the server had closed the idle connection: nothing was read
        except BaseException:
            self.close()
            raise
        if response.status >= 400:
            raise HttpRefused(response.status, response.reason, self.url)

    def _post(self, data: bytes, headers: dict) -> http.client.HTTPResponse:
        if self.connection is None:
            self.connection = self._connect()
        self.connection.timeout = self.transport.timeout
        if self.connection.sock is not None:
            self.connection.sock.settimeout(self.transport.timeout)
        self.connection.request("POST", self.path, body=data, headers=headers)
        response = self.connection.getresponse()
        response.read()
        if response.will_close:
            self.close()
        return response

    def _connect(self) -> http.client.HTTPConnection:
        if not self.https:
            return http.client.HTTPConnection(self.host, self.port, timeout=self.transport.timeout)
        verify = self.transport.verify
        context = ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)
        if verify is False:
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        return http.client.HTTPSConnection(self.host, self.port, timeout=self.transport.timeout, context=context)

    def _through_session(self, body, headers: dict) -> None:
        transport = self.transport
        request = {"url": self.url, "data": body, "headers": headers, "timeout": transport.timeout}
        request["verify"] = transport.verify
        if transport.cert is not None:
            request |= {"cert": transport.cert, "allow_redirects": False}
        response = transport.session.post(**request)
        response.close()
        if transport.cert is not None and response.is_redirect:
            raise RuntimeError("Refusing to follow a redirect while a client certificate is configured")
        response.raise_for_status()

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None
