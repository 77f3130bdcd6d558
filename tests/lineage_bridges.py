"""This project's lineage bridge, pointed at a test's own folder."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bridge.config import DataHubTarget, LineageBridge
from forecast_assets.lineage import taxi_bridge
from taxi_core.settings import Settings


def bridge_at(folder: Path, settings: Settings, datahub: DataHubTarget | None = None) -> LineageBridge:
    """The project's bridge with its outbox in ``folder`` and DataHub as given (off by default); no watcher."""
    return replace(
        taxi_bridge(settings), lineage_dir=folder, datahub=datahub or DataHubTarget(kind="off"), watch_command=()
    )
