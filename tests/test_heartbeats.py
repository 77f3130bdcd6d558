"""Long work says what it is doing at least every ten seconds: the heartbeat while a block runs, and the silence
watch that speaks only when the work it follows has gone quiet."""

from __future__ import annotations

import threading

from taxi_core.progress import SilenceWatch, reporting_while


def test_a_block_reports_at_its_pace_and_its_ends():
    lines: list[str] = []
    finished = threading.Event()
    with reporting_while(lines.append, "Slow work", lambda: "half done", every=0.05):
        assert not finished.wait(0.3)  # the block's own work: a wait the heartbeat must talk through
    assert lines[0] == "Slow work: started" and lines[-1].startswith("Slow work: done in")
    beats = lines[1:-1]
    assert len(beats) >= 2 and all(beat.startswith("Slow work: ") and beat.endswith("s, half done") for beat in beats)


def test_a_heartbeat_without_ends_says_only_that_it_still_works():
    lines: list[str] = []
    with reporting_while(lines.append, "still working", every=0.05, ends=False):
        threading.Event().wait(0.2)
    assert lines and all(line.startswith("still working: ") for line in lines)


def test_the_silence_watch_speaks_only_after_a_quiet_spell():
    lines: list[str] = []
    running = ["load"]
    watch = SilenceWatch(lines.append, lambda: running[0], every=0.5)
    with watch.watching():
        for _ in range(6):  # the work talks every 0.05 s: the watch has nothing to add
            threading.Event().wait(0.05)
            watch.heard()
        assert lines == []
        running[0] = "evaluate"
        threading.Event().wait(1.2)  # then goes quiet: the watch names the step
    assert lines and all(line.startswith("evaluate: still running, ") for line in lines)
    assert len(lines) <= 3  # once per quiet spell of 0.5 s, not on every tick
