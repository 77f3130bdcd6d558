"""How long the flow's training takes per candidate, with its thread limits and without them holding.

    uv run python benchmarks/training_time.py --scale full

Builds the flow's backtest input from sample months (as benchmarks/forecast_quality.py does), then
trains every candidate's weekly rolling-origin backtest three ways in the same run:

- branches: one process per candidate, all at once, each limited to its share of the cores after
  the numeric libraries load (what the flow's train step does);
- branches, limit before import: the same processes with the limit entered before scikit-learn is
  imported (the flow before the fix: OpenMP never sees the limit, so every branch starts a thread per
  core and they spin against each other);
- one process: the candidates one after another in a single process on every core, the floor.

Prints each candidate's seconds, each way's wall time, and the ratios to the single process.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from harness import timed

sys.path.insert(0, str(Path(__file__).parent))

WAYS = ("branches", "branches, limit before import", "one process")


def train_candidate(name: str, inputs, weeks, threads: int, way: str) -> float:
    """One candidate's backtest, the way named; its seconds (process start-up left out)."""
    from flows.forecasting.backtest import rolling_origin_backtest
    from flows.forecasting.candidates import make_candidate

    if way == "branches":
        from flows.forecasting.threads import load_numeric_libraries

        load_numeric_libraries()  # as the train step's first fit does; seconds the other ways pay inside
    began = time.perf_counter()
    if way == "branches, limit before import":
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=threads):
            rolling_origin_backtest(inputs, lambda: make_candidate(name), weeks)
    elif way == "branches":
        from flows.forecasting.threads import numeric_threads

        with numeric_threads(threads):
            rolling_origin_backtest(inputs, lambda: make_candidate(name), weeks)
    else:
        rolling_origin_backtest(inputs, lambda: make_candidate(name), weeks)
    return time.perf_counter() - began


def in_branches(names, inputs, weeks, way: str) -> tuple[float, dict[str, float]]:
    from flows.forecasting.threads import share_of_cores

    threads = share_of_cores(len(names))
    began = time.perf_counter()
    # Fresh interpreters, as Metaflow starts a process per task: nothing numeric is loaded yet.
    with ProcessPoolExecutor(max_workers=len(names), mp_context=get_context("spawn")) as pool:
        futures = {name: pool.submit(train_candidate, name, inputs, weeks, threads, way) for name in names}
        seconds = {name: future.result() for name, future in futures.items()}
    return time.perf_counter() - began, seconds


def in_one_process(names, inputs, weeks) -> tuple[float, dict[str, float]]:
    return timed(lambda: {name: train_candidate(name, inputs, weeks, 0, "one process") for name in names})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", default="demo", help="trips a month: demo (~150k), full (~3M) or a number")
    parser.add_argument("--months", nargs="+", default=["2024-12", "2025-01"], help="months of actuals, YYYY-MM")
    parser.add_argument("--skip-before", action="store_true", help="leave out the way with the limit before import")
    args = parser.parse_args()

    from forecast_quality import sample_history

    from flows.forecasting import backtest
    from flows.forecasting.candidates import candidate_names
    from flows.forecasting.publication import Inputs
    from flows.run_settings import resolve_settings

    actuals, weather, as_of = sample_history(args.scale, args.months)
    settings = resolve_settings(as_of, 63, 4, 2, 24, 50, True, ",".join(candidate_names()))
    window = actuals[(actuals.pickup_hour >= settings.window_start) & (actuals.pickup_hour < settings.as_of)]
    zones = backtest.busiest_zones(window[window.pickup_hour < settings.backtest_start], settings.zones)
    inputs = Inputs(window[window.pulocationid.isin(zones)], weather, zones, 24, settings.window_start)
    weeks = backtest.backtest_weeks(settings.as_of, settings.backtest_weeks)
    names = settings.candidates
    print(f"{len(inputs.actuals):,} rows, {len(zones)} zones, {len(weeks)} weekly refits per candidate, "
          f"{len(names)} candidates")  # fmt: skip

    results = {"one process": in_one_process(names, inputs, weeks)}
    results["branches"] = in_branches(names, inputs, weeks, "branches")
    if not args.skip_before:
        results["branches, limit before import"] = in_branches(names, inputs, weeks, "branches, limit before import")
    floor = results["one process"][0]
    print(f"\n{'candidate':22s}" + "".join(f"{way:>32s}" for way in results))
    for name in names:
        print(f"{name:22s}" + "".join(f"{seconds[name]:31.1f}s" for _, seconds in results.values()))
    print(f"{'wall':22s}" + "".join(f"{wall:31.1f}s" for wall, _ in results.values()))
    print(f"{'wall / one process':22s}" + "".join(f"{wall / floor:31.2f}x" for wall, _ in results.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
