"""Loopback HTTP servers standing in for an OpenLineage backend; they record what they receive."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

from tests.loopback import BackgroundServer


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def identity(event: dict) -> tuple[str, str, str, str]:
    return (event["job"]["name"], event["run"]["runId"], event["eventType"], event["eventTime"])


class LineageServer(BackgroundServer):
    """Accepts every event (201), over keep-alive connections.

    ``refuse(event)`` names events answered with 400 instead; ``hold`` seconds is how long each request
    is held before the answer (a slow or hanging backend); ``release()`` ends every hold at once.
    """

    def __init__(self, port: int = 0, refuse: Callable[[dict], bool] = lambda event: False, hold: float = 0.0):
        self.port, self.received, self.refused, self.attempts = port, [], [], Counter()
        self.refuse, self.hold, self.released = refuse, hold, threading.Event()
        self.arrived = threading.Condition()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802
                event = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with server.arrived:
                    server.attempts[identity(event)] += 1
                    server.arrived.notify_all()
                if server.hold:
                    server.released.wait(server.hold)
                refused = server.refuse(event)
                with server.arrived:
                    (server.refused if refused else server.received).append(event)
                    server.arrived.notify_all()
                self.send_response(400 if refused else 201)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format, *args):  # noqa: A002
                pass

        super().__init__(Handler, port)

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

    def __exit__(self, *exc) -> None:
        self.released.set()
        super().__exit__(*exc)
