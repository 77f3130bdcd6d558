"""The environment that keeps every tool's files in the state folder and its telemetry off.

Metaflow reads its configuration from the environment when it is first imported, and writes cards
and its client cache relative to the working directory or /tmp unless told otherwise; DataHub's
telemetry is on unless switched off. Entry points call :func:`apply_tool_environment` first thing.
"""

from __future__ import annotations

import os

from taxi_core.settings import Settings


def tool_environment(settings: Settings) -> dict[str, str]:
    state = settings.state_dir
    values = {
        "METAFLOW_DEFAULT_DATASTORE": settings.metaflow_datastore,
        "METAFLOW_DEFAULT_METADATA": "local",
        "METAFLOW_CLIENT_CACHE_PATH": str(state / "metaflow" / "client_cache"),
        # Metaflow refuses to run without a user name; CI and containers often have none.
        "METAFLOW_USER": settings.user,
        "DATAHUB_TELEMETRY_ENABLED": "false",
        "MPLCONFIGDIR": str(state / "tmp" / "matplotlib"),
    }
    if settings.metaflow_datastore == "local":
        values |= {
            "METAFLOW_DATASTORE_SYSROOT_LOCAL": settings.metaflow_root,
            "METAFLOW_CARD_LOCALROOT": str(state / "metaflow" / "mf.cards"),
        }
    return values


def apply_tool_environment(settings: Settings) -> dict[str, str]:
    """Put :func:`tool_environment` into this process's environment; values already set win."""
    for key, value in tool_environment(settings).items():
        os.environ.setdefault(key, value)
    return {key: os.environ[key] for key in tool_environment(settings)}


def withdraw_tool_environment(settings: Settings) -> None:
    """Take back what :func:`apply_tool_environment` put in for ``settings``, before moving to another state folder.

    Values a user exported differ from the derived ones and stay.
    """
    for key, value in tool_environment(settings).items():
        if os.environ.get(key) == value:
            del os.environ[key]
