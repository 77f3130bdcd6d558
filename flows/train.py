"""Train, evaluate and version the hourly taxi-demand model, and write its forecasts to Iceberg.

    python flows/train.py run [--use-weather true] [--as-of 2025-01-25]

Steps:
    start     resolve the as-of time and candidate list
    load      read nyc_taxi.yellow_rides_hourly_actuals (and nyc_taxi.raw_weather) via pyiceberg; card: what was read
    train     one branch per candidate: a rolling-origin backtest, printing each origin's MAE as it is done
    evaluate  MAE, RMSE and WAPE per candidate and zone against seasonal naive and the noise floor; choose the
              champion among the forecasts (a perfect-weather scenario never wins); card: tables and chart
    predict   refit the champion on all data; forecast the next horizon hours for every zone
    write     replace this run's rows in nyc_taxi.yellow_rides_hourly_forecast, check the rows written (the
              table's Dagster checks); card: plot of the busiest zones
    end       summary
"""

import sys

from taxi_core.errors import PipelineError
from taxi_core.settings import SettingsError, load_settings
from taxi_core.tool_env import apply_tool_environment


def _settings_or_exit():
    """The project's settings; a bad one ends the command with its one-line message, not a traceback."""
    try:
        return load_settings()
    except SettingsError as err:
        sys.exit(f"train.py: {err}")


# This file is the flow's entry point: Metaflow reads its configuration when first imported, so the
# state folder's settings go into the environment before that (variables already set win).
apply_tool_environment(_settings_or_exit())

# isort: split
import os
import time
from pathlib import Path

import pandas as pd
from metaflow import FlowSpec, Parameter, card, current, step
from metaflow.cards import Image, Markdown, Table
from metaflow.exception import MetaflowException
from threadpoolctl import threadpool_limits

from bridge.sources.metaflow_recorder import record_lineage, record_model
from flows.forecasting import backtest, checks, column_lineage, features, noise_floor, report, tables
from flows.forecasting.models import CANDIDATES, WEATHER_USE, is_scenario, make_candidate, needs_weather
from flows.run_settings import RunSettings, resolve_settings
from taxi_core.catalog import CatalogConfig, open_catalog
from taxi_core.names import MODEL_NAME

# What every train branch carries unchanged from load, merged back in the join.
SHARED_ARTIFACTS = ["settings", "catalog_config", "model_version", "actuals", "weather", "zone_ids",
                    "actuals_snapshot_id", "weather_snapshot_id", "zone_lookup", "zone_lookup_snapshot_id", "features",
                    "weather_lag"]  # fmt: skip


class BadRunSetting(MetaflowException, PipelineError):
    """A parameter the run cannot work with: Metaflow prints its one line, without a traceback."""

    headline = "Bad run setting"


@record_lineage
class TrainForecastModelFlow(FlowSpec):
    """Train the hourly taxi-demand model per pickup zone, backtest it, and write its forecasts to Iceberg."""

    as_of = Parameter(
        "as_of",
        default="",
        help="Forecast origin, YYYY-MM-DD or YYYY-MM-DDTHH (default: the hour after the newest actuals)",
    )
    lookback_days = Parameter("lookback_days", default=42, type=int, help="Days of actuals to read before the origin")
    backtest_days = Parameter("backtest_days", default=7, type=int, help="Daily forecast origins in the backtest")
    horizon_hours = Parameter("horizon_hours", default=24, type=int, help="Hours ahead to forecast")
    zones = Parameter("zones", default=50, type=int, help="How many of the busiest zones to forecast")
    use_weather = Parameter("use_weather", default=False, type=bool, help="Read raw_weather and train weather models")
    weather_delay_days = Parameter(
        "weather_delay_days",
        default=0,
        type=int,
        help="Days after a day ends before its observed weather is published (0 for the sample source)",
    )
    true_rates = Parameter(
        "true_rates",
        default="",
        help="Folder of the true hourly rates the data was generated from, for the noise floor (default: the "
        "TAXI_TRUE_RATES setting, which ./run demo sets to its sample source's; none for real TLC data)",
    )
    candidates = Parameter(
        "candidates",
        default="",
        help=(
            f"Comma-separated candidate models from: {', '.join(CANDIDATES)} (default: all of them that the "
            f"run can train: {', '.join(name for name in CANDIDATES if not needs_weather([name]))}, and with "
            "--use_weather true the weather models too)"
        ),
    )

    @step
    def start(self):
        """Resolve the forecast origin (the hour after the newest actuals unless --as_of) and the candidates."""
        self.catalog_config = CatalogConfig.from_settings(load_settings())
        as_of = self.as_of or tables.actuals_end(open_catalog(self.catalog_config)).isoformat()
        try:
            self.settings: RunSettings = resolve_settings(
                as_of=as_of,
                lookback_days=self.lookback_days,
                backtest_days=self.backtest_days,
                horizon_hours=self.horizon_hours,
                zones=self.zones,
                use_weather=self.use_weather,
                candidates=self.candidates,
            )
        except ValueError as err:
            raise BadRunSetting(str(err)) from None
        self.model_version = f"{current.flow_name}/{current.run_id}"
        # Weather is what the origin knows: the newest published day before every target's day.
        self.weather_lag = features.weather_lag_days(
            self.settings.as_of.hour, self.settings.horizon_hours, self.weather_delay_days
        )
        print(f"Model version {self.model_version}: {self.settings.describe()}")
        self.next(self.load)

    @card(type="blank", id="inputs")
    @step
    def load(self):
        """Read the actuals, the zone lookup (and, with --use_weather, raw_weather) through pyiceberg; keep the
        busiest zones."""
        catalog = open_catalog(self.catalog_config)
        start, end = self.settings.window_start, self.settings.as_of
        actuals, self.actuals_snapshot_id = tables.read_actuals(catalog, start, end)
        self.zone_lookup, self.zone_lookup_snapshot_id = tables.read_zones(catalog)
        self.zone_ids = backtest.busiest_zones(actuals, self.settings.zones)
        self.actuals = actuals[actuals.pulocationid.isin(self.zone_ids)].reset_index(drop=True)
        if len(self.zone_ids) < self.settings.zones:
            print(f"Only {len(self.zone_ids)} zones have actuals for every hour of the window; forecasting those.")
        self.weather, self.weather_snapshot_id = None, None
        if self.settings.use_weather:
            self.weather, self.weather_snapshot_id = tables.read_weather(catalog, start, end)
        self.candidate_names = self.settings.candidates
        actuals_read, weather_read = report.inputs_read(
            start, end, len(actuals), self.actuals_snapshot_id, self.weather, self.weather_snapshot_id
        )
        zones_read = report.zones_read(len(self.zone_lookup), self.zone_lookup_snapshot_id)
        kept = f"Kept the {len(self.zone_ids)} busiest zones: {len(self.actuals):,} rows."
        current.card.append(Markdown(f"# Inputs of {self.model_version}"))
        read = [actuals_read.row(), weather_read.row(), zones_read.row()]
        current.card.append(Table(data=read, headers=report.INPUT_HEADERS))
        current.card.append(Markdown(f"{kept}  \nCandidates: {', '.join(self.candidate_names)}."))
        print(f"Read {actuals_read.sentence()}. {kept}")
        print(f"Weather: {weather_read.sentence()}.")
        print(f"Zone names: {zones_read.sentence()}.")
        self.next(self.train, foreach="candidate_names")

    @step
    def train(self):
        """One branch per candidate: a rolling-origin backtest, each origin's error printed as it is done."""
        began = time.perf_counter()
        frame, self.features = self._features(end=self.settings.as_of)
        origins = backtest.backtest_origins(
            self.settings.as_of, self.settings.backtest_days, self.settings.horizon_hours
        )
        horizon = self.settings.horizon_hours
        print(
            f"{self.input}: features in {time.perf_counter() - began:.1f} s; backtest from {len(origins)} origins, "
            f"{horizon} hours each, {len(self.zone_ids)} zones"
        )
        began = time.perf_counter()
        # The candidates' branches run at once: each takes its share of the cores, not all of them.
        with threadpool_limits(limits=max(1, (os.cpu_count() or 1) // len(self.candidate_names))):
            self.backtest = backtest.rolling_origin_backtest(
                frame, self.features, lambda: make_candidate(self.input), origins, horizon, on_origin=print
            )
        print(f"{self.input}: backtest done in {time.perf_counter() - began:.1f} s")
        self.next(self.evaluate)

    @card(type="blank", id="backtest")
    @step
    def evaluate(self, inputs):
        """Score every candidate against seasonal naive and the noise floor; choose the champion."""
        self.merge_artifacts(inputs, include=SHARED_ARTIFACTS)
        self.backtest = pd.concat([branch.backtest for branch in inputs], ignore_index=True)
        self.metrics = backtest.error_metrics(self.backtest, ["candidate"])
        self.metrics_by_zone = backtest.error_metrics(self.backtest, ["candidate", "pulocationid"])
        self.scenarios = tuple(name for name in self.metrics.candidate if is_scenario(name))
        self.champion = backtest.choose_champion(self.metrics, self.scenarios)
        folder = self.true_rates or load_settings().true_rates
        truth = Path(folder) if folder else None  # real data has no truth: no noise floor
        self.noise_floor = noise_floor.noise_floor(self.backtest, truth)
        floor_by_zone = noise_floor.noise_floor_by_zone(self.backtest, truth)
        from flows.forecasting import plots  # matplotlib is slow to import; only drawing steps pay for it

        headers, rows = report.metrics_table(self.metrics, self.noise_floor, self.scenarios)
        current.card.append(Markdown(f"# Backtest of {self.model_version}\nChampion: **{self.champion}**"))
        current.card.append(Table(data=rows, headers=headers))
        print(" | ".join(headers))
        for row in rows:
            print(" | ".join(str(cell) for cell in row))
        if self.scenarios:
            scenario_note = (
                f"Scenario {', '.join(self.scenarios)} uses the target day's observed weather, which no forecast "
                "has at its origin: it shows what knowing the weather would be worth and is never the champion."
            )
            current.card.append(Markdown(scenario_note))
            print(scenario_note)
        if self.noise_floor:
            floor = f"Noise floor (forecasting with the sample source's true rate): MAE {self.noise_floor['mae']:.3f}"
            current.card.append(Markdown(floor))
            print(floor)
        current.card.append(Markdown(f"## {self.champion} per zone, worst first"))
        current.card.append(
            Table(
                data=report.zone_table(self.metrics_by_zone, self.champion, floor_by_zone, self.zone_lookup),
                headers=report.ZONE_HEADERS,
            )
        )
        self.backtest_png = plots.png_bytes(plots.backtest_figure(self.metrics, self.noise_floor))
        path = load_settings().path("plots") / f"backtest_{current.run_id}.png"
        self.backtest_plot_path = str(plots.save_png(self.backtest_png, path))
        current.card.append(Image(self.backtest_png, label="MAE and RMSE per candidate, best first"))
        self.next(self.predict)

    @step
    def predict(self):
        """Refit the champion on all the data and forecast the next --horizon_hours for every zone."""
        frame, _ = self._features(end=self.settings.forecast_end)
        model = make_candidate(self.champion)
        self.model = model.fit(
            features.training_rows(frame[frame.pickup_hour < self.settings.as_of], self.features), self.features
        )
        future = frame[frame.pickup_hour >= self.settings.as_of]
        forecast = future[["pickup_hour", "pulocationid"]].assign(
            forecasted_total_rides=model.predict(future, self.features),
            model_name=self.champion,
            model_version=self.model_version,
            metaflow_run_id=current.run_id,
        )
        self.forecast = tables.with_zone_names(forecast, self.zone_lookup)
        unnamed = sorted(set(self.forecast.pulocationid[self.forecast.zone.isna()]))
        if unnamed:
            print(f"Zones {unnamed} are not in {tables.ZONES}: their forecasts carry no zone name or borough.")
        weather = WEATHER_USE[model.weather]
        if model.weather == "known":
            weather += f" ({self.weather_lag} days before the target day)"
        zones = ",".join(str(zone) for zone in self.zone_ids)
        self.model_parameters = {"name": model.name, "weather": weather, "zones": zones, **model.params}
        self.training_window = {"start": str(self.settings.window_start), "end": str(self.settings.as_of)}
        self.used_features = model.used_features(self.features)
        champion = self.metrics.set_index("candidate").loc[self.champion]
        backtest = {f"backtest_{name}": round(float(champion[name]), 4) for name in ("mae", "rmse", "wape")}
        record_model(
            MODEL_NAME,
            self.model_version,
            metrics=backtest,
            params=self.model_parameters,
            columns_from=column_lineage.model_lineage(model.used_features(self.features)),
        )
        self.next(self.write)

    @card(type="blank", id="forecast")
    @step
    def write(self):
        """Replace this run's rows in the forecast table and check what was written (the table's checks)."""
        from flows.forecasting import plots  # matplotlib is slow to import; only drawing steps pay for it

        catalog = open_catalog(self.catalog_config)
        self.forecast_snapshot_id = tables.write_forecasts(
            catalog, self.forecast, current.run_id, column_lineage.forecast_lineage(self.used_features)
        )
        written = (
            f"Wrote {len(self.forecast):,} rows ({len(self.zone_ids)} zones, {self.settings.horizon_hours} hours "
            f"from {self.settings.as_of:%Y-%m-%d %H:%M}) to {tables.FORECAST} at snapshot {self.forecast_snapshot_id}."
        )
        print(written)
        # The table's checks, on the rows as the table holds them; a shell run reports them to Dagster.
        version = checks.ForecastVersion(
            current.run_id, pd.Timestamp(self.settings.as_of).tz_localize("UTC"), self.settings.horizon_hours,
            len(self.zone_ids),
        )  # fmt: skip
        outcomes = checks.forecast_checks(tables.read_forecasts(catalog, current.run_id), version)
        self.forecast_checks = [outcome.to_dict() for outcome in outcomes]
        for outcome in outcomes:
            print(f"check {outcome.name}: {'passed' if outcome.passed else 'FAILED'}")
        figure = plots.forecast_figure(self.actuals, self.backtest, self.forecast, self.champion)
        self.forecast_png = plots.png_bytes(figure)
        self.plot_path = str(
            plots.save_png(self.forecast_png, load_settings().path("plots") / f"forecast_{current.run_id}.png")
        )
        current.card.append(Markdown(f"# Forecast of {self.model_version} ({self.champion})\n{written}"))
        current.card.append(Image(self.forecast_png, label="Busiest zones: last week, backtest and forecast"))
        self.next(self.end)

    @step
    def end(self):
        """Print the model version, its champion and where its forecasts are."""
        best = self.metrics.set_index("candidate").loc[self.champion]
        print(
            f"{self.model_version}: {self.champion} (backtest MAE {best.mae:.3f}), {len(self.forecast)} "
            f"forecast rows at snapshot {self.forecast_snapshot_id}; plot {self.plot_path}"
        )

    def _features(self, end):
        grid = features.complete_grid(self.actuals, self.zone_ids, self.settings.window_start, end)
        return features.build_features(grid, self.settings.horizon_hours, self.weather, self.weather_lag)


if __name__ == "__main__":
    TrainForecastModelFlow()
