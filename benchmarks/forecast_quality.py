"""How the flow's model selection does on weeks it never saw, measured as the flow measures it.

    uv run python benchmarks/forecast_quality.py --scale full

Writes sample months (kept in the state folder's benchmarks/ for the next run), builds the hourly
actuals from the trip files as the ingestion job does (every zone with a ride, every hour, zeros
filled) and the daily weather the sample published, then runs the flow's own code: the zone choice
on what the backtest's first week knew, the features, the weekly rolling-origin backtest of every
candidate, and the held-out selection. Prints each held-out week (the champion chosen on the weeks
before it, its MAE against seasonal naive with a bootstrap range and against the noise floor, the
80% and 95% intervals' coverage), the summary a model version records, and each candidate's time.
"""

from __future__ import annotations

import argparse
import sys
import time

import pandas as pd


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", default="demo", help="trips a month: demo (~150k), full (~3M) or a number")
    parser.add_argument("--months", nargs="+", default=["2024-12", "2025-01"], help="months of actuals, YYYY-MM")
    parser.add_argument("--as-of", default="", help="forecast origin (default: the hour after the last month)")
    parser.add_argument("--zones", type=int, default=50)
    parser.add_argument("--lookback-days", type=int, default=63)
    parser.add_argument("--evaluation-weeks", type=int, default=4)
    parser.add_argument("--selection-weeks", type=int, default=2)
    parser.add_argument("--candidates", default="", help="comma-separated (default: every candidate)")
    args = parser.parse_args()

    from flows.forecasting import backtest, features, noise_floor, selection
    from flows.forecasting.models import CANDIDATES, is_scenario, make_candidate
    from flows.forecasting.threads import numeric_threads
    from flows.run_settings import resolve_settings
    from taxi_core.settings import load_settings
    from taxi_demo.cli import trips_per_month
    from taxi_demo.sample_source import TRUTH_DIR, SampleSource

    trips = trips_per_month(args.scale)
    source = SampleSource(load_settings().path("benchmarks", f"sample_{trips}"), trips_per_month=trips)
    started = time.perf_counter()
    source.write_months(args.months)
    print(f"sample months {', '.join(args.months)} at {trips:,} trips a month: {time.perf_counter() - started:.1f} s")

    actuals = pd.concat([month_actuals(source, month) for month in args.months], ignore_index=True)
    weather = pd.concat([month_weather(source, month) for month in args.months], ignore_index=True)
    as_of = args.as_of or str(actuals.pickup_hour.max() + pd.Timedelta(hours=1))
    names = args.candidates or ",".join(CANDIDATES)
    settings = resolve_settings(
        as_of, args.lookback_days, args.evaluation_weeks, args.selection_weeks, 24, args.zones, True, names
    )
    window = actuals[(actuals.pickup_hour >= settings.window_start) & (actuals.pickup_hour < settings.as_of)]
    zones = backtest.busiest_zones(window[window.pickup_hour < settings.backtest_start], settings.zones)
    weeks = backtest.backtest_weeks(settings.as_of, settings.backtest_weeks)
    print(f"{settings.describe()}; {len(zones)} zones chosen before {settings.backtest_start:%Y-%m-%d}")

    frame, names_used = features.build_features(
        features.complete_grid(window[window.pulocationid.isin(zones)], zones, settings.window_start, settings.as_of),
        settings.horizon_hours,
        weather[(weather.date >= settings.window_start) & (weather.date < settings.as_of)],
        features.weather_lag_days(settings.as_of.hour, settings.horizon_hours),
    )
    results, seconds = [], {}
    with numeric_threads(1):
        for name in settings.candidates:
            began = time.perf_counter()
            results.append(
                backtest.rolling_origin_backtest(frame, names_used, lambda name=name: make_candidate(name), weeks)
            )
            seconds[name] = time.perf_counter() - began
    predictions = pd.concat(results, ignore_index=True)
    truth = source.root / TRUTH_DIR
    scenarios = [name for name in settings.candidates if is_scenario(name)]

    def floor_of(rows):
        floor = noise_floor.noise_floor(rows, truth)
        return floor["mae"] if floor else None

    chosen = selection.select(predictions, settings.selection_weeks, scenarios, floor_of)
    print("\nheld-out weeks (each champion chosen on the weeks before it):")
    print(chosen.table().to_string(index=False))
    print("\nsummary:", ", ".join(f"{key} {value}" for key, value in chosen.summary().items()))
    zones_table = chosen.by_zone()
    print(
        f"zones: {int((zones_table.ratio > 0.75).sum())} of {len(zones_table)} above 0.75x naive over the held-out "
        f"weeks; 80% coverage per zone {zones_table.coverage_80.min():.3f}-{zones_table.coverage_80.max():.3f}"
    )
    print(f"final champion {chosen.champion}, chosen on {', '.join(f'{w:%Y-%m-%d}' for w in chosen.chosen_on)}")
    weekly = backtest.error_metrics(predictions, ["candidate", "origin"])
    naive = weekly[weekly.candidate == backtest.BASELINE].set_index("origin").mae
    ratios = weekly.assign(ratio=weekly.mae / weekly.origin.map(naive)).pivot(
        index="origin", columns="candidate", values="ratio"
    )
    print("\nevery candidate's MAE / naive per backtest week:")
    print(ratios.round(3).to_string())
    print("\nseconds per candidate (one thread, every week's refit):")
    print(", ".join(f"{name} {value:.1f}" for name, value in seconds.items()))
    return 0


def month_actuals(source, month: str) -> pd.DataFrame:
    """The ingestion job's actuals for a month: every eligible zone with a ride, every hour, zeros filled."""
    from forecast_assets.assets.lakehouse_tables import eligible_zones
    from taxi_demo.demand_model import month_hours

    trips = pd.read_parquet(source.trip_path(month), columns=["tpep_pickup_datetime", "PULocationID"])
    hours = month_hours(month)
    pickup = pd.to_datetime(trips.tpep_pickup_datetime)
    inside = trips[(pickup >= hours[0]) & (pickup < hours[-1] + pd.Timedelta(hours=1))]
    inside = inside.assign(pickup_hour=pickup[inside.index].dt.floor("h"), pulocationid=inside.PULocationID)
    inside = inside[inside.pulocationid.isin(eligible_zones())]
    counts = inside.groupby(["pickup_hour", "pulocationid"]).size().rename("total_rides")
    ridden = sorted(inside.pulocationid.unique())
    grid = pd.MultiIndex.from_product([hours, ridden], names=["pickup_hour", "pulocationid"])
    return counts.reindex(grid, fill_value=0).reset_index().astype({"pulocationid": "int32", "total_rides": "int64"})


def month_weather(source, month: str) -> pd.DataFrame:
    """The daily weather the sample published for a month, one column per element, as the flow reads it."""
    from taxi_demo.demand_model import daily_weather
    from taxi_demo.sample_source import NYC_COUNTIES, OTHER_COUNTIES

    weather = daily_weather(month, [*NYC_COUNTIES, *OTHER_COUNTIES], source.seed)
    return weather.assign(date=pd.to_datetime(weather.date))


if __name__ == "__main__":
    sys.exit(main())
