"""`taxi`: prepare local state and run the pipeline end to end on the embedded default."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

from forecast_assets import local_state
from forecast_assets.sources.sample_source import DEMO_SCALE_TRIPS, FULL_SCALE_TRIPS

DEMO_MONTHS = ["2024-12", "2025-01"]
SCALES = {"demo": DEMO_SCALE_TRIPS, "full": FULL_SCALE_TRIPS}


def _trips(scale: str) -> int:
    return SCALES[scale] if scale in SCALES else int(scale)


def init(months: list[str], scale: str) -> dict[str, str]:
    """Write the sample source and .env, and put them into this process's environment."""
    source = local_state.sample_source(_trips(scale))
    source.write_months(months)
    values = local_state.local_environment(source)
    local_state.write_env_file(values)
    os.environ.update(values)
    return values


def demo(months: list[str], scale: str, use_weather: bool) -> int:
    started = time.monotonic()
    values = init(months, scale)
    # Imported after the environment points at the state folder and the sample source.
    from forecast_assets.pipeline_run import ingest_months, print_summary, train

    results = ingest_months([f"{month}-01" for month in months])
    if all(result.success for result in results):
        results.append(train(use_weather=use_weather))
    print_summary(results, values, time.monotonic() - started)
    from bridge.cli import main as lineage

    print()
    lineage([])
    lineage(["picture"])
    print("Lineage of the forecast: uv run taxi-lineage show nyc_taxi.yellow_rides_hourly_forecast")
    print("Model versions:          uv run taxi-lineage model")
    return 0 if all(result.success for result in results) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="taxi", description=__doc__)
    parser.add_argument("--months", nargs="+", default=DEMO_MONTHS, help="months to use, YYYY-MM")
    parser.add_argument("--scale", default="demo", help="trips per month: demo, full (~3M) or a number")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("init", help="write the sample source and .env for dagster dev")
    demo_command = commands.add_parser("demo", help="init, ingest the months, build actuals, train and forecast")
    demo_command.add_argument("--weather", action="store_true", help="train the weather-aware candidates too")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("forecast_assets").setLevel(logging.INFO)
    if args.command == "init":
        for key, value in init(args.months, args.scale).items():
            print(f"{key}={value}")
        return 0
    return demo(args.months, args.scale, args.weather)


if __name__ == "__main__":
    sys.exit(main())
