"""The environment that keeps every tool's files in the state folder and its telemetry off.

Metaflow reads its configuration from the environment when it is first imported, and writes cards
and its client cache relative to the working directory or /tmp unless told otherwise; DataHub's
telemetry is on unless switched off. Entry points call :func:`apply_tool_environment` first thing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from taxi_core.metaflow_relocation import relocate_metaflow_records
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
    """Put :func:`tool_environment` into this process's environment; values already set win.

    Metaflow's local records then name the datastore they are in, should its state folder have been copied or
    moved: the client reads each artifact from the datastore its record names.
    """
    for key, value in tool_environment(settings).items():
        os.environ.setdefault(key, value)
    local_root = os.environ.get("METAFLOW_DATASTORE_SYSROOT_LOCAL")
    if os.environ["METAFLOW_DEFAULT_DATASTORE"] == "local" and local_root:
        relocate_metaflow_records(Path(local_root))
    return {key: os.environ[key] for key in tool_environment(settings)}


@contextmanager
def child_environment(values: Mapping[str, str]) -> Iterator[None]:
    """``values`` in this process's environment while the block runs, restored after.

    For a command that starts child processes which read their configuration from the environment and
    offer no other way in (Dagster's code server and its runs, Metaflow, Spark's launcher): the values
    hold for what the block starts, and the process is left as it was.
    """
    before = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
