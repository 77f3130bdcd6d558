"""Deliver queued events through the OpenLineage client's own transports.

Configuration is the client's: ``OPENLINEAGE_CONFIG`` / ``openlineage.yml`` / ``OPENLINEAGE__*`` /
``OPENLINEAGE_URL``. With none of them, events go to a JSON-lines file in the state folder.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from openlineage.client import OpenLineageClient

from bridge.outbox import Outbox
from forecast_assets.settings import state_path

log = logging.getLogger(__name__)

EVENTS_FILE = "openlineage_events.jsonl"


def default_events_file() -> Path:
    return state_path("lineage") / EVENTS_FILE


def user_configured() -> bool:
    """Whether the OpenLineage client would find a configuration of its own."""
    if os.environ.get("OPENLINEAGE_CONFIG") or os.environ.get("OPENLINEAGE_URL"):
        return True
    if any(name.startswith("OPENLINEAGE__") for name in os.environ):
        return True
    candidates = (Path.cwd() / "openlineage.yml", Path.home() / ".openlineage" / "openlineage.yml")
    return any(path.is_file() for path in candidates)


def make_client() -> OpenLineageClient:
    if user_configured():
        return OpenLineageClient()
    transport = {"type": "file", "log_file_path": str(default_events_file()), "append": True}
    return OpenLineageClient(config={"transport": transport})


def describe(client: OpenLineageClient) -> str:
    config = getattr(client.transport, "config", None)
    target = getattr(config, "log_file_path", None) or getattr(config, "url", None) or ""
    return f"{client.transport.kind} {target}".strip()


@dataclass(frozen=True)
class DeliveryResult:
    delivered: int
    pending: int
    error: str | None


def deliver(outbox: Outbox, client: OpenLineageClient, limit: int = 10_000) -> DeliveryResult:
    """Emit queued events in order; stop at the first failure and leave the rest queued."""
    delivered = 0
    for queued in outbox.pending(limit):
        try:
            client.transport.emit(json.loads(queued.payload))
        except Exception as err:  # any transport failure: keep the event, retry on the next pass
            log.warning("Lineage delivery stopped at event %s (%s); it stays queued", queued.seq, err)
            return DeliveryResult(delivered, outbox.counts()["pending"], str(err))
        outbox.mark_delivered(queued.seq)
        delivered += 1
    return DeliveryResult(delivered, outbox.counts()["pending"], None)
