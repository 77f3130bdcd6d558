"""This project's lineage bridge, pointed at a test's own folder."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bridge.config import LineageBridge, SinkSpec
from forecast_assets.lineage import taxi_bridge
from taxi_core.settings import Settings


def lite_sink(path: Path) -> SinkSpec:
    """DataHub Lite in ``path``, under the key the project gives DataHub."""
    return SinkSpec("datahub-lite", {"path": path}, "datahub")


def with_datahub(bridge: LineageBridge, datahub: SinkSpec | None) -> LineageBridge:
    """``bridge`` with DataHub as given (``None``: off)."""
    others = tuple(spec for spec in bridge.sinks if spec.key != "datahub")
    return replace(bridge, sinks=others + ((datahub,) if datahub else ()))


def bridge_at(folder: Path, settings: Settings, datahub: SinkSpec | None = None) -> LineageBridge:
    """The project's bridge with its outbox in ``folder`` and DataHub as given (off by default); no watcher."""
    return with_datahub(replace(taxi_bridge(settings), lineage_dir=folder, watch_command=()), datahub)
