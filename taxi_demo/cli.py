"""`taxi`: prepare local state and run the pipeline end to end on the embedded default.

Its arguments are read and checked before anything heavy loads: pandas, pyiceberg, Spark and Dagster load only with
the command that needs them, so a mistyped option or ``--help`` answers at once (tests/test_cli_imports.py)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dotenv import dotenv_values

from taxi_core.interrupts import uninterrupted
from taxi_core.months import MonthInvalid, parse_month
from taxi_core.names import LOCATION_NAME, TLC_FIRST_MONTH
from taxi_core.progress import print_now, reporting_while
from taxi_core.settings import Settings, SettingsError, load_settings, write_settings_file
from taxi_core.tool_env import child_environment
from taxi_demo import local_state
from taxi_demo.local_cluster import profile as cluster_profile
from taxi_demo.scale import DEMO_SCALE_TRIPS, FULL_SCALE_TRIPS

if TYPE_CHECKING:
    from dagster import DagsterInstance
    from dagster._core.workspace.context import WorkspaceRequestContext

    from taxi_demo.demo_undo import Before
    from taxi_demo.pipeline_run import RunOutcome

# The last month is the loop's: forecast day by day from the months before it, then published and scored.
DEMO_MONTHS = ["2024-12", "2025-01", "2025-02"]
LOOP_AFTER_MONTHS = 2  # months trained on before a further month is the loop's
SCALES = {"demo": DEMO_SCALE_TRIPS, "full": FULL_SCALE_TRIPS}
PROFILES = ("embedded", "cluster")
# Each option's value when it is not given (the parsers SUPPRESS theirs); Any, like the values argparse parses.
DEFAULTS: dict[str, Any] = {"months": DEMO_MONTHS, "scale": "demo", "weather": False, "profile": "embedded"}
COMMANDS = ("init", "demo", "cluster", "undo", "migrate-times")
# The settings a profile adds to its state folder's settings file, so later commands there find its servers.
PROFILE_SETTINGS = ("TAXI_CATALOG", "TAXI_CATALOG_URL", "TAXI_SPARK_MASTER", "TAXI_SPARK_CORES_MAX",
                    "TAXI_SPARK_EXECUTOR_MEMORY")  # fmt: skip


class Stages:
    """Stage headers with the time since the command started."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def elapsed(self) -> str:
        minutes, seconds = divmod(int(time.monotonic() - self.started), 60)
        return f"{minutes}:{seconds:02d}"

    def header(self, text: str) -> None:
        print(f"\n[{self.elapsed()}] ==> {text}", flush=True)


def trips_per_month(scale: str) -> int:
    if scale in SCALES:
        return SCALES[scale]
    trips = int(scale) if scale.isdecimal() else 0
    if trips <= 0:
        msg = f"--scale {scale!r}: use demo (~150k trips a month), full (~3M) or a positive number of trips"
        raise argparse.ArgumentTypeError(msg)
    return trips


def checked_months(months: list[str], today: date | None = None) -> list[str]:
    """Each month strictly ``YYYY-MM``, ended and no earlier than TLC's first: checked before anything is written."""
    checked = set()
    for month in months:
        try:
            checked.add(parse_month(month, today=today or date.today(), earliest=TLC_FIRST_MONTH))
        except MonthInvalid as err:
            msg = f"--months {month!r}: {err}. Nothing was written."
            raise argparse.ArgumentTypeError(msg) from None
    return sorted(checked)


def init(
    settings: Settings,
    months: list[str],
    trips: int,
    profile: dict[str, str] | None = None,
    months_in_range: list[str] | None = None,
) -> dict[str, str]:
    """Write the sample source, and the state folder's settings file that points the project at it (and its profile).

    The partitions run over ``months_in_range`` (by default every month the sample source has), so Dagster's launch
    dialog offers exactly those."""
    source = local_state.sample_source(settings, trips)
    source.write_months(months)
    values = local_state.local_environment(settings, source, cluster_profile.INSTANCE_YAML if profile else None)
    write_settings(
        settings,
        source.environment,
        source.truth_dir,
        profile,
        source.months() if months_in_range is None else months_in_range,
    )
    removed = local_state.remove_old_env_file()
    if removed:
        print(f"Removed {removed}, written by an older `taxi init`: settings now live in {settings.settings_file}")
    return values


def write_settings(
    settings: Settings,
    sources: dict[str, str],
    truth: Path,
    profile: dict[str, str] | None,
    months_in_range: list[str],
) -> None:
    """Every source's TAXI_<SOURCE>_BASE_URL (the UI's runs and sensors read them), the month range, the profile's."""
    kept = {key: value for key, value in (profile or {}).items() if key in PROFILE_SETTINGS}
    values = sources | month_range(months_in_range) | {"TAXI_TRUE_RATES": str(truth)}
    write_settings_file(settings.settings_file, values | kept)


def month_range(months: list[str]) -> dict[str, str]:
    return {"TAXI_FIRST_MONTH": min(months), "TAXI_LAST_MONTH": max(months)} if months else {}


def settled_range(settings: Settings) -> list[str]:
    """The first and last month of the settings file's range (what earlier demos ingested), or none."""
    written = dotenv_values(settings.settings_file) if settings.settings_file.is_file() else {}
    return [month for month in (written.get("TAXI_FIRST_MONTH"), written.get("TAXI_LAST_MONTH")) if month]


def history_problem(months: list[str], published: set[str]) -> str | None:
    """Why training could not run on the actuals after ingesting ``months``, if it could not: the flow fits and
    backtests on the 56 days before the newest hour, so the newest month needs the month before it too."""
    newest = max([*months, *published])
    year, month = map(int, newest.split("-"))
    previous = f"{year - 1}-12" if month == 1 else f"{year}-{month - 1:02d}"
    if previous in months or previous in published:
        return None
    return (
        f"--months: training forecasts from the newest month, {newest}, and needs the month before it ({previous}) "
        f"too (56 days of actuals); add it: --months {' '.join(sorted({*months, previous}))}. Nothing was written."
    )


def demo(settings: Settings, months: list[str], trips: int, use_weather: bool, profile: str = "embedded") -> int:
    stages = Stages()
    if profile == "embedded":
        return run_demo(settings, months, trips, use_weather, stages)
    stages.header("Cluster profile: starting PostgreSQL and a Spark standalone master with 2 workers on 127.0.0.1")
    with cluster_profile.running(settings) as cluster:
        for line in cluster.describe():
            print(f"  {line}")
        # The profile's own state folder (its Metaflow root and caches too), read without touching this process.
        cluster_settings = load_settings(os.environ | cluster.environment)
        status = run_demo(cluster_settings, months, trips, use_weather, stages, cluster.environment)
        stages.header("Cluster profile: stopping the Spark workers, the master and PostgreSQL")
    return status


def run_demo(
    settings: Settings,
    months: list[str],
    trips: int,
    use_weather: bool,
    stages: Stages,
    profile: dict[str, str] | None = None,
) -> int:
    from taxi_demo import demo_undo  # pyiceberg: only a command that reads the tables loads it

    problem = history_problem(months, demo_undo.published_actuals_months(settings))
    if problem:
        print(f"taxi: error: {problem}", file=sys.stderr)
        return 2
    before = demo_undo.record(settings)
    settled = settled_range(settings)
    stages.header(f"Sample TLC and NOAA files for {', '.join(months)} ({trips:,} trips a month)")
    # The settings file keeps its range until a month is in: a month that fails never becomes a partition there.
    with reporting_while(print_now, "  writing the sample files", ends=False):
        values = init(settings, months, trips, profile, months_in_range=settled)
    source = local_state.sample_source(settings, trips)
    # What the demo starts (the code server and its runs, Metaflow, the lineage pass) runs on this state folder,
    # its sample source, the months it ingests and, with a profile, its servers.
    ingested: list[str] = []
    try:
        with child_environment((profile or {}) | values | month_range([*settled, *months])):
            succeeded = _run_pipeline(settings, months, use_weather, stages, values, profile, ingested)
    except KeyboardInterrupt:
        print("\nStopped (Ctrl-C).")
        succeeded = False
    finally:
        with uninterrupted():
            write_settings(settings, source.environment, source.truth_dir, profile, [*settled, *ingested])
    if not succeeded:
        with uninterrupted():
            _say_what_is_left(settings, before, settled, ingested)
    return 0 if succeeded else 1


def _say_what_is_left(settings: Settings, before: Before, settled: list[str], ingested: list[str]) -> None:
    from taxi_demo import demo_undo  # pyiceberg: loaded only once the demo has run

    changed = before.changes(settings)
    if not changed:
        print("No table changed: every published table is as it was before the demo.")
    else:
        print("What the demo left (each table's current version; Dagster and the lineage keep its runs):")
        print("\n".join(f"  {line}" for line in changed))
    months = month_range([*settled, *ingested])
    print(
        f"  {settings.settings_file}: months "
        + (f"{months['TAXI_FIRST_MONTH']} to {months['TAXI_LAST_MONTH']}" if months else "not set")
        + " (a month that failed is not added)"
    )
    if changed:
        demo_undo.save(before, settings)
        undo = demo_undo.UNDO_COMMAND
        print(f"Undo all of it (each table back to its version before the demo, the settings too): {undo}")


def _run_pipeline(
    settings: Settings,
    months: list[str],
    use_weather: bool,
    stages: Stages,
    values: dict[str, str],
    profile: dict[str, str] | None,
    ingested: list[str],
) -> bool:
    """Run the demo's jobs and one lineage pass; each month whose ingestion succeeded goes into ``ingested``."""
    # Dagster reads DAGSTER_HOME when the instance is opened: inside the demo's environment.
    from dagster import DagsterInstance

    from taxi_demo import pipeline_run

    outcomes: list[RunOutcome] = []
    with DagsterInstance.get() as instance:
        stages.header(f"Loading the Dagster code location {LOCATION_NAME} (workspace.yaml)")
        with pipeline_run.code_location(instance) as workspace:
            if pipeline_run.has_job(workspace, pipeline_run.REFERENCE_JOB):
                stages.header(f"Reference data (published once for all months): job {pipeline_run.REFERENCE_JOB}")
                outcomes.append(pipeline_run.run_to_end(instance, workspace, pipeline_run.REFERENCE_JOB))
                pipeline_run.print_outcome(outcomes[-1])
            loop_month = months[-1] if len(months) > LOOP_AFTER_MONTHS else None

            def ingest(months: list[str]) -> bool:
                """``months`` (consecutive) as one run: one Spark session for all of them, each month published
                on its own."""
                what = months[0] if len(months) == 1 else f"{months[0]} to {months[-1]} ({len(months)} months, one run)"
                stages.header(f"Ingesting {what}: job {pipeline_run.INGESTION_JOB}")
                tags = pipeline_run.months_of(months)
                outcomes.append(pipeline_run.run_to_end(instance, workspace, pipeline_run.INGESTION_JOB, tags=tags))
                pipeline_run.print_outcome(outcomes[-1])
                done = (
                    months
                    if outcomes[-1].success
                    else pipeline_run.months_published(instance, outcomes[-1].run_id, months)
                )
                ingested.extend(done)
                return outcomes[-1].success

            for run in pipeline_run.consecutive(months[:-1] if loop_month else months):
                if outcomes and not outcomes[-1].success:
                    break
                ingest(run)
            if all(outcome.success for outcome in outcomes):
                weather = "with" if use_weather else "without"
                stages.header(f"Training {weather} weather: job {pipeline_run.TRAINING_JOB} runs flows/train.py")
                # With a loop month, the version is trained as of its start: what a model serving it could know.
                as_of = {"as_of": f"{loop_month}-01"} if loop_month else {}
                config = {"ops": {"run_training_flow": {"config": {"use_weather": use_weather, **as_of}}}}
                outcomes.append(
                    pipeline_run.run_to_end(instance, workspace, pipeline_run.TRAINING_JOB, run_config=config)
                )
                pipeline_run.print_outcome(outcomes[-1])
            if loop_month and all(outcome.success for outcome in outcomes):
                _forecasting_loop(instance, workspace, loop_month, stages, outcomes, ingest)

    stages.header("Lineage: one bridge pass (OpenLineage events and the DataHub graph) and its picture")
    from forecast_assets.lineage_cli import main as lineage

    with reporting_while(print_now, "  lineage pass", ends=False):
        lineage([])
        lineage(["picture"])

    succeeded = all(outcome.success for outcome in outcomes)
    stages.header(f"Demo {'finished' if succeeded else 'FAILED'}. State folder: {values['TAXI_STATE_DIR']}")
    for outcome in outcomes:
        print(f"  {outcome.label:22s} {'succeeded' if outcome.success else 'FAILED   '}  run {outcome.run_id}")
    if profile:
        print("Servers again:         ./run taxi cluster   (keeps them up and says how to point dagster dev at them)")
    else:
        print("Dagster UI:            ./run dagster dev   (then open http://127.0.0.1:3000/runs)")
    if not succeeded:
        return False
    print(
        "Train again by hand:   ./run python flows/train.py run --use_weather true   (its lineage follows at its end)"
    )
    print("Lineage of a table:    ./run taxi-lineage show nyc_taxi.yellow_rides_hourly_forecast")
    print("Model versions:        ./run taxi-lineage model")
    plot = pipeline_run.newest_plot(settings.state_dir)
    if plot:
        print(f"Forecast plot:         {plot}")
    return True


def _forecasting_loop(
    instance: DagsterInstance,
    workspace: WorkspaceRequestContext,
    month: str,
    stages: Stages,
    outcomes: list[RunOutcome],
    ingest: Callable[[list[str]], bool],
) -> None:
    """Every day of ``month`` forecast from what was published before it (one run, as a backfill from the UI); the
    month published; its days scored (the run the scoring sensor asks for) and their accuracy shown."""
    from taxi_demo import pipeline_run  # Dagster loads only for the commands that run jobs

    days = pipeline_run.days_of(month)
    stages.header(
        f"Forecasting every day of {month} from the actuals published before it: job {pipeline_run.FORECAST_JOB}, "
        "one run for the month (a backfill)"
    )
    outcomes.append(pipeline_run.run_to_end(instance, workspace, pipeline_run.FORECAST_JOB, tags=days))
    pipeline_run.print_outcome(outcomes[-1])
    if not outcomes[-1].success:
        return
    if not ingest([month]):
        return
    stages.header(f"Scoring {month}'s forecasts against its actuals: job {pipeline_run.SCORING_JOB}")
    outcomes.append(pipeline_run.run_to_end(instance, workspace, pipeline_run.SCORING_JOB, tags=days))
    pipeline_run.print_outcome(outcomes[-1])
    print("\n".join(f"  {line}" for line in pipeline_run.accuracy_lines(instance, outcomes[-1].run_id)))


def migrate_times(settings: Settings) -> int:
    """Migrate every table whose New York wall-clock columns an older version typed timestamptz; say which."""
    from forecast_assets.definitions import resources_for  # Spark starts only for this command
    from forecast_assets.wall_clock_migration import migrate_times as migrate

    migrated = migrate(resources_for(settings)["spark"].session)
    print(f"Migrated {', '.join(migrated)}" if migrated else "Every table already types its wall-clock times")
    return 0


def _parser() -> argparse.ArgumentParser:
    # The same options before or after the command; SUPPRESS keeps a later parser from resetting them.
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--months", nargs="+", default=argparse.SUPPRESS, help="months to use, YYYY-MM")
    options.add_argument(
        "--scale", default=argparse.SUPPRESS, help="trips per month: demo (~150k), full (~3M) or a number"
    )
    options.add_argument(
        "--weather", action="store_true", default=argparse.SUPPRESS, help="train the weather-aware candidates too"
    )
    options.add_argument(
        "--profile",
        choices=PROFILES,
        default=argparse.SUPPRESS,
        help="embedded (default: local Spark, SQLite) or cluster (Spark standalone and PostgreSQL on 127.0.0.1)",
    )
    parser = argparse.ArgumentParser(prog="taxi", description=__doc__, parents=[options])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser(
        "init", parents=[options], help="write the sample source and the settings file dagster dev reads"
    )
    commands.add_parser(
        "demo", parents=[options], help="init, ingest the months, build actuals, train and forecast, lineage"
    )
    commands.add_parser(
        "undo", help="put every table back to its version before the last failed demo, and the settings as they were"
    )
    commands.add_parser(
        "migrate-times",
        help="retype the wall-clock columns of tables an older version wrote (timestamptz) as timestamp, in place",
    )
    commands.add_parser(
        "cluster", help="start the cluster profile's servers and keep them up until Ctrl-C (for dagster dev)"
    )
    return parser


def command_first(argv: list[str]) -> list[str]:
    """Move the command to the front, so ``--months 2024-12 2025-01 demo`` does not read it as a month."""
    for index, word in enumerate(argv):
        if word in COMMANDS:
            return [word, *argv[:index], *argv[index + 1 :]]
    return argv


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(command_first(sys.argv[1:] if argv is None else argv))
    options = DEFAULTS | vars(args)
    try:
        trips = trips_per_month(options["scale"])
        months = checked_months(options["months"])
    except argparse.ArgumentTypeError as err:
        parser.error(str(err))
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("forecast_assets").setLevel(logging.INFO)
    try:
        settings = load_settings()
    except SettingsError as err:
        parser.error(str(err))
    if args.command == "init":
        init(settings, months, trips)
        print(f"Wrote {settings.settings_file}; `./run dagster dev` reads it (exported variables win):")
        print(settings.settings_file.read_text().strip())
        return 0
    if args.command == "cluster":
        return keep_cluster_up(settings)
    if args.command == "undo":
        from taxi_demo import demo_undo  # pyiceberg: only this command reads the tables

        return demo_undo.undo(settings)
    if args.command == "migrate-times":
        return migrate_times(settings)
    return demo(settings, months, trips, options["weather"], options["profile"])


def keep_cluster_up(settings: Settings) -> int:
    """Start the profile's servers, write the environment that points commands at them, wait for Ctrl-C."""
    # Ctrl-C may come at any moment, even while the servers start: they are stopped all the same.
    with contextlib.suppress(KeyboardInterrupt), cluster_profile.running(settings) as cluster:
        env_file = cluster.state_dir / "cluster.env"
        env_file.write_text("".join(f"{key}={value}\n" for key, value in cluster.environment.items()))
        print("\n".join(cluster.describe()))
        print(f"\nIn another shell:  set -a; . {env_file}; set +a; ./run dagster dev")
        print("Ctrl-C stops the servers.", flush=True)
        signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main())
