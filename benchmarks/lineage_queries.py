"""Time the lineage command's questions on the lineage index, against walking every event without one.

    uv run python benchmarks/lineage_queries.py [--outbox .state/lineage/outbox.sqlite] [--scale 1 10 100]

Takes the queued events of a demo (the state folder's outbox; the golden events if there is none)
and, for each ``--scale``, copies them that many times as new runs writing new versions (the same
jobs and datasets: a project after many months). For each it prints: building the index from
scratch, and each question asked in-process, on the index and on the baseline (parse every queued
event and rebuild the same answer, which is what the command did without an index). Last, the whole
``taxi-lineage show`` and ``taxi-lineage status`` commands in a fresh process, imports included, on
the demo's own outbox, with an idle ``taxi-lineage pass``, beside a bare Python start in the same run (the floor).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness import repeated
from lineage_history import demo_events, fill

FORECAST = "nyc_taxi.yellow_rides_hourly_forecast"


def _time(question: Callable[[], object], repeat: int) -> float:
    return statistics.median(repeated(question, repeat)) * 1000


def _baseline(outbox_path: Path) -> Callable[[], dict]:
    """Without an index: parse every queued event and rebuild the graph, last runs and versions."""
    from bridge.index.lineage_index import event_facts
    from bridge.outbox.outbox import Outbox

    def answer() -> dict:
        edges, runs, versions = set(), {}, {}
        for queued in Outbox(outbox_path).queue.after(0, limit=10_000_000):
            event = json.loads(queued.payload)
            facts = event_facts(event)
            edges |= facts.edges
            runs.setdefault(event["job"]["name"], event["eventTime"])
            versions.update({dataset: version for direction, dataset, version in facts.io if direction == "output"})
        return {"edges": edges, "runs": runs, "versions": versions}

    return answer


def _scale_rows(events: list[dict], scale: int, repeat: int) -> list[tuple]:
    with tempfile.TemporaryDirectory(prefix="lineage-bench-") as folder:
        return _timed_queries(Path(folder), events, scale, repeat)


def _timed_queries(folder: Path, events: list[dict], scale: int, repeat: int) -> list[tuple]:
    from bridge.index import queries
    from bridge.index.lineage_index import LineageIndex
    from bridge.outbox.outbox import Outbox

    outbox_path = fill(folder, events, scale)
    queued = len(events) * scale
    started = time.perf_counter()
    index = LineageIndex(folder / "index.sqlite", Outbox(outbox_path))
    index.catch_up()
    build_ms = (time.perf_counter() - started) * 1000
    with index.reading() as connection:
        graph = queries.graph(connection)
        forecast = graph.find(FORECAST)
        version = queries.versions_of(connection, forecast)[-1]

        def show() -> None:
            graph = queries.graph(connection)
            graph.tree(forecast, True), graph.tree(forecast, False)
            queries.last_runs(connection), queries.current_versions(connection), queries.reach(connection, forecast)

        def version_tree() -> None:
            queries.version_tree(connection, forecast, version)

        def column_tree() -> None:
            queries.column_tree(connection, forecast, "forecasted_total_rides", None)

        timed = [
            ("show TABLE (trees, last runs, versions)", _time(show, repeat), _time(_baseline(outbox_path), repeat)),
            ("show TABLE --version V", _time(version_tree, repeat), None),
            ("show TABLE.COLUMN", _time(column_tree, repeat), None),
            ("index catch-up, nothing new", _time(index.catch_up, repeat), None),
        ]
    return [(scale, queued, "index build from scratch", build_ms, None)] + [(scale, queued, *row) for row in timed]


def _command_seconds(outbox_path: Path, repeat: int, arguments: list[str] | None) -> float:
    """Median seconds of the command with ``arguments`` in a fresh process; ``None``: Python doing nothing."""
    state = outbox_path.parent.parent
    script = "pass" if arguments is None else f"from forecast_assets.lineage_cli import main; main({arguments!r})"
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", script],
            check=True,
            capture_output=True,
            env={**os.environ, "TAXI_STATE_DIR": str(state)},
        )
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--outbox", type=Path, default=Path(".state/lineage/outbox.sqlite"))
    parser.add_argument("--scale", type=int, nargs="+", default=[1, 10, 100], help="copies of the demo's runs")
    parser.add_argument("--repeat", type=int, default=5, help="times each question is asked (the median is shown)")
    args = parser.parse_args()
    events = demo_events(args.outbox)
    print(f"{len(events)} queued events per copy of the demo\n")
    print(f"{'copies':>6} {'events':>7}  {'question':<42} {'index ms':>9} {'baseline ms':>12}")
    for scale in args.scale:
        for copies, queued, question, index_ms, baseline_ms in _scale_rows(events, scale, args.repeat):
            baseline = f"{baseline_ms:12.1f}" if baseline_ms is not None else f"{'-':>12}"
            print(f"{copies:>6} {queued:>7}  {question:<42} {index_ms:9.1f} {baseline}")
    if args.outbox.exists():
        print("\nin a fresh process, imports included (median of 3):")
        for arguments in (["pass"], ["show", FORECAST], ["model"], ["status"], ["dead-letters"], None):
            seconds = _command_seconds(args.outbox.resolve(), 3, arguments)
            said = f"taxi-lineage {' '.join(arguments)}" if arguments else "python -c pass (the floor)"
            print(f"  {said:<60} {seconds:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
