"""A pass collects garbage less often while it runs, and leaves the collector as it found it."""

from __future__ import annotations

import gc
import threading

import pytest

from bridge.run.collections_paused import PASS_THRESHOLD, fewer_collections


@pytest.fixture
def default_threshold():
    found = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*found)


def test_the_threshold_is_raised_for_the_block_and_put_back_after_a_failure(default_threshold):
    with pytest.raises(RuntimeError), fewer_collections():
        assert gc.get_threshold() == (PASS_THRESHOLD, 10, 10)
        raise RuntimeError("a pass that fails")
    assert gc.get_threshold() == (700, 10, 10)


def test_a_threshold_set_higher_by_the_user_is_kept(default_threshold):
    gc.set_threshold(PASS_THRESHOLD * 2, 5, 5)
    with fewer_collections():
        assert gc.get_threshold() == (PASS_THRESHOLD * 2, 5, 5)
    assert gc.get_threshold() == (PASS_THRESHOLD * 2, 5, 5)


def test_overlapping_passes_put_it_back_when_the_last_one_ends(default_threshold):
    first_inside, first_may_leave = threading.Event(), threading.Event()
    seen: list[tuple[int, ...]] = []

    def first() -> None:
        with fewer_collections():
            first_inside.set()
            first_may_leave.wait(timeout=30)
        seen.append(gc.get_threshold())  # the second pass still runs

    thread = threading.Thread(target=first)
    thread.start()
    assert first_inside.wait(timeout=30)
    with fewer_collections():
        first_may_leave.set()
        thread.join(timeout=30)
        assert seen == [(PASS_THRESHOLD, 10, 10)]
    assert gc.get_threshold() == (700, 10, 10)
