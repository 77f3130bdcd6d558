"""How close each candidate forecaster comes to the best achievable error, measured as the flow measures it.

    uv run python benchmarks/forecast_quality.py --scale full

Writes sample months (kept in the state folder's benchmarks/ for the next run), builds the hourly
actuals from the trip files as the ingestion job does (each month's busiest zones, every hour, zeros
filled) and the daily weather the sample published, then runs the flow's own code: the zone choice,
the features, the rolling-origin backtest of every candidate and the error metrics. Prints, per
candidate, MAE / RMSE / WAPE, the ratio to seasonal naive (the baseline) and to the noise floor
(forecasting with the sample's true rate), and where the time went. Scenario candidates (perfect
weather) are reported apart: they know what no forecaster knows at the origin.
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
    parser.add_argument("--zones", type=int, default=50)
    parser.add_argument("--candidates", default="", help="comma-separated (default: every candidate)")
    args = parser.parse_args()

    from flows.forecasting import backtest, features, noise_floor
    from flows.forecasting.models import CANDIDATES, is_scenario, make_candidate
    from flows.run_settings import resolve_settings
    from taxi_core.settings import load_settings
    from taxi_demo.cli import trips_per_month
    from taxi_demo.sample_source import TRUTH_DIR, SampleSource

    trips = trips_per_month(args.scale)
    source = SampleSource(load_settings().path("benchmarks", f"sample_{trips}"), trips_per_month=trips)
    started = time.perf_counter()
    source.write_months(args.months)
    print(f"sample months {', '.join(args.months)} at {trips:,} trips a month: {time.perf_counter() - started:.1f} s")

    actuals = pd.concat([month_actuals(source, month, args.zones) for month in args.months], ignore_index=True)
    weather = pd.concat([month_weather(source, month) for month in args.months], ignore_index=True)
    as_of = actuals.pickup_hour.max() + pd.Timedelta(hours=1)
    names = args.candidates or ",".join(CANDIDATES)
    settings = resolve_settings(str(as_of), 42, 7, 24, args.zones, True, names)
    window = actuals[(actuals.pickup_hour >= settings.window_start) & (actuals.pickup_hour < settings.as_of)]
    zones = backtest.busiest_zones(window, settings.zones)
    window = window[window.pulocationid.isin(zones)]
    origins = backtest.backtest_origins(settings.as_of, settings.backtest_days, settings.horizon_hours)
    print(f"{settings.describe()}; {len(zones)} zones, {len(origins)} origins")

    results, seconds = [], {}
    for name in settings.candidates:
        began = time.perf_counter()
        frame, names_used = features.build_features(
            features.complete_grid(window, zones, settings.window_start, settings.as_of),
            settings.horizon_hours,
            weather[(weather.date >= settings.window_start) & (weather.date < settings.as_of)],
            features.weather_lag_days(settings.as_of.hour, settings.horizon_hours),
        )
        results.append(
            backtest.rolling_origin_backtest(
                frame, names_used, lambda name=name: make_candidate(name), origins, settings.horizon_hours
            )
        )
        seconds[name] = time.perf_counter() - began
    predictions = pd.concat(results, ignore_index=True)
    metrics = backtest.error_metrics(predictions, ["candidate"]).set_index("candidate")
    floor = noise_floor.noise_floor(predictions, source.root / TRUTH_DIR)
    naive = metrics.loc["seasonal_naive", "mae"]
    print(f"\n{'candidate':22s} {'MAE':>7s} {'RMSE':>7s} {'WAPE':>6s} {'/naive':>7s} {'/floor':>7s} {'seconds':>8s}")
    for name, row in metrics.sort_values("mae").iterrows():
        scenario = " (scenario)" if is_scenario(name) else ""
        print(
            f"{name + scenario:22s} {row.mae:7.2f} {row.rmse:7.2f} {row.wape:6.3f} {row.mae / naive:7.2f} "
            f"{row.mae / floor['mae']:7.2f} {seconds[name]:8.1f}"
        )
    print(f"{'noise floor':22s} {floor['mae']:7.2f} {floor['rmse']:7.2f} {floor['wape']:6.3f}")
    scenarios = [name for name in metrics.index if is_scenario(name)]
    print(f"champion (scenarios excluded): {backtest.choose_champion(metrics.reset_index(), scenarios)}")
    return 0


def month_actuals(source, month: str, zones: int) -> pd.DataFrame:
    """The ingestion job's actuals for a month: its busiest eligible zones, every hour, zeros filled."""
    from forecast_assets.assets.lakehouse_tables import eligible_zones
    from taxi_demo.demand_model import month_hours

    trips = pd.read_parquet(source.trip_path(month), columns=["tpep_pickup_datetime", "PULocationID"])
    hours = month_hours(month)
    pickup = pd.to_datetime(trips.tpep_pickup_datetime)
    inside = trips[(pickup >= hours[0]) & (pickup < hours[-1] + pd.Timedelta(hours=1))]
    inside = inside.assign(pickup_hour=pickup[inside.index].dt.floor("h"), pulocationid=inside.PULocationID)
    inside = inside[inside.pulocationid.isin(eligible_zones())]
    totals = inside.groupby("pulocationid").size().reset_index(name="n")
    busiest = totals.sort_values(["n", "pulocationid"], ascending=[False, True]).head(zones).pulocationid
    counts = inside.groupby(["pickup_hour", "pulocationid"]).size().rename("total_rides")
    grid = pd.MultiIndex.from_product([hours, sorted(busiest)], names=["pickup_hour", "pulocationid"])
    return counts.reindex(grid, fill_value=0).reset_index().astype({"pulocationid": "int32", "total_rides": "int64"})


def month_weather(source, month: str) -> pd.DataFrame:
    """The daily weather the sample published for a month, one column per element, as the flow reads it."""
    from taxi_demo.demand_model import daily_weather
    from taxi_demo.sample_source import NYC_COUNTIES, OTHER_COUNTIES

    weather = daily_weather(month, [*NYC_COUNTIES, *OTHER_COUNTIES], source.seed)
    return weather.assign(date=pd.to_datetime(weather.date))


if __name__ == "__main__":
    sys.exit(main())
