"""How a version does on weeks it never saw, at every level it serves, across the year, measured as the flow
measures it.

    ./run python benchmarks/forecast_quality.py --periods 2024-11:2025-02 2024-10:2025-01 2024-08:2024-11 \\
        --json .state/benchmarks/forecast_quality.json

Each period is FIRST:LAST month of actuals; its forecast origin is the hour after LAST ends. For each
period the benchmark writes the sample months (kept in the state folder's benchmarks/ for the next
run), builds the hourly actuals from the trip files as the ingestion job does (every zone with a
ride, every hour, zeros filled) and the daily weather the sample published, then runs the flow's own
code: every zone with rides served (or the ``--zones`` busiest), each borough's total and the city backtested with
the same weekly refits, forecasting day by day from what was published at each day's start; the held-out
selection on the zones, with and without the weather candidates; each held-out week's champion reconciled across
the levels and each day's intervals calibrated per level on the hours before it. It prints each period's figures
per level and borough, the city's forecast on each holiday held out, each held-out week's zones (the champion
chosen on the weeks before it, its MAE against seasonal naive with a day-resampled range and against the
origin-knowable oracle, the 80% and 95% intervals' coverage), then over every period each level and borough's
held-out hours, MAE against naive and coverage, and each candidate's time.
``--json PATH`` writes one object per held-out week, weather setting, level and borough.
"""

from __future__ import annotations

import argparse
import functools
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
    parser.add_argument("--zones", type=int, default=0, help="the N busiest zones served (default 0: every zone)")
    parser.add_argument("--lookback-days", type=int, help="days of actuals each training reads (default: the flow's)")
    parser.add_argument("--evaluation-weeks", type=int, default=4)
    parser.add_argument("--selection-weeks", type=int, default=2)
    parser.add_argument("--candidates", default="", help="comma-separated (default: every candidate)")
    parser.add_argument("--json", type=Path, help="write one object per held-out week, weather, level and borough here")
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
    print("\n== every held-out week, its zones as served")
    print(
        table[(table.level == "zone") & (table.borough == "all")]
        .drop(columns=["level", "borough"])
        .to_string(index=False)
    )
    print_summary(table, pd.concat(days, ignore_index=True), seconds)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(weeks, indent=1) + "\n")
        print(f"\nwrote {len(weeks)} rows (held-out week, weather, level, borough) to {args.json}")
    return 0


@dataclass(frozen=True)
class PeriodResult:
    weeks: list[dict]
    days: pd.DataFrame
    seconds: dict[str, float]


def evaluate(source, period: Period, args) -> PeriodResult:
    """The flow's backtest, held-out selection and per-level evaluation on one period, with and without the weather
    candidates: every zone served (or the ``--zones`` busiest), each borough's total and the city, as served."""
    from flows.forecasting import backtest, levels, selection
    from flows.forecasting.candidates import candidate_names, is_scenario, make_candidate, uses_weather
    from flows.forecasting.publication import Inputs
    from flows.forecasting.threads import numeric_threads, share_of_cores
    from flows.run_settings import LOOKBACK_DAYS, resolve_settings

    actuals = pd.concat([month_actuals(source, month) for month in period.months], ignore_index=True)
    weather = pd.concat([month_weather(source, month) for month in period.months], ignore_index=True)
    as_of = str(actuals.pickup_hour.max() + pd.Timedelta(hours=1))
    names = args.candidates or ",".join(candidate_names())
    lookback = args.lookback_days or LOOKBACK_DAYS
    settings = resolve_settings(
        as_of, lookback, args.evaluation_weeks, args.selection_weeks, 24, args.zones, True, names
    )
    window = actuals[(actuals.pickup_hour >= settings.window_start) & (actuals.pickup_hour < settings.as_of)]
    known = window[window.pickup_hour < settings.backtest_start]
    zones = backtest.busiest_zones(known, settings.zones) if settings.zones else sorted(known.pulocationid.unique())
    origins = backtest.backtest_weeks(settings.as_of, settings.backtest_weeks)
    boroughs = borough_of_zones()
    print(f"{settings.describe()}; {len(zones)} zones served (their boroughs' totals and the city's summed from them)")
    inputs = Inputs(window[window.pulocationid.isin(zones)], weather, zones, 24, settings.window_start)
    served, seconds, zone_backtests = {}, {}, []
    with numeric_threads(share_of_cores(1)):
        for name in settings.candidates:
            began = time.perf_counter()
            make = functools.partial(make_candidate, name)
            found, fits = levels.zone_backtest(inputs, make, origins)
            zone_backtests.append(found)
            served[name] = levels.backtest_series(inputs, boroughs, make, origins, found, fits)
            seconds[name] = round(time.perf_counter() - began, 1)
    predictions = pd.concat(zone_backtests, ignore_index=True)
    oracle = oracle_rates(source, period.months)
    reconciled = {}

    def reconciled_of(name: str) -> pd.DataFrame:
        if name not in reconciled:
            reconciled[name] = levels.reconciled(served[name])
        return reconciled[name]

    weeks, days = [], []
    for with_weather in (False, True):
        allowed = [name for name in settings.candidates if with_weather or not uses_weather(name)]
        used = predictions[predictions.candidate.isin(allowed)]
        scenarios = [name for name in used.candidate.unique() if is_scenario(name)]
        chosen = selection.select(used, settings.selection_weeks, scenarios, groups=boroughs)
        champions = {week.week: week.champion for week in chosen.held_out}
        scored = levels.evaluate(reconciled_of, champions, served[backtest.BASELINE].forecasts)
        for week in chosen.held_out:
            base = chosen.forecasts[chosen.forecasts.origin == week.week]
            weeks += week_records(period, with_weather, week, scored[scored.origin == week.week], base, oracle)
        days.append(daily_coverage(scored).assign(period=str(period), weather=with_weather))
        print(f"weather {'on' if with_weather else 'off'}: final champion {chosen.champion} ({chosen.final.reason})")
        print("  held out, as served (reconciled), per level and borough:")
        print(levels.by_level(scored).round(3).to_string(index=False))
        print_holidays(scored)
    weekly = backtest.error_metrics(predictions, ["candidate", "origin"])
    naive = weekly[weekly.candidate == backtest.BASELINE].set_index("origin").mae
    ratios = weekly.assign(ratio=weekly.mae / weekly.origin.map(naive)).pivot(
        index="origin", columns="candidate", values="ratio"
    )
    print("every candidate's zone MAE / naive per backtest week:")
    print(ratios.round(3).to_string())
    print("seconds per candidate (every refit and every day's forecast, zones and totals): " + ", ".join(
        f"{name} {value}" for name, value in seconds.items()
    ))  # fmt: skip
    return PeriodResult(weeks, pd.concat(days, ignore_index=True), seconds)


def week_records(period: Period, with_weather: bool, week, scored: pd.DataFrame, base: pd.DataFrame, oracle) -> list:
    """One held-out week as the JSON output names it: a row per level and borough (``all``: the whole level) of the
    week as served. The zone level's ``all`` row also carries the selection's day-resampled ratio range and the ratio
    to the origin-knowable oracle, both of the zones' forecasts before reconciliation (null on the other rows)."""
    from flows.forecasting import levels

    daily = daily_coverage(scored)
    records = []
    for row in levels.by_level(scored).to_dict("records"):
        whole = row["borough"] == levels.ALL
        mine = daily[(daily.level == row["level"]) & ((daily.borough == row["borough"]) | whole)]
        worst = mine.groupby("day").apply(lambda day: np.average(day.coverage_80, weights=day.hours)).min()
        record = {
            "period": str(period),
            "weather": with_weather,
            "week": f"{week.week:%Y-%m-%d}",
            "level": row["level"],
            "borough": row["borough"],
            "hours": int(row["hours"]),
            "champion": week.champion,
            "ratio_to_naive": _rounded(row["ratio_to_naive"]),
            "ratio_low": None,
            "ratio_high": None,
            "ratio_to_oracle": None,
            "coverage_80": round(float(row["coverage_80"]), 4),
            "coverage_95": round(float(row["coverage_95"]), 4),
            "coverage_80_worst_day": round(float(worst), 4),
        }
        if row["level"] == "zone" and whole:
            record["ratio_low"], record["ratio_high"] = (round(value, 4) for value in week.ratio_range)
            if oracle is not None:
                joined = base.merge(oracle, on=["pickup_hour", "pulocationid"], how="inner")
                oracle_mae = float((joined.expected_rate - joined.total_rides).abs().mean())
                record["ratio_to_oracle"] = round(week.mae / oracle_mae, 4)
        records.append(record)
    return records


def _rounded(value) -> float | None:
    return None if pd.isna(value) else round(float(value), 4)


def daily_coverage(scored: pd.DataFrame) -> pd.DataFrame:
    """Per day, level and borough: the hours and the share of them inside the 80% interval."""
    from flows.forecasting.intervals import inside

    rows = scored.assign(day=scored.pickup_hour.dt.normalize(), inside=inside(scored, 80))
    grouped = rows.groupby(["day", "level", "borough"], dropna=False).inside
    return pd.DataFrame({"hours": grouped.size(), "coverage_80": grouped.mean()}).reset_index()


def print_holidays(scored: pd.DataFrame) -> None:
    """Each holiday in the held-out weeks: the city's forecast against its actual that day."""
    from flows.forecasting.features import new_york_holidays

    city = scored[scored.level == "city"]
    if city.empty:
        return
    days = city.pickup_hour.dt.normalize()
    holidays = new_york_holidays(days.min(), days.max())
    for day, name in holidays[holidays.index.isin(days)].items():
        that_day = city[days == day]
        forecast, actual = that_day.forecast.sum(), that_day.total_rides.sum()
        print(f"  {day:%Y-%m-%d} {name}: the city forecast {forecast:,.0f} rides, {actual:,.0f} rode "
              f"({forecast / actual - 1:+.1%})")  # fmt: skip


def print_summary(table: pd.DataFrame, days: pd.DataFrame, seconds: dict) -> None:
    for with_weather, rows in table.groupby("weather"):
        zones = rows[(rows.level == "zone") & (rows.borough == "all")]
        in_band = zones.coverage_80.between(0.75, 0.85)
        print(
            f"\n== weather {'on' if with_weather else 'off'}: {len(zones)} weeks; zones' MAE / naive median "
            f"{zones.ratio_to_naive.median():.3f}, worst {zones.ratio_to_naive.max():.3f}; weeks worse than naive "
            f"{int((zones.ratio_to_naive > 1).sum())}; range's upper end below 1.0 in "
            f"{(zones.ratio_high < 1).mean():.0%}; zones' 80% coverage in 75-85% in {in_band.mean():.0%} of weeks "
            f"({zones.coverage_80.min():.3f}-{zones.coverage_80.max():.3f}); 95% coverage "
            f"{zones.coverage_95.min():.3f}-{zones.coverage_95.max():.3f}"
        )
        if zones.ratio_to_oracle.notna().any():
            print(
                f"   MAE / oracle median {zones.ratio_to_oracle.median():.3f}, worst {zones.ratio_to_oracle.max():.3f}"
            )
        daily = days[(days.weather == with_weather) & (days.level == "zone")]
        daily = daily.groupby(["period", "day"]).apply(lambda day: np.average(day.coverage_80, weights=day.hours))
        print(f"   zones' 80% coverage per day: median {daily.median():.3f}, 5th percentile "
              f"{np.percentile(daily, 5):.3f}, worst {daily.min():.3f}")  # fmt: skip
        print(
            "   every level and borough over the held-out weeks (80% coverage pooled over the hours; the weeks' range):"
        )
        print(level_summary(rows).to_string(index=False))
    print("\n== seconds per candidate and period: " + json.dumps(seconds))


def level_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per level and borough: the held-out hours, MAE / naive (median week), 80% and 95% coverage pooled over the
    hours, and the weeks' lowest and highest 80% coverage."""
    weighted = rows.assign(inside_80=rows.coverage_80 * rows.hours, inside_95=rows.coverage_95 * rows.hours)
    grouped = weighted.groupby(["level", "borough"], sort=False)
    return pd.DataFrame({
        "weeks": grouped.size(),
        "hours": grouped.hours.sum(),
        "mae_vs_naive_median": grouped.ratio_to_naive.median().round(3),
        "coverage_80": (grouped.inside_80.sum() / grouped.hours.sum()).round(3),
        "coverage_95": (grouped.inside_95.sum() / grouped.hours.sum()).round(3),
        "coverage_80_week_low": grouped.coverage_80.min().round(3),
        "coverage_80_week_high": grouped.coverage_80.max().round(3),
    }).reset_index()  # fmt: skip


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


def sample_history(scale: str, months: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """The sample's actuals and weather of ``months`` at ``scale`` (written once under the state folder's
    benchmarks), and the hour after the newest actual: a training's ``as_of``."""
    from taxi_core.settings import load_settings  # the benchmarks' state folder, read when the benchmark runs
    from taxi_demo.cli import trips_per_month
    from taxi_demo.sample_source import SampleSource

    trips = trips_per_month(scale)
    source = SampleSource(load_settings().path("benchmarks", f"sample_{trips}"), trips_per_month=trips)
    source.write_months(months)
    actuals = pd.concat([month_actuals(source, month) for month in months], ignore_index=True)
    weather = pd.concat([month_weather(source, month) for month in months], ignore_index=True)
    return actuals, weather, str(actuals.pickup_hour.max() + pd.Timedelta(hours=1))


def month_weather(source, month: str) -> pd.DataFrame:
    """The daily weather the sample published for a month, one column per element, as the flow reads it."""
    from taxi_demo.demand_model import daily_weather
    from taxi_demo.demo_city import NYC_COUNTIES, OTHER_COUNTIES

    weather = daily_weather(month, [*NYC_COUNTIES, *OTHER_COUNTIES], source.seed)
    return weather.assign(date=pd.to_datetime(weather.date))


if __name__ == "__main__":
    sys.exit(main())
