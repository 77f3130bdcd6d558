"""One plain HTTP/1.1 connection kept open: a whole request written at once, its answer read by llhttp.

``http.client`` spends about as long formatting a request and parsing its answer's headers (with the
``email`` package) as a loopback target takes to answer it; here the request is one formatted write and
the answer is read by ``httptools`` (Node.js's llhttp, as uvicorn reads requests), which frames it
as ``http.client`` would: by its length, in chunks, or to the end of the connection; informational
(1xx) answers are passed over.
"""

from __future__ import annotations

import http.client
import re
import socket
from dataclasses import dataclass

import httptools

from bridge.errors import BridgeError

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_LINE_BREAK = re.compile(r"[\r\n\0]")
_NO_BODY = (204, 304)


class UnsendableHeaders(BridgeError, ValueError):
    """A header name or value a request cannot carry as it is: its sender hands the request to ``requests``,
    which refuses it with its own error."""


@dataclass(frozen=True)
class Answer:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    content: bytes
    will_close: bool


def request_head(method: str, path: str, host: str, headers: dict[str, str], length: int) -> bytes:
    """A request's line and headers, as ``http.client`` writes them: ``Host``, ``Content-Length``, then ``headers``."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", f"Content-Length: {length}"]
    for name, value in headers.items():
        if not isinstance(value, str) or not _TOKEN.fullmatch(name) or _LINE_BREAK.search(value):
            msg = f"the HTTP header {name!r} holds a line break or is not a token: correct it in the client's settings"
            raise UnsendableHeaders(msg)
        lines.append(f"{name}: {value}")
    try:
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    except UnicodeEncodeError as err:
        msg = f"an HTTP header is not Latin-1 ({err}): correct it in the client's settings"
        raise UnsendableHeaders(msg) from err


def host_header(host: str, port: int) -> str:
    """``Host`` as ``http.client`` writes it: an IPv6 address in brackets, the port unless it is 80."""
    named = f"[{host}]" if ":" in host else host
    return named if port == 80 else f"{named}:{port}"


class _Reading:
    """The answer as llhttp reads it (its callbacks); a 1xx answer before it is forgotten."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self._start()

    def _start(self) -> None:
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.status, self.framed, self.keep_alive, self.headed, self.complete = 0, False, False, False, False

    def on_status(self, reason: bytes) -> None:
        self.reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))
        if name.lower() in (b"content-length", b"transfer-encoding"):
            self.framed = True

    def on_headers_complete(self) -> None:
        self.status, self.headed = self.parser.get_status_code(), True
        self.keep_alive = self.parser.should_keep_alive()
        if self.status in _NO_BODY:
            self.framed = True

    def on_body(self, chunk: bytes) -> None:
        self.body.append(chunk)

    def on_message_complete(self) -> None:
        if 100 <= self.status < 200:
            self._start()
        else:
            self.complete = True

    def answer(self, will_close: bool) -> Answer:
        headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in self.headers]
        return Answer(self.status, self.reason.decode("latin-1"), headers, b"".join(self.body), will_close)


class KeptConnection:
    """A connection to ``host:port`` opened on the first request and kept while the target keeps it."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.sock: socket.socket | None = None

    @property
    def opened(self) -> bool:
        return self.sock is not None

    def open(self, timeout: float) -> None:
        """Connects within ``timeout`` seconds; raises ``OSError`` when it cannot."""
        self.sock = socket.create_connection((self.host, self.port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def exchange(self, head: bytes, body: bytes, timeout: float) -> Answer:
        """Writes the request and reads its whole answer, each step within ``timeout`` seconds.

        On any failure the connection is closed and the error raised: ``TimeoutError``;
        ``http.client.RemoteDisconnected`` when the connection ends before an answer begins (a kept
        connection the target had closed); ``http.client.IncompleteRead`` when it ends inside a framed
        answer; ``httptools.HttpParserError`` for what is not an HTTP answer.
        """
        sock = self.sock
        if sock is None:
            msg = "the connection is not open"
            raise RuntimeError(msg)
        try:
            answer = self._exchange(sock, head + body, timeout)
        except BaseException:
            self.close()
            raise
        if answer.will_close:
            self.close()
        return answer

    @staticmethod
    def _exchange(sock: socket.socket, request: bytes, timeout: float) -> Answer:
        sock.settimeout(timeout)
        sock.sendall(request)
        reading = _Reading()
        while not reading.complete:
            data = sock.recv(65536)
            if not data:
                if not reading.headed:
                    msg = "Remote end closed connection without response"
                    raise http.client.RemoteDisconnected(msg)
                if reading.framed:
                    raise http.client.IncompleteRead(b"".join(reading.body))
                return reading.answer(will_close=True)  # an answer without a length ends with its connection
            reading.parser.feed_data(data)
        return reading.answer(will_close=not reading.keep_alive)

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
