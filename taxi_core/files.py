"""Writing a file so that readers see the old content or the new, never half of it."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, content: str | bytes) -> Path:
    """Write ``content`` to a temporary file beside ``path``, then rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
    if isinstance(content, bytes):
        tmp.write_bytes(content)
    else:
        tmp.write_text(content)
    tmp.replace(path)
    return path
