"""An entry point registered as an installed distribution registers it: a ``.dist-info`` folder on ``sys.path``."""

from __future__ import annotations

from pathlib import Path


def install_entry_point(site: Path, distribution: str, group: str, name: str, target: str) -> Path:
    """``name = target`` in ``group``, from a distribution ``distribution`` installed under ``site``; put ``site``
    on ``sys.path`` (``monkeypatch.syspath_prepend``) and clear the reader's cache to see it."""
    info = site / f"{distribution.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {target}\n")
    return site
