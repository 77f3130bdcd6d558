"""Lineage delivery throughput: the outbox to a file, to a loopback HTTP receiver and into DataHub Lite,
against the way it was done before (one SQLite commit per event, the client's own retries, one Lite
commit per aspect), from the same run; then end to end against dagster-openlineage 0.2.1's sensor on
the same Dagster event log: from an empty outbox, passes until every event is delivered, to a file, to
HTTP and into DataHub Lite, interleaved with the anchor's sensor to a file and to HTTP, medians of
``--repeat`` rounds; last, both on Dagster's default run-sharded SQLite storage.

The anchor's settings: ``openlineage_sensor()`` with its defaults (run and step events only,
``include_asset_events=False``) but for ``record_filter_limit``, the records one tick reads: it runs at
``--anchor-limit`` (1000) and at its own default (30 in 0.2.1), both printed with the events each emitted.
Its ticks run back to back until the cursor stops moving (a daemon waits ``minimum_interval_seconds``,
30 s, between them), so its figure is its best case.

    ./run python benchmarks/lineage_delivery.py [--copies 30] [--log shop|demo] [--runs 600] [--repeat 3]
                                                [--home DIR] [--skip-throughput] [--skip-sensor]

``--log`` is the event log both read: ``shop`` (the default) materializes the reuse example's two assets
``--runs`` times; ``demo`` copies the state folder's demo runs (``./run demo``) into ``--runs`` runs (300),
the log dagster-openlineage was first measured on. ``--home`` keeps the Dagster instance there (built
once, read again next time). Last, the records the bridge reads are deserialized alone, as Dagster does:
the time no reader of them can go under.

The events are a demo's (the state folder's outbox, or the golden events), copied as later runs.
The HTTP receiver runs in its own process. dagster-openlineage is installed into its own virtual
environment under the state folder (once), with the same Dagster and OpenLineage client as here.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lineage_history import demo_event_log, demo_events, fill

if TYPE_CHECKING:
    from bridge.config import LineageBridge

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


def _context(outbox, naming, key: str):
    """A sink's context over ``outbox``: a bridge with ``naming`` whose lineage folder is the outbox's."""
    from bridge.config import LineageBridge
    from bridge.sinks.contract import SinkContext

    return SinkContext(LineageBridge(naming=naming, lineage_dir=outbox.path.parent), outbox, key)


def ours_to_openlineage(outbox_path: Path, client) -> tuple[int, float]:
    from bridge.outbox.outbox import Outbox
    from bridge.sinks.drain import drain
    from bridge.sinks.openlineage import OpenLineageConfig, OpenLineageSink
    from bridge.translate.naming import Naming

    outbox = Outbox(outbox_path)
    started = time.perf_counter()
    sink = OpenLineageSink(OpenLineageConfig(client=client), _context(outbox, Naming(), "openlineage"))
    result = drain(outbox, sink, float("inf"))
    sink.close()
    seconds = time.perf_counter() - started
    outbox.close()
    assert not result.failing, result.waiting_on
    return result.sent, seconds


def before_to_openlineage(outbox_path: Path, client) -> tuple[int, float]:
    """Delivery as it was: a new connection per call, an fsync'ed commit per event, the client's retries."""
    from bridge.sinks.openlineage_client import run_event_from_json

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
    from bridge.outbox.outbox import Outbox
    from bridge.sinks.datahub import FileConfig, LiteSink
    from bridge.sinks.drain import drain

    outbox = Outbox(outbox_path)
    sink = LiteSink(FileConfig(path=lite_path), _context(outbox, naming, "datahub"))
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
import inspect, json, sys, time
from dagster import DagsterInstance, build_sensor_context
from dagster_openlineage import openlineage_sensor

default = inspect.signature(openlineage_sensor).parameters["record_filter_limit"].default
limit = default if sys.argv[2] == "default" else int(sys.argv[2])
sensor = openlineage_sensor(record_filter_limit=limit)
emitted = 0
import openlineage.client.client as client_module
emit = client_module.OpenLineageClient.emit
def counting(self, event):
    global emitted
    emitted += 1
    return emit(self, event)
client_module.OpenLineageClient.emit = counting
with DagsterInstance.from_config(sys.argv[1]) as instance:
    instance.event_log_storage, instance.run_storage  # loaded, as in a running sensor
    cursor, ticks, started = None, 0, time.perf_counter()
    while True:
        context = build_sensor_context(instance=instance, cursor=cursor)
        sensor.evaluate_tick(context)
        ticks += 1
        if context.cursor == cursor:
            break
        cursor = context.cursor
    print(json.dumps({"events": emitted, "seconds": time.perf_counter() - started, "ticks": ticks, "limit": limit,
                      "default": default}))
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


# The runs that build an event log print their debug log to the console unless told otherwise.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


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
            assert materialize(
                defs.resolve_asset_graph().assets_defs, instance=instance, selection=tables, run_config=QUIET
            ).success
    return defs


SHARDED = """
telemetry:
  enabled: false
"""


def _anchor(python: Path, home: Path, env: dict[str, str], limit: int | None = None) -> dict:
    """dagster-openlineage 0.2.1's sensor, ticked until its cursor stops moving, in its own process; reading
    ``limit`` records a tick (None: its default)."""
    done = subprocess.run(
        [str(python), "-c", SENSOR_SCRIPT, str(home), "default" if limit is None else str(limit)],
        env={**os.environ, "DAGSTER_HOME": str(home), **env},
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        lines = done.stderr.splitlines()
        raised = [n for n, line in enumerate(lines) if re.match(r"^[\w.]*(Error|Exception):", line)]
        said = " ".join(" ".join(lines[raised[-1] :]).split()) if raised else f"exit {done.returncode}"
        return {"error": said}
    return json.loads(done.stdout.splitlines()[-1])


def _ours(home: Path, base: LineageBridge, graph, folder: Path, sink: str, url: str) -> tuple[int, float]:
    """This bridge from an empty outbox until everything is delivered: passes in a row, as the watcher runs them."""
    from dagster import DagsterInstance
    from openlineage.client import OpenLineageClient
    from openlineage.client.transport.file import FileConfig, FileTransport
    from openlineage.client.transport.http import HttpConfig, HttpTransport

    from bridge.config import SinkSpec
    from bridge.run.lineage_pass import run_pass

    folder.mkdir(parents=True)
    if sink == "lite":
        sinks, client = (SinkSpec("datahub-lite", {"path": folder / "lite.sqlite"}, "datahub"),), None
    else:
        sinks = (SinkSpec("openlineage"),)
        transport = (
            FileTransport(FileConfig(log_file_path=str(folder / "events.jsonl"), append=True))
            if sink == "file"
            else HttpTransport(HttpConfig(url=url))
        )
        client = OpenLineageClient(transport=transport)
    bridge = replace(base, lineage_dir=folder / "lineage", flows=(), sinks=sinks)
    delivered = 0
    with DagsterInstance.from_config(str(home)) as instance:
        _ = instance.event_log_storage, instance.run_storage  # loaded, as in a running sensor or watcher
        started = time.perf_counter()
        while True:
            result = run_pass(bridge, instance, graph, client)
            (done,) = result.sinks.values()
            assert not done.failing, done.waiting_on
            delivered += done.sent
            if not sum(result.queued.values()) and not done.pending:
                break
        seconds = time.perf_counter() - started
    return delivered, seconds


def event_log_for(log: str, home: Path, runs: int) -> tuple[LineageBridge, Any, str]:
    """The bridge and asset graph that read ``log`` ("shop": the reuse example's two assets; "demo": the
    project's, from the state folder's demo runs), its Dagster instance built in ``home`` unless there, and
    what its runs are."""

    if log == "shop":
        from tests.reuse_project.shop import definitions, shop_bridge

        if home.exists():
            defs = definitions(home)
        else:
            print(f"\nMaterializing the reuse example's two assets {runs} times into one Dagster event log ...")
            defs = shop_event_log(home, runs)
        return shop_bridge(home), defs.resolve_asset_graph(), "runs of the reuse example's 2 assets"
    from forecast_assets.definitions import defs as project_definitions
    from forecast_assets.lineage import taxi_bridge
    from taxi_core.settings import load_settings

    settings = load_settings()
    if not home.exists():
        print(f"\nCopying the demo's Dagster runs in {settings.dagster_home} into {runs} runs of one event log ...")
        demo_event_log(settings.dagster_home, home, runs, CONSOLIDATED)
    return taxi_bridge(settings), project_definitions().resolve_asset_graph(), "copies of the demo's runs"


def deserializer_seconds(home: Path, repeats: int = 3) -> tuple[int, int, float]:
    """The records a pass reads from the consolidated event log in ``home``, their bytes, and the fastest of
    ``repeats`` times Dagster's own deserializer takes to turn them into records (as the bridge does)."""
    from bridge.run.collections_paused import fewer_collections
    from bridge.sources.dagster import READ_TYPES
    from bridge.sources.dagster_log import deserialized_records

    kinds = [kind.value for kind in READ_TYPES]
    with sqlite3.connect(home / "history" / "event_log.db") as log:
        query = f"SELECT id, event FROM event_logs WHERE dagster_event_type IN ({','.join('?' * len(kinds))})"
        rows = log.execute(query, kinds).fetchall()
    times = []
    with fewer_collections():
        for _ in range(repeats):
            started = time.perf_counter()
            deserialized_records(rows)
            times.append(time.perf_counter() - started)
    return len(rows), sum(len(event) for _, event in rows), min(times)


def _expected_events(home: Path) -> int:
    """The run and step events in a consolidated event log: what a sensor of runs and steps should emit."""
    kinds = ("PIPELINE_START", "PIPELINE_SUCCESS", "PIPELINE_FAILURE", "PIPELINE_CANCELED", "STEP_START",
             "STEP_SUCCESS", "STEP_FAILURE")  # fmt: skip
    with sqlite3.connect(home / "history" / "event_log.db") as log:
        marks = ",".join("?" * len(kinds))
        query = f"SELECT count(*) FROM event_logs WHERE dagster_event_type IN ({marks})"
        return log.execute(query, kinds).fetchone()[0]


def against_dagster_openlineage(
    url: str, state: Path, runs: int, repeats: int, kept: Path | None = None, log: str = "shop", limit: int = 1000
) -> None:
    """End to end on one Dagster event log: this bridge to a file, HTTP and DataHub Lite, and the anchor's sensor
    to a file and HTTP, interleaved, medians of ``repeats``; then both on Dagster's default run-sharded storage."""
    import statistics

    from dagster import DagsterInstance

    python = sensor_venv(state)
    with tempfile.TemporaryDirectory() as scratch:
        home = kept or Path(scratch) / "home"
        if home.exists():
            runs = len(DagsterInstance.from_config(str(home)).get_run_ids())
            print(f"\nThe Dagster event log in {home}: {runs} runs")
        bridge, graph, described = event_log_for(log, home, runs)
        expected = _expected_events(home)
        anchor_env = {
            "file": {"OPENLINEAGE__TRANSPORT__TYPE": "file", "OPENLINEAGE__TRANSPORT__APPEND": "true"},
            "http": {"OPENLINEAGE_URL": url},
        }
        rates: dict[str, list[float]] = {}
        counts: dict[str, set[int]] = {}
        limits: dict[str, int] = {}
        for round_ in range(repeats):
            for sink in ("file", "http", "lite"):
                folder = Path(scratch) / f"{sink}-{round_}"
                for at, anchor_limit in (("", limit), (" @default", None)) if sink in anchor_env else ():
                    env = dict(anchor_env[sink])
                    if sink == "file":
                        log_file = Path(scratch) / f"anchor{at.strip()}-{round_}.jsonl"
                        env["OPENLINEAGE__TRANSPORT__LOG_FILE_PATH"] = str(log_file)
                    their = _anchor(python, home, env, anchor_limit)
                    if "error" in their:
                        print(f"dagster-openlineage 0.2.1 failed: {their['error']}")
                        return
                    limits[at] = their["limit"]
                    rates.setdefault(f"anchor {sink}{at}", []).append(their["events"] / their["seconds"])
                    counts.setdefault(f"anchor {sink}{at}", set()).add(their["events"])
                sent, seconds = _ours(home, bridge, graph, folder, sink, url)
                rates.setdefault(f"ours {sink}", []).append(sent / seconds)
                counts.setdefault(f"ours {sink}", set()).add(sent)
            print(f"  round {round_ + 1}/{repeats}: " + ", ".join(f"{k} {v[-1]:,.0f}/s" for k, v in rates.items()))
        median = {key: statistics.median(values) for key, values in rates.items()}
        events = "/".join(str(n) for n in sorted(counts["ours file"]))
        print(f"\nEnd to end from an empty outbox, {runs} Dagster {described} ({events} events; the anchor "
              f"{'/'.join(str(n) for n in sorted(counts['anchor file']))} at its raised limit, "
              f"{'/'.join(str(n) for n in sorted(counts['anchor file @default']))} at its default, of the "
              f"{expected} run and step events it should emit), median of {repeats}:")  # fmt: skip
        raised, default = limits[""], limits[" @default"]
        print(f"  {'sink':<42}{'this bridge':>14}{'anchor, limit ' + str(raised):>22}{'ratio':>8}"
              f"{'anchor, its default ' + str(default):>28}{'ratio':>8}")  # fmt: skip
        for sink, label, anchor in (
            ("file", "file transport", "file"),
            ("http", "HTTP, loopback receiver", "http"),
            ("lite", "DataHub Lite (anchor: its HTTP figure)", "http"),
        ):
            ours, theirs, at_default = (
                median[f"ours {sink}"],
                median[f"anchor {anchor}"],
                median[f"anchor {anchor} @default"],
            )
            print(f"  {label:<42}{ours:>12,.0f}/s{theirs:>20,.0f}/s{ours / theirs:>7.1f}x"
                  f"{at_default:>26,.0f}/s{ours / at_default:>7.1f}x")  # fmt: skip
        print("  (the anchor's events name no inputs, outputs, versions or checks; ours carry them)")
        print(f"  the anchor's settings: openlineage_sensor()'s defaults but record_filter_limit ({raised}, and its")
        print(f"  default {default}); include_asset_events off; its ticks back to back, not every 30 s as a daemon's")
        for at, name in (("", f"at limit {raised}"), (" @default", f"at its default limit {default}")):
            emitted = min(counts[f"anchor file{at}"] | counts[f"anchor http{at}"])
            lost = expected - emitted
            print(f"  the anchor {name} emitted {emitted} of {expected} run and step events"
                  + (f": {lost} lost ({lost / expected:.0%})" if lost else ": none lost on this log"))  # fmt: skip
        # What bounds the ratio: the records themselves, read as Dagster reads them (the bridge's choice, so that
        # every reader of every storage hands the translators the same records).
        records, size, floor = deserializer_seconds(home)
        delivered = min(counts["ours file"])
        budget = delivered / (10 * median["anchor file"])
        print(f"  Dagster's own deserializer on the {records:,} records the bridge reads ({size / 2**20:.0f} MiB): "
              f"{floor:.2f} s; at 10x the anchor's file rate the whole pass would have {budget:.2f} s "
              f"for its {delivered} events")  # fmt: skip
        sharded(python, Path(scratch) / "sharded", url)


def sharded(python: Path, home: Path, url: str, runs: int = 5) -> None:
    """Dagster's default storage (an event log sharded by run): the anchor's sensor, then this bridge."""
    from dagster import AssetKey, DagsterInstance, materialize

    from tests.reuse_project.shop import definitions, shop_bridge

    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(SHARDED)
    defs = definitions(home)
    tables = [AssetKey(["shop", "orders"]), AssetKey(["shop", "daily_totals"])]
    with DagsterInstance.from_config(str(home)) as instance:
        for _ in range(runs):
            assert materialize(
                defs.resolve_asset_graph().assets_defs, instance=instance, selection=tables, run_config=QUIET
            ).success
    their = _anchor(python, home, {"OPENLINEAGE_URL": url}, 1000)
    sent, _ = _ours(home, shop_bridge(home), defs.resolve_asset_graph(), home / "ours", "http", url)
    print(f"\nDagster's default run-sharded SQLite event log, {runs} runs ({runs * 6} run and step events):")
    said = their.get("error") or f"{their['events']} events"
    print(f"  dagster-openlineage 0.2.1 (record_filter_limit 1000): {said}")
    print(f"  this bridge: {sent} events")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=30)
    parser.add_argument("--outbox", type=Path, default=ROOT / ".state" / "lineage" / "outbox.sqlite")
    parser.add_argument(
        "--log",
        choices=("shop", "demo"),
        default="shop",
        help="the event log both sensors read: runs of the reuse example's two assets, or copies of "
        "the demo's runs (run `./run demo` first)",
    )
    parser.add_argument("--runs", type=int, help="Dagster runs in the event log both sensors read (600; demo: 300)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the end-to-end comparison (medians shown)")
    parser.add_argument("--skip-throughput", action="store_true", help="leave out outbox -> sink throughput")
    parser.add_argument("--home", type=Path, help="where to keep the Dagster instance of --runs runs, to read again")
    parser.add_argument("--skip-sensor", action="store_true", help="leave out the dagster-openlineage comparison")
    parser.add_argument(
        "--anchor-limit", type=int, default=1000, help="the anchor's record_filter_limit besides its default (1000)"
    )
    args = parser.parse_args()
    ports = multiprocessing.Queue()
    receiver = multiprocessing.Process(target=receive, args=(ports,), daemon=True)
    receiver.start()
    url = f"http://127.0.0.1:{ports.get(timeout=30)}"
    try:
        if not args.skip_throughput:
            throughput(demo_events(args.outbox), args.copies, url)
        if not args.skip_sensor:
            runs = args.runs or (600 if args.log == "shop" else 300)
            against_dagster_openlineage(url, ROOT / ".state", runs, args.repeat, args.home, args.log, args.anchor_limit)
    finally:
        receiver.terminate()
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
