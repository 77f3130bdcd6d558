"""Work a Ctrl-C must not cut short: the last words of a stopped command."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def uninterrupted() -> Iterator[None]:
    """A Ctrl-C during the block is ignored: it runs to its end (the main thread only, where Python takes signals)."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
