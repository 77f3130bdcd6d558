"""A followed flow's run folders in Metaflow's local metadata, digested: read with a directory listing, no Metaflow."""

from __future__ import annotations

import hashlib
from pathlib import Path


def folder_digest(folder: Path) -> str:
    """A digest of the run folders in ``folder``, a flow's folder in Metaflow's local metadata: a new run changes it."""
    names = sorted(entry.name for entry in folder.iterdir() if entry.is_dir()) if folder.is_dir() else []
    return hashlib.sha1("\n".join(names).encode()).hexdigest()
