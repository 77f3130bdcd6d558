"""What one candidate's backtest costs at every level the version serves, the week's days featured at once against
each day featured on its own (the way before), in the same run, with every forecast compared.

    ./run python benchmarks/backtest_features.py [--scale demo] [--months 2024-12 2025-01]

Builds the flow's input from sample months (as benchmarks/forecast_quality.py does: every zone served, as the
flow's default), then runs each candidate's backtest of the zones and the totals (``levels.backtest_served``, what a
train branch does) twice in this process on one thread: as the flow does it (``Inputs.forecast_frames``: one feature
build a week) and with each day's frame built on its own (``Inputs.forecast_frame`` per day). Prints each
candidate's CPU seconds both ways and whether the forecasts are identical.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).parent))


def day_by_day(inputs, origins, hours, hindsight=False):
    """The baseline: each origin's frame built on its own."""
    return [inputs.forecast_frame(origin, hours, hindsight) for origin in origins]


def cpu_seconds(work: Callable[[], object]) -> tuple[float, object]:
    began = time.process_time()
    found = work()
    return time.process_time() - began, found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", default="demo", help="trips a month: demo (~150k), full (~3M) or a number")
    parser.add_argument("--months", nargs="+", default=["2024-12", "2025-01"], help="months of actuals, YYYY-MM")
    parser.add_argument("--candidates", default="seasonal_naive,profile,glm,gbm,blend,gbm_weather,glm_perfect_weather")
    args = parser.parse_args()

    from forecast_quality import sample_history

    from flows.forecasting import backtest, levels
    from flows.forecasting.candidates import make_candidate
    from flows.forecasting.publication import Inputs
    from flows.forecasting.threads import numeric_threads
    from flows.run_settings import resolve_settings
    from taxi_core.zones import load_zones

    actuals, weather, as_of = sample_history(args.scale, args.months)
    settings = resolve_settings(as_of, 63, 4, 2, 24, 0, True, args.candidates)
    window = actuals[(actuals.pickup_hour >= settings.window_start) & (actuals.pickup_hour < settings.as_of)]
    zones = backtest.busiest_zones(window, None)
    inputs = Inputs(window[window.pulocationid.isin(zones)], weather, zones, 24, settings.window_start)
    boroughs = {zone.location_id: zone.borough for zone in load_zones()}
    weeks = backtest.backtest_weeks(settings.as_of, settings.backtest_weeks)
    print(f"{len(inputs.actuals):,} rows, {len(zones)} zones and their totals, {len(weeks)} weekly refits, one thread")

    rows, totals = [], [0.0, 0.0]
    with numeric_threads(1):
        for name in settings.candidates:

            def served(name: str = name) -> levels.SeriesBacktest:
                return levels.backtest_served(inputs, boroughs, lambda: make_candidate(name), weeks)

            week, together = cpu_seconds(served)
            with mock.patch.object(Inputs, "forecast_frames", day_by_day):
                day, alone = cpu_seconds(served)
            same = together.forecasts.equals(alone.forecasts) and together.fits.equals(alone.fits)
            rows.append((name, day, week, same))
            totals = [totals[0] + day, totals[1] + week]
    print(f"\n{'candidate':22s}{'day by day (before)':>22s}{'a week at once':>18s}{'ratio':>8s}  forecasts")
    for name, day, week, same in rows:
        print(f"{name:22s}{day:21.1f}s{week:17.1f}s{week / day:8.2f}  {'identical' if same else 'DIFFER'}")
    print(f"{'all':22s}{totals[0]:21.1f}s{totals[1]:17.1f}s{totals[1] / totals[0]:8.2f}")
    return 0 if all(same for *_, same in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
