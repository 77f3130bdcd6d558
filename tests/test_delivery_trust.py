"""Delivery a backend can trust, against loopback receivers: every credential and TLS setting the
OpenLineage client honours, a place per target, no event held behind another run's, no resend of a
request still in flight, and a verdict (exit code, ``status``) that says when lineage is not healthy."""

from __future__ import annotations

import base64
import json
import ssl
import time
from collections import defaultdict
from dataclasses import replace

import pytest
import trustme

from bridge.cli import main as cli
from bridge.outbox.health import FAILING, HEALTHY, PARKED
from bridge.outbox.outbox import Outbox
from bridge.sinks.openlineage_client import make_client, run_event_from_json
from tests.delivery_rig import fill, http_client, one_pass, rig_bridge
from tests.loopback_lineage import LineageServer, identity

# What differs between two requests for one event whoever sends them; the rest must be the client's own.
PER_REQUEST = {"Host", "Content-Length", "Idempotency-Key"}


def in_order_per_run(received: list[dict], queued: list[dict]) -> bool:
    """Each run's events arrived in the order they were queued."""
    runs: dict[str, list] = defaultdict(list)
    for event in received:
        runs[event["run"]["runId"]].append(identity(event))
    expected: dict[str, list] = defaultdict(list)
    for event in queued:
        expected[event["run"]["runId"]].append(identity(event))
    return runs == expected


def stock_client_headers(client_config: dict[str, str], monkeypatch, event: dict, tmp_path) -> dict[str, str]:
    """The headers the OpenLineage client itself sends for ``event``, configured as the bridge was."""
    with LineageServer(authorization=client_config.get("authorization")) as stock:
        config = tmp_path / "stock.yml"
        config.write_text(client_config["yml"].replace("URL", stock.url))
        monkeypatch.setenv("OPENLINEAGE_CONFIG", str(config))
        from openlineage.client import OpenLineageClient

        OpenLineageClient().emit(run_event_from_json(json.dumps(event)))
    return {k: v for k, v in stock.headers[0].items() if k not in PER_REQUEST}


def test_basic_auth_in_the_url_reaches_a_receiver_that_requires_it(folder, openlineage_env):
    queued = fill(folder)
    basic = "Basic " + base64.b64encode(b"user:s3cret").decode()
    with LineageServer(authorization=basic) as server:
        openlineage_env.setenv("OPENLINEAGE_URL", server.url.replace("://", "://user:s3cret@"))
        result = one_pass(rig_bridge(folder, lite=False), make_client(folder / "unused.jsonl"))
    assert result.health == HEALTHY and result.sink("openlineage").sent == len(queued)
    assert [identity(e) for e in server.received] == [identity(e) for e in queued] and server.duplicates() == 0
    assert {h["Authorization"] for h in server.headers} == {basic}
    assert "s3cret" not in result.sink("openlineage").target and "user" not in result.sink("openlineage").target


@pytest.mark.parametrize("configured_by", ["openlineage.yml", "environment"])
def test_an_api_key_custom_headers_and_compression_are_sent_exactly_as_the_client_sends_them(
    folder, tmp_path, openlineage_env, configured_by
):
    queued = fill(folder)
    yml = (
        "transport:\n  type: http\n  url: URL\n  compression: gzip\n"
        "  auth:\n    type: api_key\n    apiKey: k3y\n  custom_headers:\n    X-Team: lineage\n"
    )
    with LineageServer(authorization="Bearer k3y") as server:
        if configured_by == "openlineage.yml":
            config = tmp_path / "openlineage.yml"
            config.write_text(yml.replace("URL", server.url))
            openlineage_env.setenv("OPENLINEAGE_CONFIG", str(config))
        else:
            for key, value in {
                "TYPE": "http",
                "URL": server.url,
                "COMPRESSION": "gzip",
                "AUTH": json.dumps({"type": "api_key", "apiKey": "k3y"}),
                "CUSTOM_HEADERS": json.dumps({"X-Team": "lineage"}),
            }.items():
                openlineage_env.setenv(f"OPENLINEAGE__TRANSPORT__{key}", value)
        result = one_pass(rig_bridge(folder, lite=False), make_client(folder / "unused.jsonl"))
    assert result.health == HEALTHY and len(server.received) == len(queued) and server.duplicates() == 0
    sent = [{k: v for k, v in headers.items() if k not in PER_REQUEST} for headers in server.headers]
    openlineage_env.delenv("OPENLINEAGE_CONFIG", raising=False)
    for key in ("TYPE", "URL", "COMPRESSION", "AUTH", "CUSTOM_HEADERS"):
        openlineage_env.delenv(f"OPENLINEAGE__TRANSPORT__{key}", raising=False)
    stock = stock_client_headers({"yml": yml, "authorization": "Bearer k3y"}, openlineage_env, queued[0], tmp_path)
    assert all(headers == stock for headers in sent), (sent[0], stock)
    assert stock["Authorization"] == "Bearer k3y" and stock["X-Team"] == "lineage"
    assert stock["Content-Encoding"] == "gzip"
    keys = [headers["Idempotency-Key"] for headers in server.headers]
    assert len(set(keys)) == len(queued)  # one stable identity per event


def test_refused_credentials_keep_every_event_waiting_and_name_the_setting(folder, tmp_path, openlineage_env):
    queued = fill(folder)
    bridge = rig_bridge(folder, lite=False)
    with LineageServer(authorization="Bearer right") as server:
        refused = one_pass(bridge, http_client(server.url))
        config = tmp_path / "openlineage.yml"
        auth = "  auth:\n    type: api_key\n    apiKey: right\n"
        config.write_text(f"transport:\n  type: http\n  url: {server.url}\n{auth}")
        openlineage_env.setenv("OPENLINEAGE_CONFIG", str(config))
        fixed = one_pass(bridge, make_client(folder / "unused.jsonl"))
    assert (
        refused.sink("openlineage").sent
        == refused.sink("openlineage").parked
        == refused.sink("openlineage").dead_letters
        == 0
    )
    assert (
        "HTTP 401" in refused.sink("openlineage").waiting_on
        and "OPENLINEAGE_API_KEY" in refused.sink("openlineage").waiting_on
    )
    assert refused.health == FAILING and refused.sink("openlineage").pending == len(queued)
    assert fixed.health == HEALTHY and fixed.sink("openlineage").sent == len(
        queued
    )  # the same target: its place is kept
    assert len(server.headers) == 1 + len(queued)  # one try while refused: every event would get the same answer
    assert [identity(e) for e in server.received] == [identity(e) for e in queued]


def test_tls_with_a_private_ca_delivers_once_the_ca_bundle_is_given(folder, tmp_path, openlineage_env):
    queued = fill(folder)
    authority = trustme.CA()
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(tls)
    bundle = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(bundle))
    bridge = rig_bridge(folder, lite=False)
    with LineageServer(tls=tls) as server:
        assert server.url.startswith("https://")
        untrusted = one_pass(bridge, http_client(server.url))
        config = tmp_path / "openlineage.yml"
        config.write_text(f"transport:\n  type: http\n  url: {server.url}\n  sslContext:\n    caCertPath: {bundle}\n")
        openlineage_env.setenv("OPENLINEAGE_CONFIG", str(config))
        trusted = one_pass(bridge, make_client(folder / "unused.jsonl"))
    assert (
        untrusted.sink("openlineage").sent == 0
        and untrusted.sink("openlineage").dead_letters == 0
        and untrusted.health == FAILING
    )
    assert (
        "not trusted" in untrusted.sink("openlineage").waiting_on
        and "caCertPath" in untrusted.sink("openlineage").waiting_on
    )
    assert trusted.health == HEALTHY and [identity(e) for e in server.received] == [identity(e) for e in queued]


def test_six_rejected_events_are_parked_in_the_first_pass_and_hold_nothing_back(folder, capsys):
    queued = fill(folder)
    rejected = {identity(event) for event in queued[3::9][:6]}
    assert len(rejected) == 6
    bridge = rig_bridge(folder, lite=False)
    with LineageServer(refuse=lambda event: identity(event) in rejected) as server:
        result = one_pass(bridge, http_client(server.url))
    assert (
        result.sink("openlineage").parked == result.sink("openlineage").dead_letters == 6
        and result.sink("openlineage").pending == 0
    )
    assert len(server.received) == len(queued) - 6 and len(server.refused) == 6 and server.duplicates() == 0
    assert in_order_per_run(server.received, [e for e in queued if identity(e) not in rejected])
    assert result.health == PARKED
    assert cli.main(["status"], bridge) == PARKED
    said = capsys.readouterr().out
    assert "dead letters waiting (exit 4)" in said and "6 dead letters" in said
    assert cli.main(["discard", "--all"], bridge) == 0
    assert cli.main(["status"], bridge) == PARKED  # as the latest pass left it, until the next pass
    assert one_pass(bridge, http_client(server.url)).health == HEALTHY


def test_an_event_the_target_fails_on_waits_with_its_run_while_other_runs_go_on(folder):
    queued = fill(folder)
    runs = defaultdict(list)
    for event in queued:
        runs[event["run"]["runId"]].append(event)
    failing = next(events[0] for events in runs.values() if len(events) >= 2)
    same_run = runs[failing["run"]["runId"]]
    bridge = rig_bridge(folder, lite=False)
    with LineageServer(fail=lambda event, attempt: identity(event) == identity(failing) and attempt <= 1) as server:
        first = one_pass(bridge, http_client(server.url))
        arrived_first = list(server.received)
        second = one_pass(bridge, http_client(server.url))
    assert first.sink("openlineage").held == len(same_run) and "HTTP 500" in first.sink("openlineage").held_on
    assert len(arrived_first) == len(queued) - len(same_run)  # every other run went on
    assert first.health == FAILING and second.health == HEALTHY and second.sink("openlineage").held == 0
    assert [identity(e) for e in server.received[len(arrived_first) :]] == [identity(e) for e in same_run]
    assert in_order_per_run(server.received, queued) and server.duplicates() == 0


def test_a_slow_receiver_gets_each_event_once(folder):
    queued = fill(folder, first=12)  # each is held 0.2 s
    with LineageServer(hold=0.2) as server:
        # The client gives up after 0.05 s; the bridge waits for an answer to what it has sent.
        result = one_pass(rig_bridge(folder, lite=False), http_client(server.url, timeout=0.05))
    assert result.health == HEALTHY and len(server.received) == len(queued)
    assert server.duplicates() == 0 and set(server.attempts.values()) == {1}


def _wait_until_due(folder, sink: str) -> None:
    """Until the sink and its held events may be tried again, as the outbox records: a held event that failed twice
    in a row waits its backoff, and a pass started before then sends nothing."""
    outbox = Outbox(folder / "outbox.sqlite")
    wait = outbox.places.wait(sink)
    # A waiting sink tries nothing until its wait ends; otherwise the first held event to come due goes.
    due = wait.retry_after if wait else min((held.retry_after for held in outbox.letters.failing(sink)), default=0.0)
    time.sleep(max(0.0, due - time.time()))


@pytest.mark.parametrize("framing", ["chunked", "continue", "unframed", "dropped"])
def test_however_a_target_frames_its_answers_each_event_arrives_once_in_order(folder, framing):
    queued = fill(folder, first=8)
    with LineageServer(framing=framing) as server:
        result = one_pass(rig_bridge(folder, lite=False), http_client(server.url))
        # A target that closes a kept connection right after its answer, without saying so, may close it under
        # the next request: that event is held (the target may have it) and sent again by a later pass.
        for _ in range(len(queued) if framing == "dropped" else 0):
            if result.sink("openlineage").pending == 0:
                break
            # None when this pass hit no new failure: it ran out of time on a busy machine, or the held event
            # was not yet due.
            held = result.sink("openlineage").held_on
            assert held is None or held.endswith("closed the connection without an answer"), held
            _wait_until_due(folder, result.sink("openlineage").sink)
            result = one_pass(rig_bridge(folder, lite=False), http_client(server.url))
    assert result.health == HEALTHY and result.sink("openlineage").pending == 0
    assert server.duplicates() == 0 and set(server.attempts.values()) <= {1, 2}
    for run in {identity(e)[1] for e in queued}:  # in order within each run
        assert [identity(e) for e in server.received if identity(e)[1] == run] == [
            identity(e) for e in queued if identity(e)[1] == run
        ]
    if framing != "dropped":
        assert [identity(e) for e in server.received] == [identity(e) for e in queued]
        assert set(server.attempts.values()) == {1} and result.sink("openlineage").sent == len(queued)
    # A connection is kept while the target's answers allow it, and only then.
    assert server.connections >= len(queued) if framing in ("unframed", "dropped") else server.connections == 1


def test_a_new_target_gets_the_whole_history_and_a_rebuilt_outbox_sends_only_what_a_target_lacks(
    folder, capsys, monkeypatch
):
    queued = fill(folder)
    bridge = rig_bridge(folder, lite=False)
    with LineageServer() as first, LineageServer() as second, LineageServer() as third:
        one_pass(bridge, http_client(first.url))
        moved = one_pass(bridge, http_client(second.url))  # OPENLINEAGE_URL changed: a new target
        assert moved.sink("openlineage").sent == len(queued)

        def refill_and_pass(bridge, wait):
            fill(folder)  # what the sources give a rebuilt outbox
            for server in (third, first):
                result = one_pass(bridge, http_client(server.url))
                print(f"{server.url}: {result.sinks['openlineage'].counts()}")
            return result.health

        monkeypatch.setattr("bridge.cli.main.lineage_pass", refill_and_pass)
        assert cli.main(["rebuild", "outbox"], bridge) == HEALTHY
    said = capsys.readouterr().out
    assert f"{third.url}: sent {len(queued)}, 0 waiting" in said
    assert f"{first.url}: sent 0, {len(queued)} already there (not sent again), 0 waiting" in said
    for server in (first, second, third):
        assert [identity(e) for e in server.received] == [identity(e) for e in queued], server.url


def test_status_says_how_far_behind_each_sink_is(folder, capsys):
    queued = fill(folder)
    bridge = replace(rig_bridge(folder), pass_seconds=40)
    with LineageServer() as server:
        assert one_pass(bridge, http_client(server.url)).health == HEALTHY
    assert cli.main(["status"], bridge) == HEALTHY
    said = capsys.readouterr().out
    assert f"healthy (exit 0); {len(queued)} events in the outbox" in said
    assert f"http {server.url}/api/v1/lineage: up to date" in said
    assert f"DataHub Lite {folder / 'lite.sqlite'}: up to date" in said
    fill(folder, copies=2)  # more events; the receiver is gone
    assert one_pass(bridge, http_client(server.url)).health == FAILING
    assert cli.main(["status", "--json"], bridge) == FAILING
    found = json.loads(capsys.readouterr().out)
    openlineage = next(sink for sink in found["sinks"] if sink["target"].startswith("http"))
    assert openlineage["pending"] == len(queued) and openlineage["failing_for"] == 1
    assert "Connection refused" in openlineage["error"] and openlineage["oldest_pending"] == queued[0]["eventTime"]
