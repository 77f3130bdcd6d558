"""Run ids derived from what identifies a run, so a replay of the same records yields the same ids."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from openlineage.client.uuid import generate_static_uuid


def run_id(started_at: datetime, *identity: str) -> UUID:
    """The same identity and start time always give the same run id."""
    return generate_static_uuid(started_at, "/".join(identity).encode())
