"""Long work that says what it is doing at least every ten seconds, however busy the machine."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

REPORT_EVERY_SECONDS = 10.0


def print_now(line: str) -> None:
    """Print ``line`` at once: a progress line must not wait in a pipe's buffer."""
    print(line, flush=True)


@contextmanager
def reporting_while(
    report: Callable[[str], None],
    what: str,
    progress: Callable[[], str | None] = lambda: None,
    every: float = REPORT_EVERY_SECONDS,
    ends: bool = True,
) -> Iterator[None]:
    """Call ``report`` every ``every`` seconds while the block runs (with ``progress()``), and, with ``ends``, when
    it starts and when it is done."""
    started = time.monotonic()
    done = threading.Event()

    def watch() -> None:
        while not done.wait(every):
            now = progress()
            report(f"{what}: {time.monotonic() - started:.0f} s" + (f", {now}" if now else ""))

    if ends:
        report(f"{what}: started")
    watcher = threading.Thread(target=watch, name="progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
    if ends:
        report(f"{what}: done in {time.monotonic() - started:.1f} s")


class SilenceWatch:
    """Reports when the work it follows has said nothing for ``every`` seconds: what runs, and for how long.

    The work calls :meth:`heard` whenever it says something; ``running()`` names what is running now.
    """

    def __init__(
        self, report: Callable[[str], None], running: Callable[[], str], every: float = REPORT_EVERY_SECONDS
    ) -> None:
        self._report, self._running, self._every = report, running, every
        self._last = self._started = time.monotonic()
        self._done = threading.Event()
        self._lock = threading.Lock()

    def heard(self) -> None:
        with self._lock:
            self._last = time.monotonic()

    @contextmanager
    def watching(self) -> Iterator[SilenceWatch]:
        watcher = threading.Thread(target=self._watch, name="silence-watch", daemon=True)
        watcher.start()
        try:
            yield self
        finally:
            self._done.set()
            watcher.join()

    def _watch(self) -> None:
        while True:
            with self._lock:
                wait = self._last + self._every - time.monotonic()
            if self._done.wait(max(wait, 0.0)):
                return
            with self._lock:
                silent = time.monotonic() - self._last >= self._every
            if silent:
                self._report(f"{self._running()}: still running, {time.monotonic() - self._started:.0f} s in")
                self.heard()
