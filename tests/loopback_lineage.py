"""Loopback HTTP servers standing in for an OpenLineage backend; they record what they receive."""

from __future__ import annotations

import gzip
import json
import socket
import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

from tests.loopback import BackgroundServer

# How an answer is framed: by its length; in chunks; after a "100 Continue"; by closing the connection
# (no length); by its length, the connection then closed without a word (a kept connection gone stale).
FRAMINGS = ("length", "chunked", "continue", "unframed", "dropped")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def identity(event: dict) -> tuple[str, str, str, str]:
    return (event["job"]["name"], event["run"]["runId"], event["eventType"], event["eventTime"])


class LineageServer(BackgroundServer):
    """Accepts every event (201), over keep-alive connections, and records each request's headers.

    ``refuse(event)`` names events answered with 400 (with a reason in the body); ``fail(event, attempt)`` those
    answered with 500 on that attempt (1, 2, ...), or with the status it returns; ``drop(event, attempt)`` those
    stored and then left without an answer (the connection closed); ``authorization`` is the ``Authorization``
    header required (401 without it); ``hold`` seconds is how long each request is held before the answer (a
    slow or hanging backend), and ``release()`` ends every hold at once; ``tls`` serves HTTPS with that server context.
    ``framing`` is how each answer is framed (see :data:`FRAMINGS`); ``connections`` counts those accepted.
    ``failure_headers`` go with every answer that is not a success (e.g. ``Retry-After``).
    """

    def __init__(
        self,
        port: int = 0,
        refuse: Callable[[dict], bool] = lambda event: False,
        hold: float = 0.0,
        fail: Callable[[dict, int], bool | int] = lambda event, attempt: False,
        drop: Callable[[dict, int], bool] = lambda event, attempt: False,
        authorization: str | None = None,
        tls: ssl.SSLContext | None = None,
        framing: str = "length",
        failure_headers: dict[str, str] | None = None,
    ):
        assert framing in FRAMINGS, framing
        self.framing, self.connections = framing, 0
        self.port, self.received, self.refused, self.attempts = port, [], [], Counter()
        self.refuse, self.hold, self.fail, self.released = refuse, hold, fail, threading.Event()
        self.drop, self.failure_headers = drop, failure_headers or {}
        self.headers: list[dict[str, str]] = []
        self.arrived = threading.Condition()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                with server.arrived:
                    server.connections += 1

            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                event = json.loads(body)
                with server.arrived:
                    server.headers.append(dict(self.headers.items()))
                    server.attempts[identity(event)] += 1
                    attempt = server.attempts[identity(event)]
                    server.arrived.notify_all()
                if authorization is not None and self.headers.get("Authorization") != authorization:
                    self._answer(401)
                    return
                if server.hold:
                    server.released.wait(server.hold)
                refused = server.refuse(event)
                failed = not refused and server.fail(event, attempt)
                dropped = not refused and not failed and server.drop(event, attempt)
                with server.arrived:
                    if not failed:
                        (server.refused if refused else server.received).append(event)
                    server.arrived.notify_all()
                if dropped:
                    self.close_connection = True  # stored, and gone before the answer
                    return
                status = 400 if refused else (500 if failed is True else int(failed)) if failed else 201
                self._answer(status, b"event refused: facet 'schema' is not valid" if refused else b"")

            def _answer(self, status: int, reason: bytes = b"") -> None:
                if server.framing == "continue":
                    self.send_response_only(100)
                    self.end_headers()
                self.send_response(status)
                for name, value in (server.failure_headers if status >= 300 else {}).items():
                    self.send_header(name, value)
                if server.framing == "chunked":
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    self.wfile.write(b"3\r\nacc\r\n5\r\nepted\r\n0\r\n\r\n")
                elif server.framing == "unframed":
                    self.end_headers()
                    self.wfile.write(b"accepted")
                    self.close_connection = True
                else:
                    self.send_header("Content-Length", str(len(reason)))
                    self.end_headers()
                    self.wfile.write(reason)
                    self.close_connection = server.framing == "dropped"

            def log_message(self, format, *args):  # noqa: A002
                pass

        super().__init__(Handler, port)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)

    @property
    def url(self) -> str:
        scheme = "https" if isinstance(self.server.socket, ssl.SSLSocket) else "http"
        return f"{scheme}://127.0.0.1:{self.server.server_address[1]}"

    def wait_for(self, count: int, timeout: float = 60.0) -> bool:
        """Wait until ``count`` events were accepted; ``False`` if they were not within ``timeout`` seconds."""
        give_up = time.monotonic() + timeout
        with self.arrived:
            while len(self.received) < count:
                if not self.arrived.wait(give_up - time.monotonic()) and time.monotonic() >= give_up:
                    return False
        return True

    def duplicates(self) -> int:
        counts = Counter(identity(event) for event in self.received)
        return sum(count - 1 for count in counts.values())

    def release(self) -> None:
        """End every hold at once, and hold nothing from now on."""
        self.released.set()

    def __exit__(self, *exc) -> None:
        self.release()
        super().__exit__(*exc)
