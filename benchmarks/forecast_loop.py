"""What the daily loop costs: a day's forecast at each distance from the data's end, a month forecast in one run
against the same month forecast a day at a time (the schedule's way), and a month's scoring.

    ./run python benchmarks/forecast_loop.py [--month 2025-02] [--repeats 3]

Runs on the state folder's serving version and tables (after `./run demo`), in this process, through the same
functions the Dagster assets call (forecast_assets/assets/forecast_loop.py), reading the tables through
pyiceberg; nothing is written. Prints medians with min-max and the machine's load.
"""

from __future__ import annotations

import argparse
import os

import pandas as pd
from harness import repeated, spread


def _line(label: str, seconds: list[float], extra: str = "") -> str:
    return f"  {label:52s} {spread(seconds)}{extra}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--month", default="2025-02", help="the month forecast, YYYY-MM (default: the demo's)")
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()

    from taxi_core.settings import load_settings
    from taxi_core.tool_env import apply_tool_environment

    settings = load_settings()
    apply_tool_environment(settings)
    # Metaflow reads its configuration when imported: after the tool environment is in place.
    from metaflow import Run, namespace

    from flows.forecasting import accuracy, loop_tables, registry, serving, tables
    from taxi_core.catalog import CatalogConfig, open_catalog
    from taxi_core.names import MODEL_NAME

    catalog = open_catalog(CatalogConfig.from_settings(settings))
    version = registry.serving_version(catalog, MODEL_NAME)
    if version is None:
        raise SystemExit("No model version serves: run `./run demo` first.")
    namespace(None)
    served = Run(version.version).data.served
    days = list(pd.date_range(f"{options.month}-01", periods=pd.Period(options.month).days_in_month, freq="D"))

    def forecast(wanted: list[pd.Timestamp], known: pd.DataFrame | None = None) -> pd.DataFrame:
        start, end = served.reads_from(wanted)
        actuals, _ = tables.read_actuals(catalog, start, end)
        return serving.forecast(served, actuals, None, wanted, known=known)

    print(f"Serving {version.version} ({version.champion}): {len(served.zones)} zones, their boroughs and the city")
    print(f"Load: {' '.join(f'{load:.2f}' for load in os.getloadavg())} (1, 5, 15 min), {os.cpu_count()} cores")
    first, last = repeated(lambda: forecast(days[:1]), options.repeats), repeated(lambda: forecast(days[-1:]), 1)
    print(_line(f"one day, {days[0]:%Y-%m-%d} (the data's end)", first))
    print(_line(f"one day, {days[-1]:%Y-%m-%d} ({len(days) - 1} days past it)", last))
    month = repeated(lambda: forecast(days), 1)
    print(_line(f"{len(days)} days in one run (a backfill)", month, f", {month[0] / len(days):.2f} s a day"))
    # The schedule's way: each day alone, starting from the days before it as written (forecast_loop.py).
    written = forecast(days)
    scheduled = sum(
        repeated(lambda n=n: forecast(days[n : n + 1], written[written.forecast_day < days[n]]), 1)[0]
        for n in range(len(days))
    )
    print(_line(f"the same {len(days)} days one at a time from the day before", [scheduled]))
    afresh = sum(repeated(lambda day=day: forecast([day]), 1)[0] for day in days)
    print(_line(f"baseline: the same {len(days)} days one at a time from the data's end", [afresh]))

    def score() -> None:
        for day in days:
            rows, _ = loop_tables.read_daily_forecast(catalog, day.date())
            data_end = pd.Timestamp(rows.data_end.iloc[0])
            actuals, _ = tables.read_actuals(catalog, data_end - accuracy.WEEK, day + pd.Timedelta(days=1))
            accuracy.score_forecast(rows, actuals)

    print(_line(f"scoring {len(days)} days (read, score; nothing written)", repeated(score, options.repeats)))


if __name__ == "__main__":
    main()
