"""A lineage history for benchmarks: a demo's queued events, copied as many later runs.

Imported by the benchmarks in this folder (run as scripts, so this folder is on the path).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "golden" / "openlineage"


def demo_events(outbox_path: Path) -> list[dict]:
    from bridge.outbox.outbox import Outbox

    if outbox_path.exists():
        return [json.loads(q.payload) for q in Outbox(outbox_path).queue.after(0, limit=10_000_000)]
    print(f"No outbox at {outbox_path}: using the golden events of a demo and a weather run")
    return [entry["event"] for path in sorted(GOLDEN.glob("*.json")) for entry in json.loads(path.read_text())]


def as_another_run(event: dict, copy: int) -> dict:
    """The event as if from another run: new run ids, versions suffixed, times shifted by ``copy`` days."""
    if copy == 0:
        return event
    text = json.dumps(event)
    ids = {event["run"]["runId"], event["run"]["facets"].get("parent", {}).get("run", {}).get("runId")}
    for old in filter(None, ids):
        text = text.replace(old, str(uuid.uuid5(uuid.NAMESPACE_URL, f"{old}/{copy}")))
    copied = json.loads(text)
    for dataset in (*copied.get("inputs", []), *copied.get("outputs", [])):
        facet = dataset.get("facets", {}).get("version")
        if facet:
            facet["datasetVersion"] = f"{facet['datasetVersion']}-{copy}"
    facet = copied["run"]["facets"].get("modelTraining")
    if facet:
        facet["version"] = f"{facet['version']}-{copy}"
    copied["eventTime"] = copied["eventTime"].replace("2026-", f"{2026 + copy}-", 1)
    return copied


def fill(folder: Path, events: list[dict], scale: int) -> Path:
    from bridge.outbox.outbox import Outbox

    outbox = Outbox(folder / "outbox.sqlite")
    with outbox.queue.batch("benchmark") as batch:
        for copy in range(scale):
            for number, event in enumerate(events):
                batch.add(f"{copy}/{number}", json.dumps(as_another_run(event, copy)))
    return folder / "outbox.sqlite"


def demo_event_log(source: Path, home: Path, runs: int, config: str) -> int:
    """A Dagster instance in ``home`` (its ``dagster.yaml`` is ``config``) whose event log holds the runs of the
    instance in ``source`` (a demo's) copied until there are ``runs``: each copy a new run id, its records
    stored by Dagster's own storage, its times shifted back by whole copies of the demo's span (so a later copy
    is a later run). Returns how many demo runs there were."""
    from datetime import UTC, datetime

    from dagster import DagsterInstance

    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(config.format(home=home))
    with DagsterInstance.from_config(str(source)) as demo, DagsterInstance.from_config(str(home)) as target:
        records = sorted(demo.get_run_records(), key=lambda record: record.create_timestamp)
        if not records:
            raise SystemExit(f"No Dagster runs in {source}: run `./run demo` first")
        logs = {record.dagster_run.run_id: demo.all_logs(record.dagster_run.run_id) for record in records}
        times = [entry.timestamp for entries in logs.values() for entry in entries]
        span = max(times) - min(times) + 60
        storage = target.run_storage
        for record in records:
            run = record.dagster_run
            if not storage.has_job_snapshot(run.job_snapshot_id):
                storage.add_job_snapshot(demo.run_storage.get_job_snapshot(run.job_snapshot_id))
            plan = run.execution_plan_snapshot_id
            if plan and not storage.has_execution_plan_snapshot(plan):
                storage.add_execution_plan_snapshot(demo.run_storage.get_execution_plan_snapshot(plan))
        copies = -(-runs // len(records))
        for copy in range(copies):
            shift = (copy - copies) * span
            for record in records[: runs - copy * len(records)]:
                run_id = str(uuid.uuid4())
                created = datetime.fromtimestamp(record.create_timestamp.timestamp() + shift, UTC)
                storage.add_historical_run(record.dagster_run._replace(run_id=run_id), created)
                target.event_log_storage.store_event_batch(
                    [
                        entry._replace(run_id=run_id, timestamp=entry.timestamp + shift)
                        for entry in logs[record.dagster_run.run_id]
                    ]
                )
    return len(records)
