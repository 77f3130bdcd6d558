"""A loopback HTTP server that misbehaves on purpose, the way real networks and CDNs do."""

from __future__ import annotations

import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from tests.loopback import BackgroundServer

# What the server does with each request, in order; the last entry repeats.
GOOD, RESET, CUT_CHUNKED, CUT_LENGTH, STALL, UNAVAILABLE, MISSING, UNAUTHORIZED = (
    "good", "reset", "cut_chunked", "cut_length", "stall", "unavailable", "missing", "unauthorized",
)  # fmt: skip


class HostileServer(BackgroundServer):
    """Serves ``body``, behaving per request as ``plan`` says; counts the requests.

    With ``root`` and ``target``, only paths ending in ``target`` misbehave; the rest are the files
    under ``root``, served well. A HEAD request follows the plan too: a reset closes the connection
    before any answer; the faults of a body (cut, stall) answer it well.
    """

    def __init__(
        self,
        body: bytes,
        plan: list[str],
        stall_seconds: float = 3.0,
        root: Path | None = None,
        target: str = "",
    ) -> None:
        self.body, self.plan, self.stall_seconds = body, plan, stall_seconds
        self.root, self.target = root, target
        self.requests = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format, *args):  # noqa: A002
                pass

            def do_GET(self):  # noqa: N802
                if server.root is not None and not self.path.endswith(server.target):
                    server._file(self)
                    return
                with server.lock:
                    behaviour = server.plan[min(server.requests, len(server.plan) - 1)]
                    server.requests += 1
                getattr(server, f"_{behaviour}")(self)

            def do_HEAD(self):  # noqa: N802
                with server.lock:
                    behaviour = server.plan[min(server.requests, len(server.plan) - 1)]
                    server.requests += 1
                if behaviour == RESET:
                    server._rst(self)
                elif behaviour in (UNAVAILABLE, MISSING, UNAUTHORIZED):
                    getattr(server, f"_{behaviour}")(self)  # send_error writes no body for HEAD
                else:
                    server._headers(self)

        super().__init__(Handler)

    def _headers(self, handler, status: int = 200, length: int | None = None, chunked: bool = False) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/octet-stream")
        if chunked:
            handler.send_header("Transfer-Encoding", "chunked")
        else:
            handler.send_header("Content-Length", str(len(self.body) if length is None else length))
        handler.end_headers()

    def _file(self, handler) -> None:
        path = self.root / handler.path.lstrip("/")
        if not path.is_file():
            handler.send_error(404, "Not Found")
            return
        body = path.read_bytes()
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _good(self, handler) -> None:
        self._headers(handler)
        handler.wfile.write(self.body)

    def _reset(self, handler) -> None:
        self._headers(handler)
        handler.wfile.write(self.body[: len(self.body) // 3])
        handler.wfile.flush()
        self._rst(handler)

    def _rst(self, handler) -> None:
        # SO_LINGER with a zero timeout makes close() send a TCP RST: a connection reset.
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        handler.connection.close()
        handler.close_connection = True

    def _cut_chunked(self, handler) -> None:
        self._headers(handler, chunked=True)
        half = self.body[: len(self.body) // 2]
        handler.wfile.write(f"{len(self.body):x}\r\n".encode() + half)  # a chunk announced in full, sent half
        handler.wfile.flush()
        handler.close_connection = True

    def _cut_length(self, handler) -> None:
        self._headers(handler)
        handler.wfile.write(self.body[: len(self.body) // 2])
        handler.wfile.flush()
        handler.close_connection = True

    def _stall(self, handler) -> None:
        self._headers(handler)
        handler.wfile.write(self.body[:1024])
        handler.wfile.flush()
        time.sleep(self.stall_seconds)  # the network goes quiet mid-body

    def _unavailable(self, handler) -> None:
        handler.send_error(503, "Service Unavailable")

    def _missing(self, handler) -> None:
        handler.send_error(404, "Not Found")

    def _unauthorized(self, handler) -> None:
        handler.send_error(401, "Unauthorized")
