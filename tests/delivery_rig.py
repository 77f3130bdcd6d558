"""A lineage folder whose outbox holds the golden events, and real passes over it in their own processes.

    python -m tests.delivery_rig FOLDER OPENLINEAGE_URL [--wait S] [--seconds S] [--slow-lite S]

runs one :func:`bridge.run.lineage_pass.run_pass` (lease, OpenLineage over HTTP, DataHub Lite in FOLDER) over
an empty Dagster instance, so the pass delivers exactly what the outbox holds, and prints its result
as JSON. ``--slow-lite`` holds each Lite write that long, so a test can kill the pass in the middle.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from bridge.config import LineageBridge
from bridge.outbox.outbox import Outbox

GOLDEN_EVENTS = Path(__file__).parent / "golden" / "openlineage"


def golden_events() -> list[tuple[str, dict]]:
    return [
        (entry["key"], entry["event"])
        for path in sorted(GOLDEN_EVENTS.glob("*.json"))
        for entry in json.loads(path.read_text())
    ]


def fill(folder: Path, copies: int = 1, first: int | None = None) -> list[dict]:
    """Queue the golden events (only the ``first`` few if given; ``copies`` times, each copy under its own keys);
    returns them in order."""
    outbox = Outbox(folder / "outbox.sqlite")
    queued = []
    with outbox.queue.batch("golden") as batch:
        for copy in range(copies):
            for key, event in golden_events()[:first]:
                batch.add(f"{key}#{copy}" if copy else key, json.dumps(event))
                queued.append(event)
    outbox.close()
    return queued


def rig_bridge(folder: Path, pass_seconds: float = 40.0, lite: bool = True) -> LineageBridge:
    """The project's bridge over ``folder``: no flows to follow, DataHub Lite in the folder."""
    from forecast_assets.lineage import taxi_bridge
    from taxi_core.settings import load_settings
    from tests.lineage_bridges import lite_sink, with_datahub

    bridge = replace(taxi_bridge(load_settings()), lineage_dir=folder, flows=(), pass_seconds=pass_seconds)
    return with_datahub(bridge, lite_sink(folder / "lite.sqlite") if lite else None)


def http_client(url: str, timeout: float = 5.0):
    from openlineage.client import OpenLineageClient
    from openlineage.client.transport.http import HttpConfig, HttpTransport

    return OpenLineageClient(transport=HttpTransport(HttpConfig(url=url, timeout=timeout)))


def one_pass(bridge: LineageBridge, client, wait: float = 0.0):
    """A real pass over an empty Dagster instance: it delivers what the outbox holds."""
    from dagster import DagsterInstance

    from bridge.run.lineage_pass import run_pass

    def no_graph():
        raise AssertionError("nothing new in an empty instance: the asset graph is never loaded")

    with DagsterInstance.ephemeral() as instance:
        return run_pass(bridge, instance, no_graph, client, purpose="test", wait=wait)


def _slow_lite_writes(seconds: float) -> None:
    from bridge.sinks.datahub import LiteSink

    send = LiteSink.send

    def slowly(self, event, seconds_left):
        print(f"writing {event.seq}", flush=True)
        time.sleep(seconds)  # stands in for a large write, so the test can kill the pass in the middle of one
        send(self, event, seconds_left)

    LiteSink.send = slowly


def main() -> int:
    from bridge.outbox.lease import PassRunning

    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("url")
    parser.add_argument("--wait", type=float, default=0.0)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--slow-lite", type=float, default=0.0)
    args = parser.parse_args()
    if args.slow_lite:
        _slow_lite_writes(args.slow_lite)
    try:
        result = one_pass(rig_bridge(args.folder, args.seconds), http_client(args.url), args.wait)
    except PassRunning as running:
        print(json.dumps({"skipped": str(running)}))
        return 0
    print(
        json.dumps(
            {
                "sent": result.sink("openlineage").sent,
                "lite": result.sink("datahub").sent,
                "problems": result.problems,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
