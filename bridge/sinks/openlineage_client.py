"""The OpenLineage client as the user configured it, and what the bridge reads of it: where it sends events,
where its credentials are set, its HTTP transports, and a queued event as the client's typed event.

The client's own configuration (``OPENLINEAGE_CONFIG`` / ``openlineage.yml`` / ``OPENLINEAGE__*`` /
``OPENLINEAGE_URL``: transports, filters, tags, environment facets) is used unchanged. When it names
no transport, events go to a JSON-lines file in the lineage folder instead of the console.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.transport.console import ConsoleTransport
from openlineage.client.transport.file import FileConfig, FileTransport
from openlineage.client.transport.http import HttpTransport, TokenProvider
from openlineage.client.transport.transport import Transport
from requests.utils import get_netrc_auth

from bridge.redaction import redact


def make_client(events_file: Path) -> OpenLineageClient:
    """The client as the user configured it; one that appends to ``events_file`` when they configured no transport.

    The client resolves its own configuration; only when it fell back to printing to the console does
    the bridge choose the transport, keeping the rest of the client's configuration (filters, tags, facets).
    """
    with _client_warnings_told_plainly():
        client = OpenLineageClient()
    configured = (client.config.transport or {}).get("type")  # what the client itself looks at
    if client.transport.kind == ConsoleTransport.kind and not configured:
        events_file.parent.mkdir(parents=True, exist_ok=True)
        client = OpenLineageClient(transport=FileTransport(FileConfig(log_file_path=str(events_file), append=True)))
    return client


@contextmanager
def _client_warnings_told_plainly() -> Iterator[None]:
    """While the client reads its configuration: its "will print events to console" warning is hidden (when it
    falls back, the bridge picks the file), and its other warnings lose any credentials (it quotes the
    environment's values, ``user:password@`` in ``OPENLINEAGE_URL`` included)."""
    logger = logging.getLogger("openlineage.client.client")

    def told_plainly(record: logging.LogRecord) -> bool:
        said = record.getMessage()
        if "transport configuration" in said:
            return False
        record.msg, record.args = redact(said), ()
        return True

    logger.addFilter(told_plainly)
    try:
        yield
    finally:
        logger.removeFilter(told_plainly)


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


def read_environment_once(transport: HttpTransport) -> None:
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
    http = next(iter(http_transports(transport)), None)
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


def http_transports(transport: Transport) -> Iterator[HttpTransport]:
    if isinstance(transport, HttpTransport):
        yield transport
    for inner in getattr(transport, "transports", []):
        yield from http_transports(inner)
