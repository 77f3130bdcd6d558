"""A lineage sink as another package writes one, registered through the ``lineage_bridge.sinks`` entry point: it
posts each event to a catalog's HTTP API with httpx. It knows nothing of holding, parking or backing off."""

from __future__ import annotations

import httpx

from bridge.outbox.queue import QueuedEvent
from bridge.sinks.contract import Sink, SinkConfig, SinkContext


class CatalogConfig(SinkConfig):
    url: str


class CatalogSink(Sink[CatalogConfig]):
    Config = CatalogConfig
    target_setting = "the catalog's URL (the sink's url option)"

    def __init__(self, config: CatalogConfig, context: SinkContext) -> None:
        super().__init__(config, context)
        self.name = self.target = f"catalog {config.url}"
        self.client = httpx.Client(timeout=10)

    def send(self, event: QueuedEvent, seconds_left: float) -> bool:
        answer = self.client.post(self.config.url, content=event.payload, headers={"Content-Type": "application/json"})
        answer.raise_for_status()
        return True

    def close(self) -> None:
        self.client.close()
