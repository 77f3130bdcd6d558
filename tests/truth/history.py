"""The scenario's history: the runs, what each really did (files, snapshots, artifacts), and the lineage's claims."""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import pyarrow as pa
import pyarrow.parquet as pq
from dagster import AssetKey, DagsterEventType, DagsterInstance
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from forecast_assets.definitions import build_definitions
from forecast_assets.lineage import lite_path, naming, taxi_bridge
from forecast_assets.lineage_cli import main as lineage_command
from forecast_assets.source_specs.registry import registered_sources
from forecast_assets.source_specs.yellow_trips import YELLOW
from taxi_core.catalog import CatalogConfig, open_catalog
from taxi_core.months import MonthWindow
from taxi_core.names import FLOW_NAME
from taxi_core.settings import PROJECT_ROOT, Settings
from taxi_demo import pipeline_run
from taxi_demo.sample_source import TRIP_DIR
from tests.truth.scenario import ACTUALS, FORECAST, MONTHS, capture, run_flow, sha256

# Every registered source's table, and the actuals counted from the yellow trips.
TABLES = [*(source.table.identifier for source in registered_sources()), ACTUALS]

# The oracle checks what each training read and wrote, not which model won: each candidate is a Metaflow task of
# its own (a process), so the trainings learn the baseline, and the weather version one weather model beside it.
ONE_CANDIDATE = ("--candidates", "seasonal_naive")
REWRITE_RAW_YELLOW = {"ops": {"nyc_taxi__raw_yellow": {"config": {"rewrite_unchanged": True}}}}


@dataclass
class History:
    settings: Settings
    state: Path
    runs: list[dict] = field(default_factory=list)  # each Dagster run: id, what it was, the files staged after it
    killed: list[str] = field(default_factory=list)  # the Dagster runs whose process was killed

    def play(self) -> None:
        with DagsterInstance.get() as instance:
            self.instance = instance
            definitions = build_definitions(self.settings)
            job = definitions.resolve_job_def("monthly_ingestion")
            reference = definitions.resolve_job_def("reference_data").execute_in_process(instance=instance)
            self._ran(reference.run_id, "", "the zone lookup", reference.success)

            def ingest(month: str, what: str, run_config: dict | None = None) -> None:
                result = job.execute_in_process(
                    partition_key=f"{month}-01", instance=instance, run_config=run_config, raise_on_error=False
                )
                self._ran(result.run_id, month, what, result.success)

            def ingest_range(first: str, last: str, what: str, run_config: dict | None = None) -> None:
                """One run of every month from ``first`` to ``last`` (a single-run backfill, as the UI launches one)."""
                tags = {ASSET_PARTITION_RANGE_START_TAG: f"{first}-01", ASSET_PARTITION_RANGE_END_TAG: f"{last}-01"}
                result = job.execute_in_process(
                    tags=tags, instance=instance, run_config=run_config, raise_on_error=False
                )
                months = " ".join(month for month in sorted(MONTHS) if first <= month <= last)
                self._ran(result.run_id, months, what, result.success)

            # Months out of order: the latest first; a model trained on them before the earliest month arrives.
            ingest("2025-01", "first ingestion")
            ingest("2024-12", "first ingestion")
            run_flow(*ONE_CANDIDATE)
            ingest("2024-11", "first ingestion, after a training, of a month before those it read")
            with pipeline_run.code_location(instance) as workspace:
                self._killed_during_raw_yellow(workspace, "2024-11")
            ingest("2024-11", "unchanged re-run")
            ingest("2024-11", "forced rewrite of raw_yellow", REWRITE_RAW_YELLOW)
            run_flow(*ONE_CANDIDATE)  # the last training before December is republished
            self._change_trips("2024-12", early=True)
            ingest("2024-12", "republished file that fails its audit")
            self._change_trips("2024-12", early=False)
            ingest("2024-12", "republished file with changed rows")
            with pipeline_run.code_location(instance) as workspace:
                actuals = AssetKey(["nyc_taxi", "yellow_rides_hourly_actuals"])
                run_id = pipeline_run.launch(
                    instance,
                    workspace,
                    "__ASSET_JOB",
                    tags={"dagster/partition": "2025-01-01"},
                    asset_selection=[actuals],
                )
                outcome = pipeline_run.wait_for(instance, run_id)
                self._ran(run_id, "2025-01", "UI launch of the actuals (unchanged)", outcome.success)
            run_flow(*ONE_CANDIDATE)
            run_flow("--use_weather", "true", "--candidates", "seasonal_naive,glm_weather")
            run_flow(*ONE_CANDIDATE)  # by hand without weather, while the weather version serves
            # After the trainings (whose inputs the tests compare): every month's raw_yellow and actuals written again
            # in one run, each month its own snapshots.
            every_month = "forced rewrite of raw_yellow over every month, as one run"
            ingest_range("2024-11", "2025-01", every_month, REWRITE_RAW_YELLOW)
            lineage_command([])

    def _killed_during_raw_yellow(self, workspace, month: str) -> None:
        """A forced rewrite of the month whose run worker is killed (SIGKILL, with its step and Spark) once raw_yellow
        has staged the month, then canceled as the UI's force termination does: Dagster knows it ended."""
        run_id = pipeline_run.launch(
            self.instance, workspace, "monthly_ingestion", tags={"dagster/partition": f"{month}-01"},
            run_config=REWRITE_RAW_YELLOW,
        )  # fmt: skip
        staged = "Writing nyc_taxi.raw_yellow"
        while not any(
            staged in (entry.user_message or "") and ": done in" in (entry.user_message or "")
            for entry in self.instance.all_logs(run_id)
        ):
            run = self.instance.get_run_by_id(run_id)
            assert run is not None and not run.is_finished, f"run {run_id} ended before raw_yellow staged its month"
            time.sleep(0.05)  # waiting on the run's own log line, polled
        # The process that runs the steps says its pid in the run's log (an engine event's metadata).
        pids = {
            int(entry.dagster_event.engine_event_data.metadata["pid"].value)
            for entry in self.instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT)
            if entry.dagster_event.engine_event_data and "pid" in entry.dagster_event.engine_event_data.metadata
        }
        workers = [psutil.Process(pid) for pid in pids if psutil.pid_exists(pid)]
        assert workers, f"no process of run {run_id} is running"
        for worker in workers:
            for process in [*worker.children(recursive=True), worker]:
                with contextlib.suppress(psutil.NoSuchProcess):
                    process.kill()
        psutil.wait_procs(workers, timeout=30)
        run = self.instance.get_run_by_id(run_id)
        assert run is not None
        if not run.is_finished:  # Dagster did not see the process die: a person force-terminates it in the UI
            self.instance.report_run_canceled(run, message="Force-terminated: its process was killed")
        self._ran(run_id, month, "killed while raw_yellow ran, then canceled", False)
        self.killed.append(run_id)

    def _ran(self, run_id: str, month: str, what: str, success: bool) -> None:
        staging = Path(self.settings.staging_location) if "://" not in self.settings.staging_location else None
        files: dict = {}
        for source in registered_sources():
            for each in sorted(MONTHS) if source.monthly else [""]:
                window = MonthWindow.from_partition_key(f"{each}-01") if each else None
                paths = [staging / source.staging_folder / file.path for file in source.files_for(window)]
                if not all(path.exists() for path in paths):
                    continue
                # A version of several files: the sha256 of their fingerprints, in the declared order.
                joined = "".join(sha256(path) for path in paths)
                version = (
                    sha256(paths[0]) if len(paths) == 1 else "sha256:" + hashlib.sha256(joined.encode()).hexdigest()
                )
                files.setdefault(each, {})[source.name] = version
        dropped = [
            entry.user_message for entry in self.instance.all_logs(run_id) if entry.user_message.startswith("Dropped ")
        ]
        self.runs.append(
            {"run_id": run_id, "month": month, "what": what, "success": success, "files": files, "dropped": dropped}
        )

    def _change_trips(self, month: str, early: bool) -> None:
        """Republish the month's sample file: a tenth of the pickups a year early (fails its audit), or rows dropped."""
        path = self.state / "sample_source" / TRIP_DIR / YELLOW.file_name(month)
        trips = pq.read_table(path)
        rows = np.random.default_rng(11).random(trips.num_rows) < 0.1
        if early:
            for column in ("tpep_pickup_datetime", "tpep_dropoff_datetime"):
                values = trips.column(column).to_numpy()
                shifted = np.where(rows, values - np.timedelta64(365, "D"), values)
                trips = trips.set_column(
                    trips.schema.get_field_index(column), column, pa.array(shifted, trips.schema.field(column).type)
                )
        else:
            trips = trips.filter(pa.array(~rows))
        pq.write_table(trips, path)

    def record(self) -> dict:
        snapshots = self._snapshots()
        return {
            "runs": self.runs,
            # Each source's table, file asset and name (the key of its files' versions in each run's ``files``).
            "sources": [
                {"table": source.table.identifier, "files": source.file_asset, "name": source.name}
                for source in registered_sources()
            ],
            "killed": self.killed,
            # What no event may name: this machine's folders.
            "machine_paths": [str(self.state), str(PROJECT_ROOT), str(Path.home())],
            "snapshots": snapshots,
            "flow_runs": self._flow_runs(),
            "labels": self._labels(),
            "events": self._events(),
            "answers": self._answers(snapshots),
            "datahub_runs": self._datahub_runs(),
        }

    def _snapshots(self) -> dict:
        catalog = open_catalog(CatalogConfig.from_settings(self.settings))
        found = {}
        for name in [*TABLES, FORECAST]:
            table = catalog.load_table(name)
            main, current = [], table.current_snapshot()
            by_id = {s.snapshot_id: s for s in table.snapshots()}
            while current is not None:
                main.append(current.snapshot_id)
                current = by_id.get(current.parent_snapshot_id)
            found[name] = {
                "main": main[::-1],
                "snapshots": {
                    str(s.snapshot_id): {
                        "parent": s.parent_snapshot_id,
                        "at": s.timestamp_ms,
                        "summary": dict(s.summary.additional_properties) if s.summary else {},
                    }
                    for s in table.snapshots()
                },
            }
        return found

    def _flow_runs(self) -> list[dict]:
        from metaflow import Flow, namespace

        namespace(None)
        return [
            {
                "pathspec": run.pathspec,
                "model_version": run.data.model_version,
                "actuals_snapshot_id": str(run.data.actuals_snapshot_id),
                "weather_snapshot_id": None
                if run.data.weather_snapshot_id is None
                else str(run.data.weather_snapshot_id),
                "forecast_snapshot_id": str(run.data.forecast_snapshot_id),
                "zones_snapshot_id": str(run.data.zone_lookup_snapshot_id),
                "registry_read_snapshot_id": _text(run.data.registry_snapshot_id),
                "registry_written_snapshot_id": str(run.data.promotion_snapshot_id),
                "use_weather": bool(run.data.settings.use_weather),
                "champion": run.data.champion,
                "serving_read": None if run.data.serving is None else run.data.serving.version,
                "promoted": bool(run.data.decision.promoted),
                "promotion_reason": run.data.decision.reason,
                "features": list(run.data.used_features),
                "months_read": self._months_read(run.data),
            }
            for run in sorted(Flow(FLOW_NAME), key=lambda run: run.created_at)  # the client lists the newest first
            if run.successful
        ]

    def _months_read(self, data) -> dict[str, list[str]]:
        """The months whose rows the run read, per table: from the rows themselves, at the snapshot it read, in the
        window its settings say (not from any lineage record)."""
        catalog = open_catalog(CatalogConfig.from_settings(self.settings))
        start, end = data.settings.window_start, data.settings.as_of
        reads = {"nyc_taxi.yellow_rides_hourly_actuals": ("pickup_hour", data.actuals_snapshot_id)}
        if data.weather_snapshot_id is not None:
            reads["nyc_taxi.raw_weather"] = ("date", data.weather_snapshot_id)
        months = {}
        for name, (column, snapshot_id) in reads.items():
            rows = catalog.load_table(name).scan(selected_fields=(column,), snapshot_id=snapshot_id).to_pandas()
            moments = pd.to_datetime(rows[column])
            moments = moments.dt.tz_convert(None) if moments.dt.tz is not None else moments
            # The weather is read by day: every day the window touches.
            low, high = (start, end) if column == "pickup_hour" else (start.normalize(), end.normalize())
            inside = moments[(moments >= pd.Timestamp(low)) & (moments < pd.Timestamp(high))]
            months[name] = sorted({f"{m:%Y-%m}" for m in inside})
        return months

    def _labels(self) -> dict:
        """Each asset's name in the lineage (a table's catalog name, else its location), and in DataHub."""
        from bridge.translate.datahub import dataset_urn_name

        policy = naming(self.settings)
        labels = {}
        files = [source.file_asset for source in registered_sources()]
        for key in [*files, "forecast_model", *TABLES, FORECAST]:
            name = policy.asset(key.split("."))
            labels[key] = {
                "lineage": name.catalog_name or name.name,
                "datahub": dataset_urn_name(policy.datahub_urn(name)),
            }
        return labels

    def _events(self) -> list[dict]:
        path = taxi_bridge(self.settings).events_file
        return [json.loads(line) for line in path.read_text().splitlines()]

    def _answers(self, snapshots: dict) -> dict:
        """The lineage command's answers, as a person or a script asks for them."""
        bridge = taxi_bridge(self.settings)
        from bridge.cli import main as cli

        def ask(*words: str):
            """The command's JSON answer; ``None`` where it answered with a usage error (a version it never saw)."""
            printed = capture(cli.main, list(words), bridge)
            return json.loads(printed) if printed.strip() else None

        answers = {"model": ask("model", "--json"), "versions": {}, "columns": {}, "diffs": {}}
        for table, records in snapshots.items():
            for version in records["snapshots"]:
                answers["versions"][f"{table}@{version}"] = ask("show", table, "--version", version, "--json")
        for version in snapshots["nyc_taxi.raw_yellow"]["main"]:
            column = "nyc_taxi.raw_yellow.pulocationid"
            answers["columns"][str(version)] = ask("show", column, "--version", str(version), "--json")
        main = [str(v) for v in snapshots["nyc_taxi.raw_yellow"]["main"]]
        for before, after in zip(main, main[1:], strict=False):
            pair = f"nyc_taxi.raw_yellow@{before} nyc_taxi.raw_yellow@{after}"
            answers["diffs"][pair] = ask(
                "diff", f"nyc_taxi.raw_yellow@{before}", f"nyc_taxi.raw_yellow@{after}", "--json"
            )
        models = [version["version"] for version in answers["model"] or []]
        answers["model_diffs"] = {
            f"{a} {b}": ask("diff", a, b, "--json") for a, b in zip(models, models[1:], strict=False)
        }
        return answers

    def _datahub_runs(self) -> list[dict]:
        from bridge.sinks.lite import open_lite

        lite = open_lite(lite_path(self.settings), read_only=True)
        try:
            runs = []
            for urn in lite.list_ids():
                if urn.startswith("urn:li:dataProcessInstance:"):
                    found = lite.get(urn, aspects=["dataProcessInstanceProperties"]) or {}
                    properties = found.get("dataProcessInstanceProperties") or {}
                    runs.append(
                        {"urn": urn, "name": properties.get("name"), "versions": properties.get("customProperties", {})}
                    )
            return runs
        finally:
            lite.close()


def _text(snapshot_id: int | None) -> str | None:
    return None if snapshot_id is None else str(snapshot_id)
