"""A loopback HTTP server standing in for an OpenLineage backend; it records what it receives."""

from __future__ import annotations

import json
import socket
from http.server import BaseHTTPRequestHandler

from tests.loopback import BackgroundServer


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LineageServer(BackgroundServer):
    def __init__(self, port: int) -> None:
        self.port, self.received = port, []
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                received.append(json.loads(body))
                self.send_response(201)
                self.end_headers()

            def log_message(self, format, *args):  # noqa: A002
                pass

        super().__init__(Handler, port)
