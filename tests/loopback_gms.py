"""A loopback HTTP server standing in for DataHub GMS: it answers /config and records what it is sent."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

from tests.loopback import BackgroundServer

CONFIG = {"models": {}, "noCode": "true", "versions": {"acryldata/datahub": {"version": "v1.3.0"}}}


class GmsStandIn(BackgroundServer):
    """Records every request; ``answer(body)`` gives a POST's status (200 unless it says otherwise) and ``token`` is
    the bearer token required (401 without it). Only what was answered 200 is kept in ``requests``."""

    def __init__(self, answer: Callable[[bytes], int] = lambda body: 200, token: str | None = None) -> None:
        self.requests: list[tuple[str, object]] = []
        requests = self.requests

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, body: dict, status: int = 200) -> None:
                payload = json.dumps(body).encode()
                self.send_response(status)
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
                if token is not None and self.headers.get("Authorization") != f"Bearer {token}":
                    self._reply({"message": "Unauthorized"}, 401)
                    return
                status = answer(body)
                if status != 200:
                    self._reply({"message": f"refused with {status}: aspect not valid", "status": status}, status)
                    return
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
