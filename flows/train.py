"""Train, evaluate and version the hourly taxi-demand model, and write its forecasts to Iceberg.

    python flows/train.py run [--use_weather true] [--as_of 2025-01-25]

Steps:
    start     resolve the as-of time and candidate list
    load      read nyc_taxi.yellow_rides_hourly_actuals (and nyc_taxi.raw_weather) via pyiceberg; choose the
              backtest's zones on what was known before it, the forecast's on everything; card: what was read
    train     one branch per candidate, each on its share of the cores: a weekly rolling-origin backtest,
              printing each week's MAE as it is done
    evaluate  hold out each of the last --evaluation_weeks weeks: a champion chosen on the --selection_weeks
              before it, scored against seasonal naive (and the noise floor) with a bootstrap range, its
              intervals' coverage measured; the final champion is chosen on the newest weeks (a
              perfect-weather scenario never wins); card: per-week and per-zone tables and charts
    predict   refit the champion on all data; forecast the next horizon hours for every zone, with 80% and
              95% intervals
    write     replace this run's rows in nyc_taxi.yellow_rides_hourly_forecast, check the rows written (the
              table's Dagster checks); card: plot of the busiest zones
    end       summary

Once the run has ended, finished or failed, its lineage is delivered (flows/lineage_delivery.py).
"""

from __future__ import annotations

import sys

from taxi_core.errors import PipelineError
from taxi_core.interrupts import terminate_as_interrupt
from taxi_core.settings import Settings, SettingsError, load_settings
from taxi_core.tool_env import apply_tool_environment


def _settings_or_exit() -> Settings:
    """The project's settings; a bad one ends the command with its one-line message, not a traceback."""
    try:
        return load_settings()
    except SettingsError as err:
        sys.exit(f"train.py: {err}")


# This file is the flow's entry point: Metaflow reads its configuration when first imported, so the
# state folder's settings go into the environment before that (variables already set win).
apply_tool_environment(_settings_or_exit())

# isort: split
import functools
import time
from pathlib import Path

import pandas as pd
from metaflow import FlowSpec, current, step
from metaflow.cards import Image, Markdown
from metaflow.datastore.inputs import Inputs as Branches
from metaflow.exception import MetaflowException

from bridge.sources.metaflow_recorder import Promotion, record_lineage, record_model, record_nominal_time
from bridge.wording import plural
from flows.forecasting import (
    backtest,
    checks,
    column_lineage,
    features,
    levels,
    noise_floor,
    promotion,
    registry,
    report,
    selection,
    serving,
    tables,
)
from flows.forecasting.candidates import (
    candidate_names,
    fits_with_scikit_learn,
    is_scenario,
    make_candidate,
    needs_weather,
)
from flows.forecasting.checks import CheckMetadata
from flows.forecasting.intervals import IntervalModel, count_aware_groups
from flows.forecasting.levels import LevelIntervals, SeriesBacktest
from flows.forecasting.models import WEATHER_USE, Forecaster
from flows.forecasting.publication import NOAA_PUBLICATION_DELAY_DAYS, Inputs, PublicationRule
from flows.forecasting.serving import ServedModel
from flows.forecasting.threads import numeric_threads, share_of_cores
from flows.lineage_delivery import HOOK as DELIVER_LINEAGE
from flows.metaflow_parts import card, current_card, current_run_id, exit_hook, parameter, table
from flows.run_settings import BACKTEST_ZONES, LOOKBACK_DAYS, RunSettingInvalid, RunSettings, resolve_settings
from flows.step_heartbeat import with_heartbeats
from taxi_core.catalog import CatalogConfig, open_catalog
from taxi_core.names import FORECAST, MODEL_CANDIDATE_PARAM, MODEL_NAME, ZONES
from taxi_core.training_history import EVALUATION_WEEKS, SELECTION_WEEKS

# What every train branch carries unchanged from load, merged back in the join.
SHARED_ARTIFACTS = ["settings", "catalog_config", "model_version", "actuals", "weather", "zone_ids",
                    "backtest_zone_ids", "actuals_snapshot_id", "weather_snapshot_id", "zone_lookup",
                    "zone_lookup_snapshot_id", "weather_lag", "serving", "compared_only",
                    "serving_incomparable", "registry_snapshot_id"]  # fmt: skip


class BadRunSetting(MetaflowException, PipelineError):
    """A parameter the run cannot work with: Metaflow prints its one line, without a traceback."""

    headline = "Bad run setting"


@exit_hook(on_success=[DELIVER_LINEAGE], on_error=[DELIVER_LINEAGE])
@with_heartbeats
@record_lineage
class TrainForecastModelFlow(FlowSpec):
    """Train the hourly taxi-demand model per pickup zone, backtest it, and write its forecasts to Iceberg."""

    as_of: str = parameter(
        "as_of", "", "Forecast origin, YYYY-MM-DD or YYYY-MM-DDTHH (default: the hour after the newest actuals)"
    )
    lookback_days: int = parameter("lookback_days", LOOKBACK_DAYS, "Days of actuals to read before the origin")
    evaluation_weeks: int = parameter(
        "evaluation_weeks", EVALUATION_WEEKS, "Held-out weeks, each scored on a champion chosen before it"
    )
    selection_weeks: int = parameter(
        "selection_weeks", SELECTION_WEEKS, "Weeks before each held-out week that choose its champion"
    )
    horizon_hours: int = parameter("horizon_hours", 24, "Hours ahead to forecast")
    zones: int = parameter("zones", 0, "How many of the busiest zones to serve (default 0: every zone with rides)")
    backtest_zones: int = parameter(
        "backtest_zones",
        BACKTEST_ZONES,
        "How many of the busiest zones choose the champion (default 0: every zone "
        "served, the population the version serves)",
    )
    use_weather: bool = parameter("use_weather", False, "Read raw_weather and train weather models")
    weather_delay_days: int = parameter(
        "weather_delay_days",
        NOAA_PUBLICATION_DELAY_DAYS,
        "Days after a day ends before NOAA publishes its weather (NOAA updates nClimGrid-Daily every 3 days)",
    )
    true_rates: str = parameter(
        "true_rates",
        "",
        "Folder of the true hourly rates the data was generated from, for the noise floor (default: the "
        "TAXI_TRUE_RATES setting, which ./run demo sets to its sample source's; none for real TLC data)",
    )
    candidates: str = parameter(
        "candidates",
        "",
        f"Comma-separated candidate models from: {', '.join(candidate_names())} (default: all of them that the "
        f"run can train: {', '.join(name for name in candidate_names() if not needs_weather([name]))}, and with "
        "--use_weather true the weather models too)",
    )

    # The artifacts: each step's results, which Metaflow stores and hands to the steps after it.
    # start
    catalog_config: CatalogConfig
    settings: RunSettings
    model_version: str
    weather_lag: int
    # load
    actuals: pd.DataFrame
    actuals_snapshot_id: int
    zone_lookup: pd.DataFrame
    zone_lookup_snapshot_id: int
    backtest_zone_ids: list[int]
    zone_ids: list[int]
    weather: pd.DataFrame | None
    weather_snapshot_id: int | None
    candidate_names: list[str]
    serving: registry.Serving | None
    registry_snapshot_id: int | None
    compared_only: list[str]
    serving_incomparable: str | None  # why the serving version cannot be scored beside this run, if it cannot
    # train (one branch per candidate), then evaluate
    backtest: pd.DataFrame
    backtest_seconds: float
    series_backtest: SeriesBacktest
    training_seconds: dict[str, float]
    metrics: pd.DataFrame
    scenarios: tuple[str, ...]
    noise_floor: dict[str, float] | None
    champion: str
    intervals: IntervalModel
    champion_reason: str
    decision: promotion.Decision
    selection_weeks_used: list[str]
    held_out: pd.DataFrame
    held_out_summary: dict[str, float]
    held_out_forecasts: pd.DataFrame
    held_out_levels: pd.DataFrame
    level_intervals: LevelIntervals
    coverage_band: tuple[float, float]
    bias_band: tuple[float, float]
    held_out_png: bytes
    backtest_png: bytes
    backtest_plot_path: str
    # predict
    model: Forecaster
    features: list[str]
    forecast: pd.DataFrame
    served: ServedModel
    model_parameters: dict[str, str | int | float]
    training_window: dict[str, str]
    used_features: list[str]
    # write
    forecast_snapshot_id: int
    promotion_snapshot_id: int
    forecast_checks: list[dict[str, str | bool | CheckMetadata]]
    forecast_png: bytes
    plot_path: str

    @step
    def start(self) -> None:
        """Resolve the forecast origin (the hour after the newest actuals unless --as_of) and the candidates."""
        self.catalog_config = CatalogConfig.from_settings(load_settings())
        as_of = self.as_of or tables.actuals_end(open_catalog(self.catalog_config)).isoformat()
        try:
            self.settings = resolve_settings(
                as_of=as_of,
                lookback_days=self.lookback_days,
                evaluation_weeks=self.evaluation_weeks,
                selection_weeks=self.selection_weeks,
                horizon_hours=self.horizon_hours,
                zones=self.zones,
                use_weather=self.use_weather,
                candidates=self.candidates,
                backtest_zones=self.backtest_zones,
            )
        except RunSettingInvalid as err:
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
    def load(self) -> None:
        """Read the actuals, the zone lookup (and, with --use_weather, raw_weather) through pyiceberg; keep the
        busiest zones."""
        catalog = open_catalog(self.catalog_config)
        start, end = self.settings.window_start, self.settings.as_of
        record_nominal_time(start, end)  # the run is for its training window: the lineage's nominal time
        actuals, self.actuals_snapshot_id = tables.read_actuals(catalog, start, end)
        self.zone_lookup, self.zone_lookup_snapshot_id = tables.read_zones(catalog)
        # The backtest's zones are what its first week knew; the forecast's, everything up to the origin.
        known = actuals[actuals.pickup_hour < self.settings.backtest_start]
        self.zone_ids = backtest.busiest_zones(actuals, self.settings.zones or None)
        self.backtest_zone_ids = (
            backtest.busiest_zones(known, self.settings.backtest_zones)
            if self.settings.backtest_zones
            else self.zone_ids
        )
        used = set(self.zone_ids) | set(self.backtest_zone_ids)
        self.actuals = actuals[actuals.pulocationid.isin(used)].reset_index(drop=True)
        if len(self.zone_ids) < self.settings.zones or len(self.backtest_zone_ids) < self.settings.backtest_zones:
            print(f"Only {len(self.zone_ids)} zones have actuals for every hour of the window; forecasting those.")
        self.weather, self.weather_snapshot_id = None, None
        if self.settings.use_weather:
            self.weather, self.weather_snapshot_id = tables.read_weather(catalog, start, end)
        self.candidate_names = self.settings.candidates
        # The version serving now is the one to beat: its candidate is backtested on this run's weeks too.
        self.serving = registry.serving_version(catalog, MODEL_NAME)
        self.registry_snapshot_id = None if self.serving is None else self.serving.snapshot_id
        champion = None if self.serving is None else self.serving.champion
        comparison = promotion.plan_comparison(self.candidate_names, champion, self.settings.use_weather)
        self.candidate_names, self.compared_only = comparison.candidates, comparison.compared_only
        self.serving_incomparable = comparison.incomparable
        if comparison.incomparable and self.serving is not None:
            print(f"The serving version {self.serving.version} is not backtested here: {comparison.incomparable}.")
        actuals_read, weather_read = report.inputs_read(
            start, end, len(actuals), self.actuals_snapshot_id, self.weather, self.weather_snapshot_id
        )
        zones_read = report.zones_read(len(self.zone_lookup), self.zone_lookup_snapshot_id)
        changed = len(set(self.zone_ids) - set(self.backtest_zone_ids))
        chosen_on = (
            "every one of them, each borough's total and the city"
            if not changed
            else f"the {len(self.backtest_zone_ids)} busiest before its first week, "
            f"{self.settings.backtest_start:%Y-%m-%d} ({changed} served zones not among them); each level is "
            "evaluated on every zone served, each borough's total and the city"
        )
        kept = f"Serving {len(self.zone_ids)} zones; the backtest scores {chosen_on}: {len(self.actuals):,} rows."
        shown = current_card()
        shown.append(Markdown(f"# Inputs of {self.model_version}"))
        read = [actuals_read.row(), weather_read.row(), zones_read.row()]
        shown.append(table(read, report.INPUT_HEADERS))
        shown.append(Markdown(f"{kept}  \nCandidates: {', '.join(self.candidate_names)}."))
        print(f"Read {actuals_read.sentence()}. {kept}")
        print(f"Weather: {weather_read.sentence()}.")
        print(f"Zone names: {zones_read.sentence()}.")
        self.next(self.train, foreach="candidate_names")

    @step
    def train(self) -> None:
        """One branch per candidate, on its share of the cores: refit each week, score the week's hours."""
        candidate = self._candidate()
        weeks = backtest.backtest_weeks(self.settings.as_of, self.settings.backtest_weeks)
        threads = share_of_cores(len(self.candidate_names))
        print(
            f"{candidate}: backtest over {len(weeks)} weeks from {weeks[0]:%Y-%m-%d}, refitted weekly and "
            f"forecasting day by day, {len(self.backtest_zone_ids)} zones, {threads} thread(s)"
        )
        began = time.perf_counter()
        served, make = self._inputs(self.zone_ids), functools.partial(make_candidate, candidate)
        # The candidates' branches run at once: each takes its share of the cores, not all of them.
        with numeric_threads(threads, scikit_learn=fits_with_scikit_learn(candidate)):
            # Each level is evaluated on what the version serves: every zone, whatever zones choose the champion.
            zone_backtest, fits = levels.zone_backtest(served, make, weeks, on_origin=print)
            self.backtest = (
                zone_backtest
                if self.backtest_zone_ids == self.zone_ids
                else backtest.rolling_origin_backtest(self._inputs(self.backtest_zone_ids), make, weeks)
            )
            self.series_backtest = levels.backtest_series(served, self._boroughs(), make, weeks, zone_backtest, fits)
        self.backtest_seconds = time.perf_counter() - began
        print(f"{candidate}: backtest done in {self.backtest_seconds:.1f} s")
        self.next(self.evaluate)

    @card(type="blank", id="backtest")
    @step
    def evaluate(self, inputs: Branches) -> None:
        """Hold out each of the last weeks, its champion chosen on the weeks before; choose the final champion."""
        self.merge_artifacts(inputs, include=SHARED_ARTIFACTS)
        branches: list[TrainForecastModelFlow] = list(inputs)
        self.backtest = pd.concat([branch.backtest for branch in branches], ignore_index=True)
        self.training_seconds = {branch._candidate(): round(branch.backtest_seconds, 2) for branch in branches}
        self.metrics = backtest.error_metrics(self.backtest, ["candidate"])
        self.scenarios = tuple(name for name in self.metrics.candidate if is_scenario(name))
        folder = self.true_rates or load_settings().true_rates
        truth = Path(folder) if folder else None  # real data has no truth: no noise floor
        self.noise_floor = noise_floor.noise_floor(self.backtest, truth)

        def floor_of(rows: pd.DataFrame) -> float | None:
            floor = noise_floor.noise_floor(rows, truth)
            return floor["mae"] if floor else None

        never_champion = [*self.scenarios, *self.compared_only]
        chosen = selection.select(
            self.backtest, self.settings.selection_weeks, never_champion, floor_of, groups=self._boroughs()
        )
        self.champion, self.intervals, self.champion_reason = chosen.champion, chosen.intervals, chosen.final.reason
        self.decision = self._against_serving(chosen.forecasts)
        print(f"Champion/challenger: {self.decision.reason}")
        self.selection_weeks_used = [f"{week:%Y-%m-%d}" for week in chosen.chosen_on]
        self.held_out = chosen.table()
        self.held_out_summary = chosen.summary()
        self.held_out_forecasts = chosen.forecasts
        by_zone = chosen.by_zone()
        self._evaluate_levels(branches, {week.week: week.champion for week in chosen.held_out})
        from flows.forecasting import plots  # matplotlib is slow to import; only drawing steps pay for it

        summary = self.held_out_summary
        headline = (
            f"Champion: **{self.champion}**, chosen on the weeks from {', '.join(self.selection_weeks_used)} "
            f"({self.champion_reason}). On "
            f"{summary['held_out_weeks']} held-out weeks, each champion chosen on the weeks before: MAE "
            f"{summary['held_out_mae']:.3f}, {summary['held_out_mae_vs_naive_median']:.2f}x seasonal naive in the "
            f"median week ({summary['held_out_mae_vs_naive_worst']:.2f}x in the worst); 80% intervals held "
            f"{summary['held_out_coverage_80']:.1%} of actuals, 95% intervals {summary['held_out_coverage_95']:.1%}."
        )
        shown = current_card()
        shown.append(Markdown(f"# Backtest of {self.model_version}\n{headline}"))
        shown.append(Markdown("## Held-out weeks"))
        shown.append(table(self.held_out.values.tolist(), [str(column) for column in self.held_out.columns]))
        print(headline.replace("**", ""))
        print(self.held_out.to_string(index=False))
        levels_headers, levels_rows = report.levels_table(self.held_out_levels)
        shown.append(Markdown("## Held out, as served: every level and borough (reconciled)"))
        shown.append(table(levels_rows, levels_headers))
        print("Held out, as served (reconciled), per level and borough:")
        print(pd.DataFrame(levels_rows, columns=levels_headers).to_string(index=False))
        self.held_out_png = plots.png_bytes(plots.held_out_figure(self.held_out))
        shown.append(Image(self.held_out_png, label="Held-out weeks: champion MAE / seasonal naive MAE"))
        headers, rows = report.metrics_table(self.metrics, self.noise_floor, self.scenarios)
        shown.append(Markdown("## Every candidate over every backtest week"))
        shown.append(table(rows, headers))
        if self.scenarios:
            scenario_note = (
                f"Scenario {', '.join(self.scenarios)} uses the target day's observed weather, which no forecast "
                "has at its origin: it shows what knowing the weather would be worth and is never the champion."
            )
            shown.append(Markdown(scenario_note))
            print(scenario_note)
        if self.noise_floor:
            floor = f"Noise floor (forecasting with the sample source's true rate): MAE {self.noise_floor['mae']:.3f}"
            shown.append(Markdown(floor))
            print(floor)
        shown.append(Markdown("## Per zone over the held-out weeks, worst against naive first"))
        floor_by_zone = noise_floor.noise_floor_by_zone(chosen.forecasts, truth)
        shown.append(table(report.zone_table(by_zone, floor_by_zone, self.zone_lookup), report.ZONE_HEADERS))
        self.backtest_png = plots.png_bytes(plots.backtest_figure(self.metrics, self.noise_floor))
        path = load_settings().path("plots") / f"backtest_{current_run_id()}.png"
        self.backtest_plot_path = str(plots.save_png(self.backtest_png, path))
        shown.append(Image(self.backtest_png, label="MAE and RMSE per candidate over every week, best first"))
        self.next(self.predict)

    @step
    def predict(self) -> None:
        """Refit the champion on all the data and forecast the next --horizon_hours for every zone."""
        inputs = self._inputs(self.zone_ids)
        model, self.features = backtest.fit_at(inputs, self.settings.as_of, lambda: make_candidate(self.champion))
        self.model = model
        future, _ = inputs.forecast_frame(self.settings.as_of)
        predicted = model.predict(future, self.features)
        boroughs = self._boroughs()
        groups = count_aware_groups(future.pulocationid.map(boroughs), predicted)
        bounds = self.intervals.bounds(predicted, groups, features.in_holiday_period(future.pickup_hour))
        forecast = pd.concat([future[["pickup_hour", "pulocationid"]], bounds], axis=1)
        forecast = forecast.assign(
            forecasted_total_rides=predicted,
            model_name=self.champion,
            model_version=self.model_version,
            metaflow_run_id=current_run_id(),
        )
        self.forecast = tables.with_zone_names(forecast, self.zone_lookup)
        # What every day's forecast is made with while this version serves (forecast_assets' daily_forecast).
        self.served = serving.fit_served(
            self.model_version, self.champion, lambda: make_candidate(self.champion), inputs, self.settings.as_of,
            boroughs, (model, self.features), self.level_intervals, self.coverage_band, self.bias_band,
        )  # fmt: skip
        unnamed = sorted(set(self.forecast.pulocationid[self.forecast.zone.isna()]))
        if unnamed:
            print(f"Zones {unnamed} are not in {ZONES}: their forecasts carry no zone name or borough.")
        weather = WEATHER_USE[model.weather]
        if model.weather in ("known", "expected"):
            weather += f" ({plural(self.weather_lag, 'day')} before the target day)"
        zones = ",".join(str(zone) for zone in self.zone_ids)
        held_out_weeks = ",".join(self.held_out["held-out week"])
        self.model_parameters = {
            MODEL_CANDIDATE_PARAM: model.name, "weather": weather, "zones": zones, **model.params,
            "selection_weeks": ",".join(self.selection_weeks_used), "held_out_weeks": held_out_weeks,
            "chosen_because": self.champion_reason,
            "weather_delay_days": self.weather_delay_days, **self.intervals.as_metadata(),
            **self.level_intervals.as_metadata(),
        }  # fmt: skip
        self.training_window = {"start": str(self.settings.window_start), "end": str(self.settings.as_of)}
        self.used_features = model.used_features(self.features)
        champion = self.metrics[self.metrics.candidate == self.champion].iloc[0]
        backtest_figures = {f"backtest_{name}": round(float(champion[name]), 4) for name in ("mae", "rmse", "wape")}
        record_model(
            MODEL_NAME,
            self.model_version,
            metrics=backtest_figures | self.held_out_summary,
            params=self.model_parameters,
            columns_from=column_lineage.model_lineage(self.used_features),
            promotion=Promotion(
                self.decision.challenger,
                self.decision.serving,
                self.decision.promoted,
                self.decision.reason,
                {key: value for key, value in self.decision.as_metadata().items() if isinstance(value, float)},
            ),
        )
        self.next(self.write)

    @card(type="blank", id="forecast")
    @step
    def write(self) -> None:
        """Replace this run's rows in the forecast table and check what was written (the table's checks)."""
        from flows.forecasting import plots  # matplotlib is slow to import; only drawing steps pay for it

        catalog, run_id = open_catalog(self.catalog_config), current_run_id()
        self.forecast_snapshot_id = tables.write_forecasts(
            catalog, self.forecast, run_id, column_lineage.forecast_lineage(self.used_features)
        )
        # Recorded once the version's forecasts are written: a run that fails before serves nothing.
        self.promotion_snapshot_id = registry.record_decision(
            catalog, MODEL_NAME, self.decision, self.champion, self.settings.as_of
        )
        written = (
            f"Wrote {len(self.forecast):,} rows ({len(self.zone_ids)} zones, {self.settings.horizon_hours} hours "
            f"from {self.settings.as_of:%Y-%m-%d %H:%M}) to {FORECAST} at snapshot {self.forecast_snapshot_id}."
        )
        print(written)
        # The table's checks, on the rows as the table holds them; a shell run reports them to Dagster.
        version = checks.ForecastVersion(
            run_id, pd.Timestamp(self.settings.as_of), self.settings.horizon_hours,
            len(self.zone_ids),
        )  # fmt: skip
        outcomes = checks.forecast_checks(tables.read_forecasts(catalog, run_id), version)
        self.forecast_checks = [outcome.to_dict() for outcome in outcomes]
        for outcome in outcomes:
            print(f"check {outcome.name}: {'passed' if outcome.passed else 'FAILED'}")
        figure = plots.forecast_figure(self.actuals, self.held_out_forecasts, self.forecast)
        self.forecast_png = plots.png_bytes(figure)
        self.plot_path = str(
            plots.save_png(self.forecast_png, load_settings().path("plots") / f"forecast_{run_id}.png")
        )
        shown = current_card()
        shown.append(Markdown(f"# Forecast of {self.model_version} ({self.champion})\n{written}"))
        shown.append(Image(self.forecast_png, label="Busiest zones: last week, backtest and forecast"))
        self.next(self.end)

    @step
    def end(self) -> None:
        """Print the model version, its champion and where its forecasts are."""
        summary = self.held_out_summary
        print(
            f"{self.model_version}: {self.champion} (held out: {summary['held_out_mae_vs_naive_median']:.2f}x naive in "
            f"the median week, 80% intervals held {summary['held_out_coverage_80']:.1%}), {len(self.forecast)} "
            f"forecast rows at snapshot {self.forecast_snapshot_id}; plot {self.plot_path}"
        )

    def _against_serving(self, held_out: pd.DataFrame) -> promotion.Decision:
        """This version against the one serving, on the same held-out hours (the serving version's candidate
        backtested on this run's weeks, as this run's candidates were)."""
        if self.serving is None:
            return promotion.decide(self.model_version, held_out, None, None)
        if self.serving_incomparable:
            return promotion.incomparable(self.model_version, self.serving.version, self.serving_incomparable)
        serving = self.backtest[
            (self.backtest.candidate == self.serving.champion) & self.backtest.origin.isin(held_out.origin.unique())
        ]
        return promotion.decide(self.model_version, held_out, self.serving.version, serving)

    def _evaluate_levels(self, branches: list[TrainForecastModelFlow], champions: dict[pd.Timestamp, str]) -> None:
        """Each held-out week as a version serves it (every level, reconciled, intervals per level) scored per level
        and borough; the final champion's intervals per level, calibrated on every backtest hour."""
        series = {branch._candidate(): branch.series_backtest for branch in branches}
        found: dict[str, pd.DataFrame] = {}

        def reconciled(candidate: str) -> pd.DataFrame:
            if candidate not in found:
                found[candidate] = levels.reconciled(series[candidate])
            return found[candidate]

        scored = levels.evaluate(reconciled, champions, series[backtest.BASELINE].forecasts)
        self.held_out_levels = levels.by_level(scored)
        self.coverage_band = levels.coverage_band(scored)
        self.bias_band = levels.bias_band(scored)
        self.held_out_summary = self.held_out_summary | levels.summary(self.held_out_levels)
        self.level_intervals = levels.calibrate(reconciled(self.champion), self.settings.as_of)

    def _boroughs(self) -> dict[int, str]:
        return dict(zip(self.zone_lookup.location_id, self.zone_lookup.borough, strict=True))

    def _candidate(self) -> str:
        """The candidate a train branch backtests: its item of the foreach over ``candidate_names``."""
        candidate = self.input
        if not isinstance(candidate, str):
            raise TypeError(f"a train branch over {candidate!r}")  # an internal invariant: the foreach is over names
        return candidate

    def _inputs(self, zones: list[int]) -> Inputs:
        """What the run read, for ``zones``: each fit and forecast sees only what was published at its origin."""
        return Inputs(
            self.actuals, self.weather, zones, self.settings.horizon_hours, self.settings.window_start,
            PublicationRule(self.weather_delay_days),
        )  # fmt: skip


if __name__ == "__main__":
    terminate_as_interrupt()  # a SIGTERM stops the run and its tasks, as Ctrl-C does
    TrainForecastModelFlow()
