"""The commit a checkout is at, read from .git, agrees with git itself: loose refs, packed refs, a detached
HEAD and a worktree."""

import subprocess
from pathlib import Path

from taxi_core.git_checkout import Checkout, checkout_of


def _git(folder: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main", *args]
    return subprocess.run(command, cwd=folder, check=True, capture_output=True, text=True).stdout.strip()


def _fresh(folder: Path) -> Path:
    _git(folder, "init", "-q")
    (folder / "a.txt").write_text("a")
    _git(folder, "add", "a.txt")
    _git(folder, "commit", "-qm", "one")
    checkout_of.cache_clear()
    return folder


def test_the_commit_is_the_one_git_names(tmp_path):
    repo = _fresh(tmp_path)
    assert checkout_of(repo) == Checkout(_git(repo, "rev-parse", "HEAD"), "main")
    _git(repo, "pack-refs", "--all")
    checkout_of.cache_clear()
    assert checkout_of(repo) == Checkout(_git(repo, "rev-parse", "HEAD"), "main")
    _git(repo, "checkout", "-q", "--detach")
    checkout_of.cache_clear()
    assert checkout_of(repo) == Checkout(_git(repo, "rev-parse", "HEAD"), None)


def test_a_worktree_names_its_own_branch(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _fresh(repo)
    (repo / "b.txt").write_text("b")
    _git(repo, "add", "b.txt")
    _git(repo, "commit", "-qm", "two")
    _git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"), "HEAD~1")
    checkout_of.cache_clear()
    assert checkout_of(tmp_path / "side") == Checkout(_git(tmp_path / "side", "rev-parse", "HEAD"), "side")
    assert checkout_of(tmp_path / "side").commit != checkout_of(repo).commit


def test_outside_a_checkout_there_is_no_commit(tmp_path):
    checkout_of.cache_clear()
    assert checkout_of(tmp_path) is None
