"""A loopback HTTP server standing in for DataHub GMS: it answers /config and records what it is sent."""

from __future__ import annotations

import gzip
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONFIG = {"models": {}, "noCode": "true", "versions": {"acryldata/datahub": {"version": "v1.3.0"}}}


class GmsStandIn:
    def __init__(self) -> None:
        self.requests: list[tuple[str, object]] = []
        requests = self.requests

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, body: dict) -> None:
                payload = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self):  # noqa: N802
                self._reply(CONFIG)

            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                requests.append((self.path, json.loads(body or b"{}")))
                self._reply({})

            def log_message(self, format, *args):  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> GmsStandIn:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def urns(self) -> set[str]:
        """Entity URNs in every proposal received, whichever API shape the emitter used."""
        text = json.dumps([body for _, body in self.requests])
        found = set()
        for marker in ("urn:li:dataJob:", "urn:li:dataset:", "urn:li:dataFlow:", "urn:li:mlModel:"):
            start = 0
            while (index := text.find(marker, start)) != -1:
                end = index
                depth = 0
                while end < len(text):
                    char = text[end]
                    depth += char == "("
                    depth -= char == ")"
                    if char in '"\\\\' or (depth < 0):
                        break
                    end += 1
                found.add(text[index:end])
                start = end
        return found
