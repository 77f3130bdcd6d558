"""A lineage history for benchmarks: a demo's queued events, copied as many later runs.

Imported by the benchmarks in this folder (run as scripts, so this folder is on the path).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "golden" / "openlineage"


def demo_events(outbox_path: Path) -> list[dict]:
    from bridge.outbox.queue import Outbox

    if outbox_path.exists():
        return [json.loads(q.payload) for q in Outbox(outbox_path).events_after(0, limit=10_000_000)]
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
    from bridge.outbox.queue import Outbox

    outbox = Outbox(folder / "outbox.sqlite")
    with outbox.batch("benchmark") as batch:
        for copy in range(scale):
            for number, event in enumerate(events):
                batch.add(f"{copy}/{number}", json.dumps(as_another_run(event, copy)))
    return folder / "outbox.sqlite"
