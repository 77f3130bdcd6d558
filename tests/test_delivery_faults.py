"""Delivery under faults, against loopback receivers: concurrent passes, a hanging backend, a refused event,
a pass killed mid-delivery or mid-write, a deleted or damaged DataHub Lite, a damaged outbox."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bridge.cli import main as cli
from bridge.outbox.outbox import Outbox
from bridge.sinks.contract import SinkContext
from bridge.sinks.datahub import FileConfig, LiteSink
from bridge.sinks.drain import drain
from tests.delivery_rig import fill, http_client, one_pass, rig_bridge
from tests.lineage_bridges import with_datahub
from tests.loopback_lineage import LineageServer, identity

PROJECT_ROOT = Path(__file__).resolve().parents[1]
REFUSED = ("TrainForecastModelFlow.evaluate", "START")


def lite_rows(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as connection:
        return connection.execute(
            "SELECT urn, aspect_name, version, metadata, system_metadata, createdon FROM metadata_aspect_v2 "
            "ORDER BY urn, aspect_name, version"
        ).fetchall()


def clean_replay(folder: Path, into: Path) -> list[tuple]:
    """Every queued event written into a new Lite file in one go, from a copy of the outbox that has
    never written DataHub: every row, every version, exactly what a pass that never failed leaves."""
    copy = into.with_name("outbox-copy.sqlite")
    with sqlite3.connect(folder / "outbox.sqlite") as source, sqlite3.connect(copy) as target:
        source.backup(target)
    outbox = Outbox(copy)
    sink = LiteSink(FileConfig(path=into), SinkContext(rig_bridge(folder), outbox, "datahub"))
    try:
        assert not drain(outbox, sink, float("inf")).failing
    finally:
        sink.close()
        outbox.close()
    return lite_rows(into)


def finished(process: subprocess.Popen) -> dict:
    """What a pass started by :func:`start_pass` printed, once it has ended well."""
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0 and out.strip(), err[-3000:]
    return json.loads(out.splitlines()[-1])


def start_pass(folder: Path, url: str, *options: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.delivery_rig", str(folder), url, *options],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("passes", [2, 3])
def test_concurrent_passes_deliver_each_event_once_and_keep_lite_consistent(folder, tmp_path, passes):
    queued = fill(folder)
    with LineageServer(hold=0.01) as server:  # slow enough that the passes overlap
        running = [start_pass(folder, server.url, "--wait", "60") for _ in range(passes)]
        outputs = [finished(process) for process in running]
    assert sum(output.get("sent", 0) for output in outputs) == len(queued)
    assert len(server.received) == len(queued) and server.duplicates() == 0
    assert lite_rows(folder / "lite.sqlite") == clean_replay(folder, tmp_path / "clean.sqlite")


def test_a_second_pass_that_will_not_wait_says_another_is_running(folder):
    fill(folder, first=10)
    # Each event is held 4 s (under the client's 5 s timeout): the first pass runs for half a minute unless released,
    # so the second starts within it however busy the machine; then the holds end and the first pass finishes.
    with LineageServer(hold=4) as server:
        first = start_pass(folder, server.url)
        assert server.wait_for(1)
        second = one_pass_skipped(folder, server.url)
        server.release()
        first.communicate(timeout=180)
    assert "another lineage pass is running (test, process" in second


def one_pass_skipped(folder: Path, url: str) -> str:
    from bridge.outbox.lease import PassRunning

    with pytest.raises(PassRunning) as running:
        one_pass(rig_bridge(folder), http_client(url))
    return str(running.value)


def test_a_hanging_receiver_is_waited_on_once_then_left_alone_and_the_pass_starts_nothing_after(folder):
    from dataclasses import replace

    from bridge.config import SinkSpec

    fill(folder)
    bridge = replace(
        rig_bridge(folder, pass_seconds=3, lite=False), sinks=(SinkSpec("openlineage", {"answer_seconds": 2}),)
    )
    with LineageServer(hold=30) as server:
        started = time.monotonic()
        result = one_pass(bridge, http_client(server.url, timeout=1))
        seconds = time.monotonic() - started
        again = one_pass(bridge, http_client(server.url, timeout=1))  # within its backoff: the target is not tried
    assert seconds < 2 + 2, f"the pass took {seconds:.1f} s waiting 2 s on an answer"
    assert (
        result.sink("openlineage").sent == 0
        and "no answer from http http://127.0.0.1" in result.sink("openlineage").waiting_on
    )
    assert "within 2 s" in result.sink("openlineage").waiting_on
    assert list(server.attempts.values()) == [1]  # sent once: no retries inside the transport, none by the next pass
    assert again.sink("openlineage").waiting_on == result.sink("openlineage").waiting_on and again.health == 3
    outbox = Outbox(folder / "outbox.sqlite")
    assert (
        outbox.places.wait(result.sink("openlineage").sink).failures == 1
        and outbox.letters.failing(result.sink("openlineage").sink) == []
    )


def test_a_refused_event_is_parked_at_once_the_rest_goes_on_and_retry_delivers_it(folder, capsys):
    queued = fill(folder)
    bridge = rig_bridge(folder, lite=False)
    refused = next(e for e in queued if (e["job"]["name"], e["eventType"]) == REFUSED)
    with LineageServer(refuse=lambda event: identity(event) == identity(refused)) as server:
        result = one_pass(bridge, http_client(server.url))
    assert (
        result.sink("openlineage").parked == 1
        and result.sink("openlineage").pending == 0
        and result.sink("openlineage").waiting_on is None
    )
    assert result.health == 4  # dead letters wait for a person
    assert len(server.received) == len(queued) - 1 and server.duplicates() == 0
    assert len(server.refused) == 1  # one definite rejection is enough

    assert cli.main(["dead-letters"], bridge) == 0
    listed = capsys.readouterr().out
    assert "#1  openlineage http http://127.0.0.1" in listed and "START" in listed
    assert "TrainForecastModelFlow.evaluate" in listed and "1 attempt," in listed and "HTTP 400" in listed
    assert cli.main(["retry", "--all"], bridge) == 0
    with LineageServer(port=server.server.server_address[1]) as fixed:  # the same target, fixed
        again = one_pass(bridge, http_client(fixed.url))
    assert again.sink("openlineage").redelivered == 1 and [e["eventType"] for e in fixed.received] == ["START"]
    assert again.health == 0
    assert cli.main(["dead-letters"], bridge) == 0
    assert "No dead letters" in capsys.readouterr().out


def test_a_pass_killed_in_delivery_resends_at_most_the_event_in_flight(folder):
    queued = fill(folder)
    with LineageServer(hold=0.02) as server:
        killed = start_pass(folder, server.url)
        assert server.wait_for(10)
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        before = len(server.received)
        one_pass(rig_bridge(folder), http_client(server.url), wait=5)
    assert 10 <= before < len(queued)
    assert {identity(e) for e in server.received} == {identity(e) for e in queued}
    assert server.duplicates() <= 1


def test_a_pass_killed_while_writing_lite_leaves_it_as_a_clean_replay_after_the_next(folder, tmp_path):
    fill(folder)
    with LineageServer() as server:
        killed = start_pass(folder, server.url, "--slow-lite", "0.05")
        for line in killed.stdout:
            if line.startswith("writing 20"):
                break
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        result = one_pass(rig_bridge(folder), http_client(server.url), wait=5)
    assert result.sink("datahub").sent == len(fill_keys(folder))  # the killed batch was rolled back: all of it again
    assert lite_rows(folder / "lite.sqlite") == clean_replay(folder, tmp_path / "clean.sqlite")


def fill_keys(folder: Path) -> list[str]:
    outbox = Outbox(folder / "outbox.sqlite")
    try:
        return [event.key for event in outbox.queue.after(0, 100_000)]
    finally:
        outbox.close()


def test_a_deleted_lite_is_refilled_by_the_next_pass(folder, tmp_path):
    queued = fill(folder)
    bridge = rig_bridge(folder)
    with LineageServer() as server:
        first = one_pass(bridge, http_client(server.url))
        for suffix in ("", "-wal", "-shm"):
            (folder / f"lite.sqlite{suffix}").unlink(missing_ok=True)
        again = one_pass(bridge, http_client(server.url))
    assert first.sink("datahub").sent == again.sink("datahub").sent == len(queued)
    assert again.sink("openlineage").sent == 0  # the OpenLineage target had everything already
    assert lite_rows(folder / "lite.sqlite") == clean_replay(folder, tmp_path / "clean.sqlite")


def test_a_damaged_lite_is_named_with_its_repair_and_the_repair_refills_it(folder, tmp_path, capsys, monkeypatch):
    queued = fill(folder)
    bridge = rig_bridge(folder)
    (folder / "lite.sqlite").write_bytes(b"this is not a DataHub Lite file" * 100)
    with LineageServer() as server:
        result = one_pass(bridge, http_client(server.url))
        assert result.sink("openlineage").sent == len(queued)  # OpenLineage delivery goes on without DataHub
        assert len(result.problems) == 1
        assert "lite.sqlite is damaged" in result.problems[0]
        assert "run `taxi-lineage rebuild datahub`" in result.problems[0]
        monkeypatch.setattr("bridge.cli.main.lineage_pass", lambda b, wait: _pass_code(b, server.url))
        assert cli.main(["rebuild", "datahub"], bridge) == 0
    assert "aside as" in capsys.readouterr().out
    assert lite_rows(folder / "lite.sqlite") == clean_replay(folder, tmp_path / "clean.sqlite")


def _pass_code(bridge, url: str) -> int:
    return 1 if one_pass(bridge, http_client(url)).problems else 0


def test_a_damaged_outbox_gives_one_message_with_its_repair(folder, capsys):
    (folder / "outbox.sqlite").write_bytes(b"this is not an outbox" * 100)
    bridge = rig_bridge(folder)
    for command in (["dead-letters"], ["show", "nyc_taxi.raw_yellow"], ["retry", "--all"]):
        assert cli.main(command, bridge) == 2
        err = capsys.readouterr().err
        assert "outbox.sqlite is damaged" in err and "taxi-lineage rebuild outbox" in err and "Traceback" not in err


def test_a_sensor_tick_with_failures_fails_rather_than_skips(tmp_path, openlineage_env):
    from dataclasses import replace

    from dagster import DagsterInstance, build_sensor_context

    from bridge.run.sensor import LineageFailing, lineage_sensor
    from tests.loopback_lineage import free_port
    from tests.reuse_project.shop import definitions, shop_bridge

    bridge = with_datahub(replace(shop_bridge(tmp_path), flows=()), None)
    fill(bridge.lineage_dir)
    port = free_port()
    openlineage_env.setenv("OPENLINEAGE_URL", f"http://user:secret@127.0.0.1:{port}")
    sensor = lineage_sensor(bridge)
    with DagsterInstance.ephemeral() as instance:
        context = build_sensor_context(instance=instance, repository_def=definitions(tmp_path).get_repository_def())
        failing = "http http://127.0.0.1:[0-9]+/api/v1/lineage: sent 0, .* waiting .*failing: .*Connection refused"
        with pytest.raises(LineageFailing, match=failing) as tick:
            sensor(context)
    assert "secret" not in str(tick.value)
    from bridge.sinks.openlineage_client import make_client, target_of

    assert target_of(make_client(tmp_path / "unused.jsonl")) == f"http http://127.0.0.1:{port}/api/v1/lineage"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("https://user:pa55@gms:8080/x", "https://***@gms:8080/x"),
        ("kafka+ssl://token@broker", "kafka+ssl://***@broker"),
        ("failed at http://host/api (user@example.com)", "failed at http://host/api (user@example.com)"),
    ],
)
def test_credentials_in_urls_are_never_shown(text, shown):
    from bridge.redaction import redact

    assert redact(text) == shown


def test_the_watcher_delivers_what_is_queued_while_it_runs_and_the_sensor_keeps_one_alive(folder):
    import threading

    from bridge.run.watch import keep_watcher_running, pid_file, watch

    bridge = rig_bridge(folder, lite=False)
    stop = threading.Event()
    with LineageServer() as server:
        passes = []
        thread = threading.Thread(
            target=lambda: passes.append(
                watch(bridge, lambda: one_pass(bridge, http_client(server.url)), interval=0.05, stop=stop)
            )
        )
        thread.start()
        queued = fill(folder)  # after the watcher started
        arrived = server.wait_for(len(queued))
        stop.set()
        thread.join()
    assert arrived and server.duplicates() == 0 and passes[0] >= 1

    sleeper = replace_command(bridge, [sys.executable, "-c", "import sys, time; time.sleep(60)"])
    first = keep_watcher_running(sleeper)
    try:
        assert keep_watcher_running(sleeper) == first  # alive: not started twice
        assert str(first) in pid_file(sleeper).read_text()
    finally:
        os.kill(first, signal.SIGKILL)
    os.waitpid(first, 0)
    assert keep_watcher_running(replace_command(bridge, ())) is None


def replace_command(bridge, command):
    from dataclasses import replace

    return replace(bridge, watch_command=tuple(command))


def test_a_sensor_tick_logs_what_its_pass_did_and_how_each_target_stands(tmp_path, openlineage_env):
    import logging
    from dataclasses import replace

    from dagster import DagsterInstance, SkipReason, build_sensor_context

    from bridge.run.sensor import lineage_sensor
    from tests.reuse_project.shop import definitions, shop_bridge

    bridge = with_datahub(replace(shop_bridge(tmp_path), flows=()), None)
    queued = fill(bridge.lineage_dir)
    with LineageServer() as server, DagsterInstance.ephemeral() as instance:
        openlineage_env.setenv("OPENLINEAGE_URL", server.url)
        context = build_sensor_context(instance=instance, repository_def=definitions(tmp_path).get_repository_def())
        records: list[logging.LogRecord] = []
        handler = logging.Handler()
        handler.emit = records.append
        context.log.addHandler(handler)  # what the tick log in Dagster's UI shows
        tick = lineage_sensor(bridge)(context)
        first = list(records)
        records.clear()
        idle = lineage_sensor(bridge)(context)  # nothing new since
    assert isinstance(tick, SkipReason) and f"sent {len(queued)}, 0 waiting" in tick.skip_message
    logged = "\n".join(record.getMessage() for record in first)
    assert f"This tick's pass: queued 0 new events; http {server.url}/api/v1/lineage: sent {len(queued)}" in logged
    assert f"Lineage: healthy (exit 0); {len(queued)} events in the outbox" in logged
    assert f"http {server.url}/api/v1/lineage: up to date" in logged
    # An idle tick on healthy lineage says so in one line (the daemon prints it every 30 s); the rest is debug.
    assert isinstance(idle, SkipReason) and "sent 0, 0 waiting" in idle.skip_message
    said = [record.getMessage() for record in records if record.levelno >= logging.INFO]
    assert len(said) == 1 and said[0].startswith(f"Lineage: healthy (exit 0); {len(queued)} events in the outbox")
    assert any("up to date" in record.getMessage() for record in records if record.levelno == logging.DEBUG)


def test_a_watcher_started_for_the_sensor_stops_when_the_process_that_started_it_ends(folder):
    starter = subprocess.run(
        [sys.executable, "-c", WATCHER_STARTER, str(folder)],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    watcher = int(starter.stdout.strip())
    give_up = time.monotonic() + 30
    while _alive(watcher) and time.monotonic() < give_up:
        time.sleep(0.1)  # polling another process's end: there is nothing to wait on but its pid
    assert not _alive(watcher), "the watcher outlived the process that started it"
    assert (folder / "passes").exists()  # it was watching until then


# Starts a watcher as the sensor does (in its own session), waits for its first pass, prints its pid and ends.
WATCHER_STARTER = """
import os, subprocess, sys, time
folder = sys.argv[1]
code = (
    "import sys, threading; from pathlib import Path; from bridge.run.watch import watch; "
    "from tests.delivery_rig import rig_bridge; "
    "one_pass = lambda: Path(sys.argv[1], 'passes').open('a').write('.') and None; "
    "watch(rig_bridge(Path(sys.argv[1]), lite=False), one_pass, 0.05, True, started_by=int(sys.argv[2]))"
)
open(folder + "/sensor.heartbeat", "w").close()
quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
watcher = subprocess.Popen([sys.executable, "-c", code, folder, str(os.getpid())], start_new_session=True, **quiet)
while not os.path.exists(folder + "/passes") and watcher.poll() is None:
    time.sleep(0.05)  # until the watcher has run a pass
print(watcher.pid)
"""


def _alive(pid: int) -> bool:
    try:
        finished, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not our child: ask the kernel whether it exists
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    return finished == 0
