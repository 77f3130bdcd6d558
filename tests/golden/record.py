"""Record a project's Dagster runs and Metaflow runs as plain records, for the golden tests.

    DAGSTER_HOME=.state/dagster ./run python -m tests.golden.record

Reads the instance of ``DAGSTER_HOME`` and the Metaflow runs of the state folder (after `taxi demo`,
say), and writes one JSON file per run under ``tests/golden/records/``. The state folder's path is
written as ``/state``, the project's as ``/project`` and Python's as ``/python``, so the files say
nothing about the machine.
Then ``GOLDEN_UPDATE=1 ./run tests tests/test_golden.py`` writes the expected events and aspects.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from taxi_core.settings import PROJECT_ROOT, load_settings
from taxi_core.tool_env import apply_tool_environment

RECORDS = Path(__file__).parent / "records"


def main() -> None:
    settings = load_settings()
    apply_tool_environment(settings)
    # Dagster and Metaflow read their configuration when imported: only now.
    from dagster import DagsterInstance

    from bridge.sources.dagster import DagsterSource
    from bridge.sources.metaflow import flow_runs, run_record
    from forecast_assets.definitions import build_definitions
    from forecast_assets.lineage import naming
    from taxi_core.names import FLOW_NAME

    graph = build_definitions(settings).resolve_asset_graph()
    RECORDS.mkdir(exist_ok=True)
    state = str(settings.state_dir)
    with DagsterInstance.get() as instance:
        source = DagsterSource(instance, graph, naming(settings), "taxi_demand", launcher_kinds=("metaflow",))
        runs = sorted(instance.get_runs(), key=lambda run: instance.get_run_record_by_id(run.run_id).create_timestamp)
        for number, run in enumerate(runs, 1):
            records = source.run_records(run.run_id)
            label = run.tags.get("dagster/partition", "")[:7] or run.job_name
            _write(f"dagster_{number}_{run.job_name}_{label}_{run.status.value.lower()}.json", records.to_json(), state)
        for number, run in enumerate(flow_runs(FLOW_NAME), 1):
            record = run_record(run, source.run_job, source.step_job)
            origin = "dagster" if record.dagster_run_id else "shell"
            _write(f"metaflow_{number}_{origin}_{record.state.lower()}.json", record.to_json(), state)


def _write(name: str, text: str, state: str) -> None:
    path = RECORDS / re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    for local, neutral in ((state, "/state"), (str(PROJECT_ROOT), "/project"), (sys.base_prefix, "/python")):
        text = text.replace(local, neutral)
    path.write_text(text + "\n")
    print(f"recorded {path}")


if __name__ == "__main__":
    main()
