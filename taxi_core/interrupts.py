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


def terminate_as_interrupt() -> None:
    """From now on SIGTERM stops this process as Ctrl-C does (a ``KeyboardInterrupt``): what it started is stopped
    on the way out. Metaflow's runtime, ended by a plain SIGTERM, leaves its running task behind."""
    signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"stopped by signal {signal.Signals(signum).name}")
