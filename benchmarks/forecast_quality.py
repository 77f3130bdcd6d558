"""How the flow's model selection does on weeks it never saw, across the year, measured as the flow measures it.

    uv run python benchmarks/forecast_quality.py --scale full \\
        --periods 2024-02:2024-04 2024-05:2024-07 2024-07:2024-09 2024-09:2024-11 2024-10:2024-12 2024-12:2025-02 \\
        --json .state/benchmarks/forecast_quality.json

Each period is FIRST:LAST month of actuals; its forecast origin is the hour after LAST ends. For each
period the benchmark writes the sample months (kept in the state folder's benchmarks/ for the next
run), builds the hourly actuals from the trip files as the ingestion job does (every zone with a
ride, every hour, zeros filled) and the daily weather the sample published, then runs the flow's own
code: the zone choice on what the backtest's first week knew, the weekly refits forecasting day by
day from what was published at each day's start, and the held-out selection, with and without the
weather candidates. It prints each held-out week (the champion chosen on the weeks before it, its
MAE against seasonal naive with a day-resampled range and against the origin-knowable oracle, the
80% and 95% intervals' coverage), then coverage per borough and per day and each candidate's time.
``--json PATH`` writes one object per held-out week and weather setting.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

DEFAULT_PERIODS = ["2024-12:2025-01"]


@dataclass(frozen=True)
class Period:
    first: str
    last: str

    @classmethod
    def parse(cls, text: str) -> Period:
        """``FIRST:LAST`` (or one month), each read by the project's one month parser."""
        from taxi_core.months import parse_month

        first, _, last = text.partition(":")
        return cls(parse_month(first), parse_month(last or first))

    @property
    def months(self) -> list[str]:
        return [f"{month:%Y-%m}" for month in pd.period_range(self.first, self.last, freq="M")]

    def __str__(self) -> str:
        return f"{self.first}:{self.last}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", default="demo", help="trips a month: demo (~150k), full (~3M) or a number")
    parser.add_argument("--periods", nargs="+", default=DEFAULT_PERIODS, help="FIRST:LAST months of actuals, each")
    parser.add_argument("--zones", type=int, default=50)
    parser.add_argument("--lookback-days", type=int, help="days of actuals each training reads (default: the flow's)")
    parser.add_argument("--evaluation-weeks", type=int, default=4)
    parser.add_argument("--selection-weeks", type=int, default=2)
    parser.add_argument("--candidates", default="", help="comma-separated (default: every candidate)")
    parser.add_argument("--json", type=Path, help="write one object per held-out week and weather setting here")
    args = parser.parse_args()

    from taxi_core.settings import load_settings
    from taxi_demo.cli import trips_per_month
    from taxi_demo.sample_source import SampleSource

    trips = trips_per_month(args.scale)
    source = SampleSource(load_settings().path("benchmarks", f"sample_{trips}"), trips_per_month=trips)
    weeks, days, seconds = [], [], {}
    for period in map(Period.parse, args.periods):
        began = time.perf_counter()
        source.write_months(period.months)
        print(f"\n== period {period}: sample months at {trips:,} trips a month in {time.perf_counter() - began:.1f} s")
        found = evaluate(source, period, args)
        weeks += found.weeks
        days.append(found.days)
        seconds[str(period)] = found.seconds
    table = pd.DataFrame(weeks)
    print("\n== every held-out week")
    print(table.to_string(index=False))
    print_summary(table, pd.concat(days, ignore_index=True), seconds)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(weeks, indent=1) + "\n")
        print(f"\nwrote {len(weeks)} held-out weeks to {args.json}")
    return 0


@dataclass(frozen=True)
class PeriodResult:
    weeks: list[dict]
    days: pd.DataFrame
    seconds: dict[str, float]


def evaluate(source, period: Period, args) -> PeriodResult:
    """The flow's backtest and held-out selection on one period, with and without the weather candidates."""
    from flows.forecasting import backtest, selection
    from flows.forecasting.models import CANDIDATES, is_scenario, make_candidate, uses_weather
    from flows.forecasting.publication import Inputs
    from flows.forecasting.threads import numeric_threads, share_of_cores
    from flows.run_settings import LOOKBACK_DAYS, resolve_settings

    actuals = pd.concat([month_actuals(source, month) for month in period.months], ignore_index=True)
    weather = pd.concat([month_weather(source, month) for month in period.months], ignore_index=True)
    as_of = str(actuals.pickup_hour.max() + pd.Timedelta(hours=1))
    names = args.candidates or ",".join(CANDIDATES)
    lookback = args.lookback_days or LOOKBACK_DAYS
    settings = resolve_settings(
        as_of, lookback, args.evaluation_weeks, args.selection_weeks, 24, args.zones, True, names
    )
    window = actuals[(actuals.pickup_hour >= settings.window_start) & (actuals.pickup_hour < settings.as_of)]
    zones = backtest.busiest_zones(window[window.pickup_hour < settings.backtest_start], settings.zones)
    origins = backtest.backtest_weeks(settings.as_of, settings.backtest_weeks)
    print(f"{settings.describe()}; {len(zones)} zones chosen before {settings.backtest_start:%Y-%m-%d}")
    inputs = Inputs(window[window.pulocationid.isin(zones)], weather, zones, 24, settings.window_start)
    results, seconds = [], {}
    with numeric_threads(share_of_cores(1)):
        for name in settings.candidates:
            began = time.perf_counter()
            results.append(backtest.rolling_origin_backtest(inputs, lambda name=name: make_candidate(name), origins))
            seconds[name] = round(time.perf_counter() - began, 1)
    predictions = pd.concat(results, ignore_index=True)
    oracle = oracle_rates(source, period.months)
    groups = borough_of_zones()
    weeks, days = [], []
    for with_weather in (False, True):
        allowed = [name for name in settings.candidates if with_weather or not uses_weather(name)]
        used = predictions[predictions.candidate.isin(allowed)]
        scenarios = [name for name in used.candidate.unique() if is_scenario(name)]
        chosen = selection.select(used, settings.selection_weeks, scenarios, groups=groups)
        for week in chosen.held_out:
            rows = chosen.forecasts[chosen.forecasts.origin == week.week]
            weeks.append(week_record(period, with_weather, week, rows, oracle))
        days.append(chosen.by("day").assign(period=str(period), weather=with_weather))
        boroughs = chosen.by("group")
        print(f"weather {'on' if with_weather else 'off'}: final champion {chosen.champion} ({chosen.final.reason})")
        print("  coverage by borough: " + ", ".join(
            f"{row.group} {row.coverage_80:.3f}/{row.coverage_95:.3f}" for row in boroughs.itertuples()
        ))  # fmt: skip
    weekly = backtest.error_metrics(predictions, ["candidate", "origin"])
    naive = weekly[weekly.candidate == backtest.BASELINE].set_index("origin").mae
    ratios = weekly.assign(ratio=weekly.mae / weekly.origin.map(naive)).pivot(
        index="origin", columns="candidate", values="ratio"
    )
    print("every candidate's MAE / naive per backtest week:")
    print(ratios.round(3).to_string())
    print("seconds per candidate (every refit and every day's forecast): " + ", ".join(
        f"{name} {value}" for name, value in seconds.items()
    ))  # fmt: skip
    return PeriodResult(weeks, pd.concat(days, ignore_index=True), seconds)


def week_record(period: Period, with_weather: bool, week, rows: pd.DataFrame, oracle: pd.DataFrame | None) -> dict:
    """One held-out week as the JSON output names it."""
    from flows.forecasting.intervals import inside

    by_day = rows.assign(day=rows.pickup_hour.dt.normalize(), inside=inside(rows, 80)).groupby("day").inside.mean()
    record = {
        "period": str(period),
        "weather": with_weather,
        "week": f"{week.week:%Y-%m-%d}",
        "champion": week.champion,
        "ratio_to_naive": round(week.ratio, 4),
        "ratio_low": round(week.ratio_range[0], 4),
        "ratio_high": round(week.ratio_range[1], 4),
        "ratio_to_oracle": None,
        "coverage_80": round(week.coverage[80], 4),
        "coverage_95": round(week.coverage[95], 4),
        "coverage_80_worst_day": round(float(by_day.min()), 4),
    }
    if oracle is not None:
        joined = rows.merge(oracle, on=["pickup_hour", "pulocationid"], how="inner")
        oracle_mae = float((joined.expected_rate - joined.total_rides).abs().mean())
        record["ratio_to_oracle"] = round(week.mae / oracle_mae, 4)
    return record


def print_summary(table: pd.DataFrame, days: pd.DataFrame, seconds: dict) -> None:
    for with_weather, rows in table.groupby("weather"):
        in_band = rows.coverage_80.between(0.75, 0.85)
        print(
            f"\n== weather {'on' if with_weather else 'off'}: {len(rows)} weeks; MAE / naive median "
            f"{rows.ratio_to_naive.median():.3f}, worst {rows.ratio_to_naive.max():.3f}; weeks worse than naive "
            f"{int((rows.ratio_to_naive > 1).sum())}; range's upper end below 1.0 in {(rows.ratio_high < 1).mean():.0%}"
            ";"
            f" 80% coverage in 75-85% in {in_band.mean():.0%} of weeks ({rows.coverage_80.min():.3f}-"
            f"{rows.coverage_80.max():.3f}); 95% coverage {rows.coverage_95.min():.3f}-{rows.coverage_95.max():.3f}"
        )
        if rows.ratio_to_oracle.notna().any():
            print(f"   MAE / oracle median {rows.ratio_to_oracle.median():.3f}, worst {rows.ratio_to_oracle.max():.3f}")
        daily = days[days.weather == with_weather].coverage_80
        print(f"   80% coverage per day: median {daily.median():.3f}, 5th percentile {np.percentile(daily, 5):.3f}, "
              f"worst {daily.min():.3f}")  # fmt: skip
    print("\n== seconds per candidate and period: " + json.dumps(seconds))


def borough_of_zones() -> dict[int, str]:
    from taxi_core.zones import load_zones

    return {zone.location_id: zone.borough for zone in load_zones()}


def oracle_rates(source, months: list[str]) -> pd.DataFrame | None:
    """The sample's origin-knowable rate per hour and zone (``expected_rate``), if its truth files record it."""
    frames = [pd.read_parquet(source.truth_path(month)) for month in months]
    if not all("expected_rate" in frame for frame in frames):
        return None
    return pd.concat(frames, ignore_index=True)[["pickup_hour", "pulocationid", "expected_rate"]]


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
