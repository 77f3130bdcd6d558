"""The git commit a checkout is at, read from its ``.git`` folder (no ``git`` command, no network)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path


@dataclass(frozen=True)
class Checkout:
    commit: str
    branch: str | None  # None for a detached HEAD


@cache
def checkout_of(root: Path) -> Checkout | None:
    """The commit HEAD names in ``root``'s git folder; ``None`` outside a git checkout (an installed package)."""
    git = root / ".git"
    if git.is_file():  # a worktree: ".git" names the real folder
        git = (root / git.read_text().removeprefix("gitdir:").strip()).resolve()
    head = git / "HEAD"
    if not head.is_file():
        return None
    text = head.read_text().strip()
    if not text.startswith("ref:"):
        return Checkout(text, None)
    ref = text.removeprefix("ref:").strip()
    common = git / "commondir"
    base = (git / common.read_text().strip()).resolve() if common.is_file() else git
    loose = base / ref
    if loose.is_file():
        return Checkout(loose.read_text().strip(), ref.removeprefix("refs/heads/"))
    packed = base / "packed-refs"
    for line in packed.read_text().splitlines() if packed.is_file() else []:
        sha, _, name = line.partition(" ")
        if name == ref:
            return Checkout(sha, ref.removeprefix("refs/heads/"))
    return None
