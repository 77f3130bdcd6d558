"""Lineage delivery throughput: the outbox to a file, to a loopback HTTP receiver and into DataHub Lite,
against the way it was done before (one SQLite commit per event, the client's own retries, one Lite
commit per aspect), from the same run; then a whole pass against dagster-openlineage 0.2.1's sensor on
the same Dagster event log.

    ./run python benchmarks/lineage_delivery.py [--copies 30] [--runs 50] [--skip-sensor]

The events are a demo's (the state folder's outbox, or the golden events), copied as later runs.
The HTTP receiver runs in its own process. dagster-openlineage is installed into its own virtual
environment under the state folder (once), with the same Dagster and OpenLineage client as here.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from lineage_history import demo_events, fill

ROOT = Path(__file__).resolve().parents[1]


def receive(port_queue) -> None:
    """A loopback OpenLineage receiver in its own process: reads each event, answers 201, keeps the connection.

    Plain asyncio, not ``http.server``: a backend (Marquez, DataHub) answers in well under a tenth of
    a millisecond, and the figure should be the bridge's, not the stand-in's.
    """
    import asyncio

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                headers = (await reader.readuntil(b"\r\n\r\n")).lower().split(b"\r\n")
                length = next(int(h.split(b":", 1)[1]) for h in headers if h.startswith(b"content-length"))
                await reader.readexactly(length)
                writer.write(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):  # the client closed its connection
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port_queue.put(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    asyncio.run(main())


def _rate(count: int, seconds: float) -> str:
    return f"{count / seconds:>9,.0f}/s"


def ours_to_openlineage(outbox_path: Path, client) -> tuple[int, float]:
    from bridge.outbox.queue import Outbox
    from bridge.sinks.drain import drain
    from bridge.sinks.openlineage import OpenLineageSink

    outbox = Outbox(outbox_path)
    started = time.perf_counter()
    result = drain(outbox, OpenLineageSink(outbox, client), float("inf"))
    seconds = time.perf_counter() - started
    outbox.close()
    assert not result.failing, result.waiting_on
    return result.sent, seconds


def before_to_openlineage(outbox_path: Path, client) -> tuple[int, float]:
    """Delivery as it was: a new connection per call, an fsync'ed commit per event, the client's retries."""
    from bridge.sinks.openlineage import run_event_from_json

    def connection():
        return sqlite3.connect(outbox_path, timeout=30, isolation_level=None)

    started = time.perf_counter()
    with connection() as reading:
        rows = reading.execute("SELECT seq, payload FROM events ORDER BY seq").fetchall()
    for seq, payload in rows:
        client.emit(run_event_from_json(payload))
        marking = connection()
        marking.execute("UPDATE events SET delivered_at = datetime('now') WHERE seq = ?", (seq,))
        marking.close()
    return len(rows), time.perf_counter() - started


def ours_to_lite(outbox_path: Path, lite_path: Path, naming) -> tuple[int, int, float]:
    from bridge.outbox.queue import Outbox
    from bridge.sinks.datahub import LiteSink
    from bridge.sinks.drain import drain

    outbox = Outbox(outbox_path)
    sink = LiteSink(lite_path, outbox, naming)
    started = time.perf_counter()
    result = drain(outbox, sink, float("inf"))
    sink.close()
    seconds = time.perf_counter() - started
    outbox.close()
    assert not result.failing, result.waiting_on
    return result.sent, sink.aspects, seconds


def before_to_lite(outbox_path: Path, lite_path: Path, naming) -> tuple[int, int, float]:
    """Lite as it was written: the SDK's write per aspect, each its own commit."""
    from bridge.sinks.lite import open_lite
    from bridge.translate.datahub import metadata_for

    with sqlite3.connect(outbox_path) as reading:
        payloads = [row[0] for row in reading.execute("SELECT payload FROM events ORDER BY seq")]
    lite = open_lite(lite_path)
    aspects = 0
    started = time.perf_counter()
    for payload in payloads:
        for mcp in metadata_for(json.loads(payload), naming):
            lite.write(mcp)
            aspects += 1
    seconds = time.perf_counter() - started
    lite.close()
    return len(payloads), aspects, seconds


def throughput(events: list[dict], copies: int, url: str) -> None:
    from openlineage.client import OpenLineageClient
    from openlineage.client.transport.file import FileConfig, FileTransport
    from openlineage.client.transport.http import HttpConfig, HttpTransport

    from forecast_assets.lineage import naming
    from taxi_core.settings import load_settings

    project_naming = naming(load_settings())
    print(f"{len(events)} events per copy of the demo, {copies} copies\n")
    print(f"{'sink':<34}{'events':>8}{'before':>12}{'now':>12}{'speed-up':>10}")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for name, make_client in (
            (
                "file transport",
                lambda path: OpenLineageClient(
                    transport=FileTransport(FileConfig(log_file_path=str(path), append=True))
                ),
            ),
            ("HTTP, loopback receiver", lambda path: OpenLineageClient(transport=HttpTransport(HttpConfig(url=url)))),
        ):
            before_box = fill(folder / f"{name}-before", events, copies)
            count, before = before_to_openlineage(before_box, make_client(folder / f"{name}-before.jsonl"))
            now_box = fill(folder / f"{name}-now", events, copies)
            sent, now = ours_to_openlineage(now_box, make_client(folder / f"{name}-now.jsonl"))
            assert sent == count
            print(f"{name:<34}{count:>8}{_rate(count, before):>12}{_rate(count, now):>12}{before / now:>9.1f}x")
        before_box = fill(folder / "lite-before", events, copies)
        count, aspects, before = before_to_lite(before_box, folder / "before.sqlite", project_naming)
        now_box = fill(folder / "lite-now", events, copies)
        sent, written, now = ours_to_lite(now_box, folder / "now.sqlite", project_naming)
        assert (sent, written) == (count, aspects)
        speed_up = before / now
        print(
            f"{'DataHub Lite (events)':<34}{count:>8}{_rate(count, before):>12}{_rate(count, now):>12}{speed_up:>9.1f}x"
        )
        print(f"{'DataHub Lite (aspects)':<34}{aspects:>8}{_rate(aspects, before):>12}{_rate(aspects, now):>12}")


SENSOR_SCRIPT = """
import json, sys, time
from dagster import DagsterInstance, build_sensor_context
from dagster_openlineage import openlineage_sensor

sensor = openlineage_sensor(record_filter_limit=1000)
emitted = 0
import openlineage.client.client as client_module
emit = client_module.OpenLineageClient.emit
def counting(self, event):
    global emitted
    emitted += 1
    return emit(self, event)
client_module.OpenLineageClient.emit = counting
with DagsterInstance.from_config(sys.argv[1]) as instance:
    cursor, ticks, started = None, 0, time.perf_counter()
    while True:
        context = build_sensor_context(instance=instance, cursor=cursor)
        sensor.evaluate_tick(context)
        ticks += 1
        if context.cursor == cursor:
            break
        cursor = context.cursor
    print(json.dumps({"events": emitted, "seconds": time.perf_counter() - started, "ticks": ticks}))
"""


def sensor_venv(state: Path) -> Path:
    """A virtual environment with dagster-openlineage 0.2.1 and this project's Dagster and OpenLineage client."""
    from importlib.metadata import version

    venv = state / "benchmarks" / "dagster-openlineage-0.2.1"
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"Installing dagster-openlineage 0.2.1 into {venv} (once)")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [
                str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                "dagster-openlineage==0.2.1", f"dagster=={version('dagster')}",
                f"openlineage-python=={version('openlineage-python')}",
            ],
            check=True,
        )  # fmt: skip
    return python


CONSOLIDATED = """
event_log_storage:
  module: dagster._core.storage.event_log
  class: ConsolidatedSqliteEventLogStorage
  config:
    base_dir: {home}/history
telemetry:
  enabled: false
"""


def shop_event_log(home: Path, runs: int):
    """A Dagster instance in ``home`` whose event log holds ``runs`` materializations of the reuse example's
    two assets. dagster-openlineage 0.2.1 cannot read Dagster's default run-sharded SQLite event log
    ("Called get_event_records on a run-sharded event log storage with a cursor that is not run-aware"),
    so the log is the consolidated SQLite one, which both can read."""
    from dagster import AssetKey, DagsterInstance, materialize

    from tests.reuse_project.shop import definitions

    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(CONSOLIDATED.format(home=home))
    defs = definitions(home)
    tables = [AssetKey(["shop", "orders"]), AssetKey(["shop", "daily_totals"])]
    with DagsterInstance.from_config(str(home)) as instance:
        for _ in range(runs):
            assert materialize(defs.resolve_asset_graph().assets_defs, instance=instance, selection=tables).success
    return defs


def against_dagster_openlineage(url: str, state: Path, runs: int) -> None:
    """Both sensors' work on one Dagster event log, delivered to the same receiver."""
    from dagster import DagsterInstance
    from openlineage.client import OpenLineageClient
    from openlineage.client.transport.http import HttpConfig, HttpTransport

    from bridge.config import DataHubTarget
    from bridge.run.lineage_pass import run_pass
    from tests.reuse_project.shop import shop_bridge

    python = sensor_venv(state)
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "home"
        print(f"\nMaterializing the reuse example's two assets {runs} times into one Dagster event log ...")
        defs = shop_event_log(home, runs)
        theirs = subprocess.run(
            [str(python), "-c", SENSOR_SCRIPT, str(home)],
            env={**os.environ, "OPENLINEAGE_URL": url, "DAGSTER_HOME": str(home)},
            capture_output=True,
            text=True,
        )
        if theirs.returncode != 0:
            print(f"dagster-openlineage 0.2.1 failed:\n{theirs.stderr[-2000:]}")
            return
        their = json.loads(theirs.stdout.splitlines()[-1])
        bridge = replace(
            shop_bridge(home), lineage_dir=Path(scratch) / "lineage", flows=(), datahub=DataHubTarget("off")
        )
        with DagsterInstance.from_config(str(home)) as instance:
            client = OpenLineageClient(transport=HttpTransport(HttpConfig(url=url)))
            started = time.perf_counter()
            result = run_pass(bridge, instance, defs.resolve_asset_graph(), client)
            seconds = time.perf_counter() - started
    assert not result.sink("openlineage").failing, result.sink("openlineage").waiting_on
    ours = result.sink("openlineage").sent / seconds
    theirs_rate = their["events"] / their["seconds"]
    print(f"The same Dagster event log ({runs} runs of 2 steps), to the same loopback receiver:")
    print(f"  dagster-openlineage 0.2.1 sensor: {their['events']} events in {their['seconds']:.2f} s "
          f"({their['ticks']} ticks of up to 1000 records) = {theirs_rate:,.0f} events/s")  # fmt: skip
    print(f"  this bridge, one pass from an empty outbox (read, translate, queue, deliver): "
          f"{result.sink('openlineage').sent} events in {seconds:.2f} s = {ours:,.0f} events/s")  # fmt: skip
    print(f"  ratio: {ours / theirs_rate:.1f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=30)
    parser.add_argument("--outbox", type=Path, default=ROOT / ".state" / "lineage" / "outbox.sqlite")
    parser.add_argument("--runs", type=int, default=50, help="Dagster runs in the event log both sensors read")
    parser.add_argument("--skip-sensor", action="store_true", help="leave out the dagster-openlineage comparison")
    args = parser.parse_args()
    ports = multiprocessing.Queue()
    receiver = multiprocessing.Process(target=receive, args=(ports,), daemon=True)
    receiver.start()
    url = f"http://127.0.0.1:{ports.get(timeout=30)}"
    try:
        throughput(demo_events(args.outbox), args.copies, url)
        if not args.skip_sensor:
            against_dagster_openlineage(url, ROOT / ".state", args.runs)
    finally:
        receiver.terminate()
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
