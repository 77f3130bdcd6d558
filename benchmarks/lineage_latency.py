"""End of a step to the lineage graph, and what an idle pass costs as history grows.

    ./run python benchmarks/lineage_latency.py [--rounds 10] [--interval 0.5]

On a small project of its own (two Dagster assets and a two-step Metaflow flow, the bridge's reuse
example), with the watcher running (``watch --interval``) as the sensor starts it under ``dagster dev``:
each round materializes both assets (in-process, into a real Dagster instance) and runs the flow (a
real Metaflow run), then records, for every step, how long after the step ended (Dagster's
STEP_SUCCESS, Metaflow's task finish) its COMPLETE event reached a loopback OpenLineage receiver (in
its own process) and DataHub Lite. Baseline from the same run: the sensor alone, ticking every 30 s
(Dagster's daemon evaluates sensors at most every 5 s), would deliver a step on average half an
interval plus a pass later. Then an idle pass in-process with one round of history and with ``rounds``
rounds, and with the demo's own state folder when there is one.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from harness import timed

ROOT = Path(__file__).resolve().parents[1]
FLOW_FILE = ROOT / "tests" / "reuse_project" / "score_flow.py"
SHOP_STEPS = ("shop.shop__orders", "shop.shop__daily_totals")
FLOW_STEPS = ("ScoreFlow.start", "ScoreFlow.end")

WATCHER = """
import sys
from dataclasses import replace
from pathlib import Path
from bridge.cli import main as cli
from tests.reuse_project.shop import shop_bridge
root = Path(sys.argv[1])
bridge = replace(shop_bridge(root), workspace_file=root / "workspace.yaml")
sys.exit(cli.main(["watch", "--interval", sys.argv[2]], bridge))
"""


def receive(arrivals: str, port_queue) -> None:
    """A loopback OpenLineage receiver in its own process; appends (time, job, event type) per event."""
    log = open(arrivals, "a", buffering=1)  # noqa: SIM115 -- open for the life of the process

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):  # noqa: N802
            event = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            log.write(json.dumps([time.time(), event["job"]["name"], event["eventType"]]) + "\n")
            self.send_response(201)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format, *args):  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port_queue.put(server.server_address[1])
    server.serve_forever()


def _until(condition, timeout: float = 60.0, every: float = 0.005):
    """Poll ``condition`` until it returns something truthy; the value, or None after ``timeout`` s."""
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        if value := condition():
            return value
        time.sleep(every)
    return None


def _arrived(arrivals: Path, job: str, after_line: int) -> float | None:
    lines = arrivals.read_text().splitlines()[after_line:] if arrivals.exists() else []
    for line in lines:
        moment, name, kind = json.loads(line)
        if name == job and kind == "COMPLETE":
            return moment
    return None


def _in_lite(root: Path, job: str, after_seq: int) -> float | None:
    """When Lite holds the first COMPLETE event of ``job`` queued after ``after_seq``: now, if it does."""
    from bridge.sinks.datahub import lite_position

    with sqlite3.connect(root / "lineage" / "outbox.sqlite") as outbox:
        row = outbox.execute(
            "SELECT min(seq) FROM events WHERE seq > ? AND json_extract(payload, '$.job.name') = ? "
            "AND json_extract(payload, '$.eventType') = 'COMPLETE'",
            (after_seq, job),
        ).fetchone()
        outbox_id = outbox.execute("SELECT value FROM meta WHERE key = 'id'").fetchone()[0]
    if row[0] is None:
        return None
    return time.time() if lite_position(root / "lite.sqlite", outbox_id) >= row[0] else None


def _last_seq(root: Path) -> int:
    path = root / "lineage" / "outbox.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as outbox:
        return outbox.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0]


def one_round(root: Path, instance, defs, arrivals: Path, env: dict) -> list[tuple[str, float, float]]:
    """Materialize both assets, run the flow; (step, seconds to the receiver, seconds to Lite) for each step."""
    from dagster import AssetKey, DagsterEventType, materialize
    from metaflow import Runner

    latencies = []
    line, seq = len(arrivals.read_text().splitlines()) if arrivals.exists() else 0, _last_seq(root)
    tables = [AssetKey(["shop", "orders"]), AssetKey(["shop", "daily_totals"])]
    result = materialize(defs.resolve_asset_graph().assets_defs, instance=instance, selection=tables)
    ends = {
        f"shop.{record.event_log_entry.step_key}": record.event_log_entry.timestamp
        for record in instance.get_records_for_run(result.run_id, of_type=DagsterEventType.STEP_SUCCESS).records
    }
    for step in SHOP_STEPS:
        received = _until(lambda step=step: _arrived(arrivals, step, line))
        in_lite = _until(lambda step=step: _in_lite(root, step, seq))
        latencies.append((step, received - ends[step], in_lite - ends[step]))
    line, seq = len(arrivals.read_text().splitlines()), _last_seq(root)
    totals = instance.get_latest_materialization_event(AssetKey(["shop", "daily_totals"]))
    flow_env = env | {
        "SHOP_ROOT": str(root),
        "SHOP_TOTALS_VERSION": totals.asset_materialization.tags["dagster/data_version"],
    }
    with Runner(str(FLOW_FILE), env=flow_env, cwd=str(root), show_output=False) as runner:
        run = runner.run().run
    for step in FLOW_STEPS:
        task = run[step.split(".")[1]].task
        ended = task.finished_at.timestamp()
        received = _until(lambda step=step: _arrived(arrivals, step, line))
        in_lite = _until(lambda step=step: _in_lite(root, step, seq))
        latencies.append((step, received - ended, in_lite - ended))
    return latencies


def idle_pass_ms(root: Path, instance, repeat: int = 20) -> float:
    """The median in-process pass with nothing new, over the project's lineage folder."""
    from bridge.run.lineage_pass import run_pass
    from bridge.sinks.openlineage_client import make_client
    from tests.reuse_project.shop import definitions, shop_bridge

    bridge = replace(shop_bridge(root), workspace_file=root / "workspace.yaml")
    graph = definitions(root).resolve_asset_graph()
    client = make_client(bridge.events_file)
    run_pass(bridge, instance, graph, client, wait=30)  # anything left by the watcher
    timings = []
    for _ in range(repeat):
        took, result = timed(lambda: run_pass(bridge, instance, graph, client, wait=30))
        timings.append(took)
        assert not sum(result.queued.values()), result.queued
    return statistics.median(timings) * 1000


def demo_idle_pass_ms(environment: dict, repeat: int = 20) -> float | None:
    """The median idle pass over the demo's own state folder (its Dagster instance, flows and outbox)."""
    script = ROOT / "benchmarks" / "idle_pass.py"
    done = subprocess.run(
        [sys.executable, str(script), str(repeat)], capture_output=True, text=True, cwd=ROOT, env=environment
    )
    return float(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--interval", type=float, default=0.5)
    args = parser.parse_args()
    os.environ.setdefault("USER", "benchmark")  # Metaflow names runs by user; a bare shell may have none
    as_started = dict(os.environ)
    from dagster import DagsterInstance

    from tests.reuse_project.shop import definitions

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "home").mkdir()
        (root / "shop_location.py").write_text(
            "from pathlib import Path\n\nfrom tests.reuse_project.shop import definitions\n\n"
            "defs = definitions(Path(__file__).parent)\n"
        )
        (root / "workspace.yaml").write_text(
            "load_from:\n  - python_file:\n      relative_path: shop_location.py\n      location_name: shop\n"
        )
        env = os.environ | {
            "DAGSTER_HOME": str(root / "home"),
            "METAFLOW_DATASTORE_SYSROOT_LOCAL": str(root),
            "PYTHONPATH": str(ROOT),
        }
        os.environ.update(env)
        ports = multiprocessing.Queue()
        arrivals = root / "arrivals.jsonl"
        receiver = multiprocessing.Process(target=receive, args=(str(arrivals), ports), daemon=True)
        receiver.start()
        url = f"http://127.0.0.1:{ports.get(timeout=30)}"

        def start_watcher() -> subprocess.Popen:
            return subprocess.Popen(
                [sys.executable, "-c", WATCHER, str(root), str(args.interval)],
                env=env | {"OPENLINEAGE_URL": url},
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )

        watcher = start_watcher()
        os.environ["OPENLINEAGE_URL"] = url
        latencies, idle = [], {}
        try:
            defs = definitions(root)
            with DagsterInstance.get() as instance:
                for number in range(1, args.rounds + 1):
                    latencies += one_round(root, instance, defs, arrivals, env)
                    print(
                        f"round {number}/{args.rounds}: "
                        + ", ".join(f"{s} {r:.2f}/{lite:.2f} s" for s, r, lite in latencies[-4:])
                    )
                    if number in (1, args.rounds):
                        watcher.terminate()
                        watcher.wait()
                        idle[number] = idle_pass_ms(root, instance)
                        watcher = start_watcher()
        finally:
            watcher.terminate()
            receiver.terminate()
        with sqlite3.connect(root / "lineage" / "outbox.sqlite") as outbox:
            queued, numbered = outbox.execute("SELECT count(*), coalesce(max(seq), 0) FROM events").fetchone()
    print(f"\nThe watcher re-read each run while it ran: the outbox holds {queued} events numbered up to {numbered} "
          f"(the floor: one number per event, {queued})")  # fmt: skip
    print(f"\nEnd of a step to the lineage graph, watcher every {args.interval} s, {len(latencies)} steps "
          f"({args.rounds} rounds of 2 Dagster steps and 2 Metaflow tasks):")  # fmt: skip
    for label, column in (("OpenLineage receiver", 1), ("DataHub Lite", 2)):
        values = [row[column] for row in latencies]
        print(f"  {label:<22} median {statistics.median(values):.2f} s, max {max(values):.2f} s")
    for label, steps in (("Dagster steps", SHOP_STEPS), ("Metaflow tasks", FLOW_STEPS)):
        values = [row[2] for row in latencies if row[0] in steps]
        print(f"  {label:<22} to Lite: median {statistics.median(values):.2f} s, max {max(values):.2f} s")
    print("  baseline, the sensor alone every 30 s: about 15 s on average, up to 30 s, plus the pass")
    print("\nAn idle pass (nothing new), in-process, median of 20:")
    for rounds, ms in idle.items():
        print(f"  this project after {rounds:>2} rounds of history: {ms:.1f} ms")
    demo = demo_idle_pass_ms(as_started)
    if demo is not None:
        print(f"  the demo's state folder:                  {demo:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
