"""A Dagster ``workspace.yaml``: its code locations, read without loading their code (nor Dagster)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from bridge.errors import BridgeError


class CodeLocationNotFound(LookupError, BridgeError):
    """The workspace names no such code location, or its code does not load."""


def _entries(workspace_file: Path) -> list[tuple[str, dict[str, Any]]]:
    loaded = yaml.safe_load(workspace_file.read_text()) or {}
    entries: list[tuple[str, dict[str, Any]]] = []
    for item in loaded.get("load_from", []):
        for kind in ("python_module", "python_file"):
            if kind in item:
                value = item[kind]
                entries.append(
                    (kind, value if isinstance(value, dict) else {"module_name": value, "relative_path": value})
                )
    return entries


def find_location(workspace_file: Path, location_name: str) -> tuple[str, dict[str, Any]]:
    """The ``load_from`` entry of ``location_name`` (its kind and settings), read without loading its code."""
    entries = _entries(workspace_file)
    names = [
        entry.get("location_name") or entry.get("module_name") or entry.get("relative_path") for _, entry in entries
    ]
    if location_name not in names:
        msg = (
            f"{workspace_file} has no code location {location_name!r} (it has: {', '.join(map(str, names)) or 'none'})"
        )
        raise CodeLocationNotFound(msg)
    return entries[names.index(location_name)]
