"""A loopback HTTP server standing in for DataHub GMS: it answers /config and records what it is sent."""

from __future__ import annotations

import gzip
import json
from http.server import BaseHTTPRequestHandler

from tests.loopback import BackgroundServer

CONFIG = {"models": {}, "noCode": "true", "versions": {"acryldata/datahub": {"version": "v1.3.0"}}}


class GmsStandIn(BackgroundServer):
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

        super().__init__(Handler)

    def proposals(self) -> list[dict]:
        """Every proposal received, one at a time (``ingestProposal``) or in batches (``ingestProposalBatch``)."""
        return [
            proposal
            for _, body in self.requests
            for proposal in ([body["proposal"]] if "proposal" in body else body.get("proposals", []))
        ]

    def urns(self) -> set[str]:
        return {proposal["entityUrn"] for proposal in self.proposals()}
