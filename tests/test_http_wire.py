"""The kept HTTP connection (bridge.sinks.http_wire) against http.client, the reader it stands in for:
the same request bytes, the same reading of every way an answer can be framed, errors for cut answers."""

from __future__ import annotations

import http.client
import socketserver
import threading

import httptools
import pytest

from bridge.sinks.http_wire import KeptConnection, host_header, request_head

HEADERS = {"User-Agent": "python-requests/2", "Accept-Encoding": "gzip, deflate", "Content-Type": "application/json"}
BODY = b'{"eventType": "COMPLETE"}'

ANSWERS = {
    "length": b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
    "chunks": b"HTTP/1.1 500 Server Error\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
    "continue, then refused": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 400 Bad Request\r\nContent-Length: 4\r\n\r\nbad!",
    "to the end of the connection": b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it",
    "then closed": b"HTTP/1.1 201 Created\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
    "no content": b"HTTP/1.1 204 No Content\r\n\r\n",
}
CUT = {
    "a chunk cut": (b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nabc", http.client.IncompleteRead),
    "a length cut": (b"HTTP/1.1 201 Created\r\nContent-Length: 9\r\n\r\nabc", http.client.IncompleteRead),
    "nothing": (b"", http.client.RemoteDisconnected),
    "not HTTP": (b"SSH-2.0-OpenSSH_9.6\r\n", httptools.HttpParserError),
}


class ScriptedTarget(socketserver.ThreadingTCPServer):
    """Answers every request on 127.0.0.1 with ``answer``'s bytes, then closes the connection if the answer
    has no length or says so, or at once if ``answer`` is cut; records each request's bytes."""

    daemon_threads = True

    def __init__(self, answer: bytes, cut: bool = False) -> None:
        self.answer, self.cut, self.requests = answer, cut, []
        super().__init__(("127.0.0.1", 0), _Scripted)

    def __enter__(self):
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()


class _Scripted(socketserver.StreamRequestHandler):
    server: ScriptedTarget

    def handle(self) -> None:
        while True:
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                line = self.rfile.readline()
                if not line:
                    return
                head += line
            length = next(int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length"))
            self.server.requests.append(head + self.rfile.read(length))
            self.wfile.write(self.server.answer)
            self.wfile.flush()
            closing = self.server.cut or b"close" in self.server.answer or b"HTTP/1.0" in self.server.answer
            if closing:
                return


def _through_http_client(target: ScriptedTarget) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection(*target.server_address)
    connection.request("POST", "/api/v1/lineage", BODY, HEADERS)
    answer = connection.getresponse()
    answer.content = answer.read()  # type: ignore[attr-defined]
    connection.close()
    return answer


def _through_the_wire(target: ScriptedTarget):
    host, port = target.server_address
    connection = KeptConnection(host, port)
    connection.open(5.0)
    head = request_head("POST", "/api/v1/lineage", host_header(host, port), HEADERS, len(BODY))
    try:
        return connection.exchange(head, BODY, 5.0), connection.opened
    finally:
        connection.close()


def test_a_request_is_written_as_http_client_writes_it():
    with ScriptedTarget(ANSWERS["length"]) as target:
        _through_http_client(target)
        _through_the_wire(target)
    ours, theirs = target.requests[1], target.requests[0]
    assert ours == theirs


@pytest.mark.parametrize("framing", ANSWERS)
def test_every_framing_of_an_answer_is_read_as_http_client_reads_it(framing):
    with ScriptedTarget(ANSWERS[framing]) as target:
        theirs = _through_http_client(target)
        ours, kept = _through_the_wire(target)
    assert (ours.status, ours.reason, ours.content) == (theirs.status, theirs.reason, theirs.content)  # type: ignore[attr-defined]
    assert ours.will_close == theirs.will_close == (not kept)
    assert dict(ours.headers) == dict(theirs.getheaders())


@pytest.mark.parametrize("cut", CUT)
def test_an_answer_cut_short_or_not_http_is_an_error_and_the_connection_is_dropped(cut):
    answer, error = CUT[cut]
    with ScriptedTarget(answer, cut=True) as target:
        host, port = target.server_address
        connection = KeptConnection(host, port)
        connection.open(5.0)
        with pytest.raises(error):
            connection.exchange(request_head("POST", "/", host, HEADERS, len(BODY)), BODY, 5.0)
        assert not connection.opened


def test_a_header_that_would_split_the_request_is_refused():
    from bridge.sinks.http_wire import UnsendableHeaders

    with pytest.raises(UnsendableHeaders):
        request_head("POST", "/", "host", {"X-Note": "a\r\nInjected: yes"}, 0)
