"""Delivery under every fault a target or a person can cause, for every built-in sink, against loopback receivers.

Each case queues the golden events, runs real passes (lease, threads per sink, the real OpenLineage client
and DataHub Lite) until nothing more can move, and checks against what the receivers really got:

- **lost 0**: every event is at its target, or parked as a dead letter a person can see (and retry or discard);
- **duplicates <= 1 per fault in flight** (an answer lost after the receiver stored the event);
- **every message names its fix** (the setting, or the repair command), with no traceback and no secret;
- **status tells the truth**: its exit code is the verdict the faults call for.

The OpenLineage target runs over HTTP with each kind of credentials the client supports here (none, an API
key, a user and password in the URL); the file sinks (DataHub Lite, a DataHub metadata file, a SQLite table)
are damaged and deleted under the bridge.
"""

from __future__ import annotations

import base64
import copy
import json
import sqlite3
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, replace
from datetime import datetime
from email.utils import formatdate
from pathlib import Path

import pytest

from bridge.cli.commands import rebuild
from bridge.config import LineageBridge, SinkSpec
from bridge.outbox.health import DAMAGED, FAILING, HEALTHY, PARKED, status
from bridge.outbox.outbox import Outbox
from bridge.sinks.failures import RETRY_AFTER_LIMIT_SECONDS
from tests.loopback_lineage import LineageServer, free_port, identity

GOLDEN = sorted((Path(__file__).parent / "golden" / "openlineage").glob("*.json"))
SECRET = "s3cret-pass"


@dataclass(frozen=True)
class Auth:
    name: str
    header: str | None  # what the receiver requires

    def client(self, url: str, timeout: float = 5.0):
        from openlineage.client import OpenLineageClient
        from openlineage.client.transport.http import ApiKeyTokenProvider, HttpConfig, HttpTransport

        if self.name == "api key":
            auth = ApiKeyTokenProvider({"apiKey": SECRET})
            return OpenLineageClient(transport=HttpTransport(HttpConfig(url=url, timeout=timeout, auth=auth)))
        if self.name == "user and password":
            url = url.replace("http://", f"http://taxi:{SECRET}@")
        return OpenLineageClient(transport=HttpTransport(HttpConfig(url=url, timeout=timeout)))


AUTHS = [
    Auth("none", None),
    Auth("api key", f"Bearer {SECRET}"),
    Auth("user and password", "Basic " + base64.b64encode(f"taxi:{SECRET}".encode()).decode()),
]


def golden_events() -> list[tuple[str, dict]]:
    return [(entry["key"], entry["event"]) for path in GOLDEN for entry in json.loads(path.read_text())]


def fill(folder: Path, events: list[tuple[str, dict]] | None = None) -> list[dict]:
    """Queue ``events`` (the golden events unless given) as the sources would; the events queued."""
    events = golden_events() if events is None else events
    outbox = Outbox(folder / "outbox.sqlite")
    with outbox.queue.batch("golden") as batch:
        for key, event in events:
            batch.add(key, json.dumps(event))
    outbox.close()
    return [event for _, event in events]


FLAKY_JOB = "flaky_job"


def runs_of_one_job(runs: int) -> tuple[list[tuple[str, dict]], list[tuple[str, dict]]]:
    """``runs`` runs of :data:`FLAKY_JOB` (shaped as a golden event): their STARTs, then their COMPLETEs."""
    shape = golden_events()[0][1]
    starts, completes = [], []
    for number in range(runs):
        run_id = str(uuid.UUID(int=number + 1, version=4))
        for kind, into in (("START", starts), ("COMPLETE", completes)):
            event = copy.deepcopy(shape)
            event["job"]["name"], event["run"]["runId"], event["eventType"] = FLAKY_JOB, run_id, kind
            event["eventTime"] = f"2026-01-01T00:{number:02d}:{len(into):02d}.000Z"  # a time of its own
            into.append((f"{FLAKY_JOB}/{run_id}/{kind}", event))
    return starts, completes


def bridge_for(folder: Path, sinks: tuple[SinkSpec, ...], pass_seconds: float = 20.0) -> LineageBridge:
    from forecast_assets.lineage import taxi_bridge
    from taxi_core.settings import load_settings

    return replace(
        taxi_bridge(load_settings()), lineage_dir=folder, flows=(), sinks=sinks, pass_seconds=pass_seconds,
        watch_command=(),
    )  # fmt: skip


def http_sink(client, answer_seconds: float = 60.0) -> SinkSpec:
    return SinkSpec("openlineage", {"client": client, "answer_seconds": answer_seconds})


def lite(folder: Path) -> SinkSpec:
    return SinkSpec("datahub-lite", {"path": folder / "lite.sqlite"}, "datahub")


def one_pass(bridge: LineageBridge, wait: float = 0.0):
    from dagster import DagsterInstance

    from bridge.run.lineage_pass import run_pass

    def no_graph():
        raise AssertionError("nothing new in an empty instance: the asset graph is never loaded")

    with DagsterInstance.ephemeral() as instance:
        return run_pass(bridge, instance, no_graph, purpose="test", wait=wait)


def verdict(folder: Path) -> int:
    outbox = Outbox(folder / "outbox.sqlite")
    try:
        return status(outbox).code
    finally:
        outbox.close()


def expire_backoffs(folder: Path, sink: str) -> None:
    """Every held event's backoff has run out (as if its time had passed): the next pass tries it."""
    outbox = Outbox(folder / "outbox.sqlite")
    for held in outbox.letters.failing(sink):
        outbox.letters.hold(sink, held.seq, held.attempts, held.error, 0.0)
    for state in outbox.places.states():
        if state.failures:
            outbox.places.clear_failure(state.sink)
    outbox.close()


def received_once_each(server: LineageServer, queued: list[dict], missing: set[tuple] = frozenset()) -> None:
    got = Counter(identity(event) for event in server.received)
    expected = {identity(event) for event in queued} - set(missing)
    assert set(got) == expected, f"lost {len(expected - set(got))}, unexpected {len(set(got) - expected)}"
    assert server.duplicates() == 0


def lite_holds_everything(folder: Path, queued: list[dict]) -> None:
    outbox = Outbox(folder / "outbox.sqlite")
    from bridge.sinks.datahub import lite_position

    assert lite_position(folder / "lite.sqlite", outbox.id) == outbox.queue.last_seq() == len(queued)
    outbox.close()


# The OpenLineage target over HTTP, with each kind of credentials


@pytest.fixture(params=AUTHS, ids=lambda auth: auth.name)
def auth(request) -> Auth:
    return request.param


def test_a_target_that_is_down_loses_nothing_and_names_where_it_is_set(tmp_path, auth):
    queued = fill(tmp_path)
    port = free_port()
    down = one_pass(bridge_for(tmp_path, (http_sink(auth.client(f"http://127.0.0.1:{port}")), lite(tmp_path))))
    waiting = down.sink("openlineage").waiting_on
    assert "OPENLINEAGE_URL" in waiting and SECRET not in waiting and verdict(tmp_path) == FAILING
    lite_holds_everything(tmp_path, queued)  # one target away never keeps events from another
    with LineageServer(port=port, authorization=auth.header) as server:
        back = one_pass(bridge_for(tmp_path, (http_sink(auth.client(server.url)), lite(tmp_path))))
    assert back.sink("openlineage").sent == len(queued) and verdict(tmp_path) == HEALTHY
    received_once_each(server, queued)


def test_a_slow_target_never_starves_the_others(tmp_path, auth):
    queued = fill(tmp_path)
    with LineageServer(hold=0.05, authorization=auth.header) as server:
        bridge = bridge_for(tmp_path, (http_sink(auth.client(server.url)), lite(tmp_path)), pass_seconds=1.5)
        passes = [one_pass(bridge)]
        assert passes[0].sink("openlineage").out_of_time and passes[0].sink("openlineage").pending > 0
        while passes[-1].sink("openlineage").pending and len(passes) < 12:
            passes.append(one_pass(bridge))
        # Lite goes on while the slow target holds its pass (the first pass, unless the machine is very busy) and
        # has everything no later than the slow target does.
        behind = [(done.sink("datahub").pending, done.sink("openlineage").pending) for done in passes]
        assert behind[-1][1] == 0 and behind[0][0] < len(queued), behind
        assert [lite for lite, _ in behind].index(0) <= [http for _, http in behind].index(0), behind
        lite_holds_everything(tmp_path, queued)
    received_once_each(server, queued)
    assert verdict(tmp_path) == HEALTHY


@pytest.mark.parametrize("code", [500, 502])
def test_one_event_failing_every_time_is_held_then_parked_and_the_rest_goes_on(tmp_path, auth, code):
    queued = fill(tmp_path)
    bad = identity(queued[5])
    with LineageServer(authorization=auth.header, fail=lambda e, attempt: code if identity(e) == bad else 0) as server:
        bridge = bridge_for(tmp_path, (http_sink(auth.client(server.url)), lite(tmp_path)))
        first = one_pass(bridge)
        sink = first.sink("openlineage").sink
        assert first.sink("openlineage").held >= 1 and verdict(tmp_path) == FAILING
        outbox = Outbox(tmp_path / "outbox.sqlite")
        said = status(outbox).sinks[0].held_events
        outbox.close()
        assert said and f"HTTP {code}" in said[0] and "attempt 1 of 8" in said[0] and SECRET not in said[0]
        for _ in range(12):
            expire_backoffs(tmp_path, sink)
            if one_pass(bridge).sink("openlineage").dead_letters:
                break
        assert verdict(tmp_path) == PARKED  # a person decides: retry or discard
        others = {identity(e) for e in queued if identity(e)[1] != bad[1]}
        assert others <= {identity(e) for e in server.received}  # other runs were never held behind it
        outbox = Outbox(tmp_path / "outbox.sqlite")
        (letter,) = outbox.letters.dead_letters()
        assert letter.attempts == 8 and f"HTTP {code}" in letter.error
        outbox.letters.discard([letter.id])
        outbox.close()
        one_pass(bridge)
    received_once_each(server, queued, missing={bad})
    assert verdict(tmp_path) == HEALTHY


def test_a_target_failing_every_event_waits_as_a_whole_and_parks_nothing(tmp_path, auth):
    queued = fill(tmp_path)
    with LineageServer(authorization=auth.header, fail=lambda e, attempt: 502) as server:
        bridge = bridge_for(tmp_path, (http_sink(auth.client(server.url)),))
        for _ in range(10):
            result = one_pass(bridge)
            expire_backoffs(tmp_path, result.sink("openlineage").sink)
        assert "events of 3 jobs in a row failed: HTTP 502" in result.sink("openlineage").waiting_on
        assert result.sink("openlineage").dead_letters == 0 and verdict(tmp_path) == FAILING
        server.fail = lambda e, attempt: False
        for _ in range(3):
            one_pass(bridge)
    received_once_each(server, queued)


@pytest.mark.parametrize("runs", range(1, 11))
def test_one_job_failing_with_any_number_of_runs_never_holds_up_the_others_and_its_events_park(tmp_path, runs):
    from bridge.outbox.letters import EVENT_ATTEMPTS

    starts, completes = runs_of_one_job(runs)
    queued = fill(tmp_path, starts + golden_events() + completes)  # the job's runs side by side: the worst order
    flaky = {identity(event) for _, event in starts + completes}
    with LineageServer(fail=lambda e, attempt: 502 if e["job"]["name"] == FLAKY_JOB else 0) as server:
        bridge = bridge_for(tmp_path, (http_sink(Auth("none", None).client(server.url)),))
        passes = [one_pass(bridge).sink("openlineage")]
        # Every other run went on in the first pass, however many of the job's events were held.
        received_once_each(server, queued, missing=flaky)
        assert passes[0].held == 2 * runs and passes[0].waiting_on is None, passes[0]
        while passes[-1].pending and len(passes) < 4 * EVENT_ATTEMPTS:
            expire_backoffs(tmp_path, passes[-1].sink)
            passes.append(one_pass(bridge).sink("openlineage"))
    assert passes[-1].pending == 0 and passes[-1].dead_letters == 2 * runs and verdict(tmp_path) == PARKED
    outbox = Outbox(tmp_path / "outbox.sqlite")
    letters = outbox.letters.dead_letters()
    outbox.close()
    assert {(letter.run_id, letter.event_type) for letter in letters} == {(run, kind) for _, run, kind, _ in flaky}
    assert all(letter.attempts == EVENT_ATTEMPTS and "HTTP 502" in letter.error for letter in letters)
    assert {server.attempts[each] for each in flaky} == {EVENT_ATTEMPTS}  # each tried as often as documented
    received_once_each(server, queued, missing=flaky)


@pytest.fixture
def outside_sink(tmp_path, monkeypatch):
    """The kind ``catalog``, registered by a package of its own (an installed distribution's entry point)."""
    from bridge.sinks import registry
    from tests.installed_entry_point import install_entry_point

    site = install_entry_point(
        tmp_path / "site", "outside-catalog", registry.ENTRY_POINT_GROUP, "catalog",
        "tests.outside_package.catalog_sink:CatalogSink",
    )  # fmt: skip
    monkeypatch.syspath_prepend(str(site))
    registry._installed.cache_clear()
    yield "catalog"
    registry._installed.cache_clear()


@pytest.mark.parametrize("runs", [1, 4, 10])
def test_a_sink_from_another_package_gets_the_same_holding_and_parking(tmp_path, outside_sink, runs):
    from bridge.outbox.letters import EVENT_ATTEMPTS

    starts, completes = runs_of_one_job(runs)
    queued = fill(tmp_path, starts + golden_events() + completes)
    flaky = {identity(event) for _, event in starts + completes}
    with LineageServer(fail=lambda e, attempt: 502 if e["job"]["name"] == FLAKY_JOB else 0) as server:
        bridge = bridge_for(tmp_path, (SinkSpec(outside_sink, {"url": f"{server.url}/api/v1/lineage"}),))
        passes = [one_pass(bridge).sink(outside_sink)]
        received_once_each(server, queued, missing=flaky)
        while passes[-1].pending and len(passes) < 4 * EVENT_ATTEMPTS:
            expire_backoffs(tmp_path, passes[-1].sink)
            passes.append(one_pass(bridge).sink(outside_sink))
    assert passes[-1].pending == 0 and passes[-1].dead_letters == 2 * runs and verdict(tmp_path) == PARKED
    assert {server.attempts[each] for each in flaky} == {EVENT_ATTEMPTS}


# What each class of answer means for the event it answers (one event of one run answered so, every time).
TREATMENT = {
    300: "waits", 302: "waits", 304: "waits", 307: "waits",
    400: "parked", 404: "parked", 409: "parked", 413: "parked", 422: "parked",
    401: "waits", 403: "waits", 429: "waits",
    408: "held", 425: "held", 500: "held", 501: "held", 502: "held", 503: "held", 504: "held", 599: "held",
}  # fmt: skip


@pytest.mark.parametrize("code", sorted(TREATMENT))
def test_every_class_of_answer_is_judged_and_nothing_is_counted_delivered_that_was_not(tmp_path, code):
    queued = fill(tmp_path)
    bad = identity(queued[5])
    with LineageServer(fail=lambda e, attempt: code if identity(e) == bad else 0) as server:
        bridge = bridge_for(tmp_path, (http_sink(Auth("none", None).client(server.url)),))
        result = one_pass(bridge).sink("openlineage")
    treated = "waits" if result.waiting_on else "parked" if result.dead_letters else "held" if result.held else "sent"
    assert treated == TREATMENT[code], (code, result)
    assert f"HTTP {code}" in (result.waiting_on or result.held_on or "") or treated == "parked"
    if treated != "waits":  # every other run went on
        others = {identity(e) for e in queued if identity(e)[1] != bad[1]}
        assert others <= {identity(e) for e in server.received}


RETRY_AFTER = {
    "seconds": ("120", 120),
    "an HTTP date": (lambda: formatdate(time.time() + 120, usegmt=True), 120),
    "a day, bounded": ("86400", RETRY_AFTER_LIMIT_SECONDS),
}


@pytest.mark.parametrize("asked", sorted(RETRY_AFTER))
@pytest.mark.parametrize("code", [429, 503])
def test_a_target_asking_to_be_left_alone_is_left_alone_as_long_as_it_asked(tmp_path, code, asked):
    queued = fill(tmp_path)
    header, seconds = RETRY_AFTER[asked]
    header = header() if callable(header) else header
    with LineageServer(fail=lambda e, attempt: code, failure_headers={"Retry-After": header}) as server:
        bridge = bridge_for(tmp_path, (http_sink(Auth("none", None).client(server.url)),))
        first = one_pass(bridge).sink("openlineage")
        assert f"HTTP {code}" in first.waiting_on and "Retry-After" in first.waiting_on, first.waiting_on
        for _ in range(5):
            one_pass(bridge)
        assert sum(server.attempts.values()) == 1  # the passes within its time sent nothing
        outbox = Outbox(tmp_path / "outbox.sqlite")
        (said,) = status(outbox).sinks
        outbox.close()
        assert seconds - 15 < said.retry_in <= seconds and said.pending == len(queued)
        server.fail = lambda e, attempt: False
        expire_backoffs(tmp_path, first.sink)  # its time has passed
        one_pass(bridge)
    received_once_each(server, queued)


def test_an_event_failed_with_a_retry_after_is_not_tried_again_sooner(tmp_path):
    queued = fill(tmp_path)
    bad = identity(queued[5])
    fail = lambda e, attempt: 500 if identity(e) == bad else 0  # noqa: E731
    with LineageServer(fail=fail, failure_headers={"Retry-After": "300"}) as server:
        bridge = bridge_for(tmp_path, (http_sink(Auth("none", None).client(server.url)),))
        one_pass(bridge)
        one_pass(bridge)
        assert server.attempts[bad] == 1
        outbox = Outbox(tmp_path / "outbox.sqlite")
        (held,) = [held for held in outbox.letters.failing(first_sink(outbox)) if held.attempts]
        outbox.close()
        assert 285 < held.retry_after - time.time() <= 300


def first_sink(outbox: Outbox) -> str:
    return outbox.places.states()[0].sink


def test_three_refused_events_are_parked_with_the_receivers_reason(tmp_path, auth):
    queued = fill(tmp_path)
    refused = {identity(event) for event in queued[10:13]}
    with LineageServer(authorization=auth.header, refuse=lambda e: identity(e) in refused) as server:
        bridge = bridge_for(tmp_path, (http_sink(auth.client(server.url)), lite(tmp_path)))
        result = one_pass(bridge)
    assert result.sink("openlineage").dead_letters == 3 and verdict(tmp_path) == PARKED
    outbox = Outbox(tmp_path / "outbox.sqlite")
    letters = outbox.letters.dead_letters()
    outbox.close()
    assert all("HTTP 400" in letter.error and "facet 'schema' is not valid" in letter.error for letter in letters)
    received_once_each(server, queued, missing=refused)


def test_an_answer_lost_after_the_event_was_stored_is_sent_once_more_at_most(tmp_path, auth):
    queued = fill(tmp_path)
    lost = identity(queued[20])
    with LineageServer(
        authorization=auth.header, drop=lambda e, attempt: identity(e) == lost and attempt == 1
    ) as server:
        bridge = bridge_for(tmp_path, (http_sink(auth.client(server.url)),))
        first = one_pass(bridge)
        assert Counter(identity(e) for e in server.received)[lost] == 1  # not sent again in the same pass
        assert first.sink("openlineage").sent == len(queued) - 1  # the report counts what was acknowledged
        assert first.sink("openlineage").held_on.endswith("closed the connection without an answer")
        one_pass(bridge)
    got = Counter(identity(event) for event in server.received)
    assert got[lost] == 2 and server.duplicates() == 1  # the one fault in flight
    assert set(got) == {identity(event) for event in queued} and verdict(tmp_path) == HEALTHY


def test_two_passes_at_once_deliver_each_event_once(tmp_path, auth):
    queued = fill(tmp_path)
    with LineageServer(hold=0.01, authorization=auth.header) as server:
        bridge = bridge_for(tmp_path, (http_sink(auth.client(server.url)), lite(tmp_path)))
        passes = [threading.Thread(target=one_pass, args=(bridge, 60)) for _ in range(2)]
        for each in passes:
            each.start()
        for each in passes:
            each.join()
    received_once_each(server, queued)
    lite_holds_everything(tmp_path, queued)


def test_rebuilding_the_outbox_during_a_pass_sends_nothing_twice(tmp_path, auth):
    queued = fill(tmp_path)
    with LineageServer(hold=0.02, authorization=auth.header) as server:
        bridge = bridge_for(tmp_path, (http_sink(auth.client(server.url)),))
        running = threading.Thread(target=one_pass, args=(bridge,))
        running.start()
        assert server.wait_for(5)

        def refill_and_pass() -> int:  # the sources queue every run again; here, the same events
            fill(tmp_path)
            one_pass(bridge, wait=60)
            return 0

        rebuild(bridge, "outbox", refill_and_pass)  # waits for the running pass's lease
        running.join()
    received_once_each(server, queued)


# OPENLINEAGE_URL as people mistype it, the password in every part a parser may take it for (host, path, user).
MISTYPED_URLS = [
    f"http://taxi:{SECRET}@[bad",
    "not a url",
    f"http://user:{SECRET[:3]}/{SECRET[3:]}@127.0.0.1:P",
    f"htp:/user:{SECRET}@127.0.0.1:5000",
    f"user:{SECRET}@127.0.0.1:5000",
    f"http://us er:{SECRET}@[::1",
    f"http://user:{SECRET}@127.0.0.1:5000:6000/api",
]


def test_bad_client_configuration_is_one_line_naming_the_setting_and_no_secret(tmp_path, monkeypatch, capsys, caplog):
    from bridge.outbox.health import status_lines

    fill(tmp_path)
    bridge = bridge_for(tmp_path, (SinkSpec("openlineage"), lite(tmp_path)))
    for url in MISTYPED_URLS:
        monkeypatch.setenv("OPENLINEAGE_URL", url)
        result = one_pass(bridge)
        said = [*result.problems, *(sink.waiting_on or "" for sink in result.sinks.values())]
        assert any("OPENLINEAGE_URL" in line for line in said) and "Traceback" not in str(said), (url, said)
        outbox = Outbox(tmp_path / "outbox.sqlite")
        said += status_lines(status(outbox), time.time(), "taxi-lineage")
        outbox.close()
        assert SECRET not in "\n".join(said), (url, said)
    lite_holds_everything(tmp_path, fill(tmp_path))  # the other sinks went on
    assert SECRET not in capsys.readouterr().err
    assert "OPENLINEAGE" in caplog.text and SECRET not in caplog.text  # the client's own warnings quote the URL
    for written in tmp_path.rglob("*"):  # the outbox, its state, the events file
        assert not written.is_file() or SECRET.encode() not in written.read_bytes(), written


# The sinks that keep their state in a file of their own


FILE_SINKS = {
    "datahub-lite": lambda folder: SinkSpec("datahub-lite", {"path": folder / "lite.sqlite"}, "datahub"),
    "datahub-file": lambda folder: SinkSpec("datahub-file", {"path": folder / "metadata.json"}, "datahub"),
    "sqlite-table": lambda folder: SinkSpec("sqlite-table", {"path": folder / "table.sqlite"}, "table"),
}


def sink_file(spec: SinkSpec) -> Path:
    return Path(spec.options["path"])


def held_events(spec: SinkSpec, folder: Path) -> int:
    path = sink_file(spec)
    if spec.kind == "datahub-file":
        return len({record["entityUrn"] for record in json.loads(path.read_text())})  # entities written
    query = (
        "SELECT count(*) FROM lineage_events"
        if spec.kind == "sqlite-table"
        else "SELECT count(DISTINCT urn) FROM metadata_aspect_v2"
    )
    with sqlite3.connect(path) as connection:
        return connection.execute(query).fetchone()[0]


@pytest.mark.parametrize("kind", sorted(FILE_SINKS))
def test_a_deleted_sink_file_is_refilled_and_a_damaged_one_is_named_with_its_repair(tmp_path, kind):
    queued = fill(tmp_path)
    spec = FILE_SINKS[kind](tmp_path)
    bridge = bridge_for(tmp_path, (spec,))
    one_pass(bridge)
    full = held_events(spec, tmp_path)
    assert full > 0 and verdict(tmp_path) == HEALTHY
    if kind == "sqlite-table":
        assert full == len(queued)

    for suffix in ("", "-wal", "-shm"):
        sink_file(spec).with_name(sink_file(spec).name + suffix).unlink(missing_ok=True)
    from bridge.run.idle import idle_pass

    assert idle_pass(bridge) is None  # the idle check sees the file is gone
    one_pass(bridge)
    assert held_events(spec, tmp_path) == full and verdict(tmp_path) == HEALTHY

    if kind != "datahub-file":  # a metadata file is rewritten whole on each batch: there is no state to damage
        sink_file(spec).write_bytes(b"this is not a SQLite file " * 200)
        damaged = one_pass(bridge)
        (problem,) = damaged.problems
        assert f"taxi-lineage rebuild {spec.key}" in problem and str(sink_file(spec)) in problem
        assert verdict(tmp_path) == DAMAGED
        rebuild(bridge, spec.key, lambda: one_pass(bridge).health)
        assert held_events(spec, tmp_path) == full and verdict(tmp_path) == HEALTHY


# DataHub over REST (a GMS), with and without a token


class OneEventFails:
    """Answers ``status`` to every request carrying one event's aspects (they all carry its time, in milliseconds)."""

    def __init__(self, event: dict, status: int) -> None:
        millis = int(datetime.fromisoformat(event["eventTime"].replace("Z", "+00:00")).timestamp() * 1000)
        self.marker, self.status, self.answered = str(millis).encode(), status, 0

    def __call__(self, body: bytes) -> int:
        if self.marker in body:
            self.answered += 1
            return self.status
        return 200


@pytest.mark.parametrize("token", [None, SECRET], ids=["no token", "token"])
@pytest.mark.parametrize("code", [502, 400])
def test_a_gms_failing_or_refusing_one_event_holds_or_parks_it_and_takes_the_rest(tmp_path, token, code):
    from tests.loopback_gms import GmsStandIn

    queued = fill(tmp_path)
    failing = OneEventFails(queued[5], code)
    with GmsStandIn(answer=failing, token=token) as gms:
        spec = SinkSpec("datahub-rest", {"server": gms.url, "token": token}, "datahub")
        bridge = bridge_for(tmp_path, (spec,))
        first = one_pass(bridge).sink("datahub")
        if code == 502:
            outbox = Outbox(tmp_path / "outbox.sqlite")
            (held,) = status(outbox).sinks[0].held_events  # the events of its run wait behind it, not counted here
            outbox.close()
            assert "HTTP 502" in held and verdict(tmp_path) == FAILING
            for _ in range(12):
                expire_backoffs(tmp_path, first.sink)
                if one_pass(bridge).sink("datahub").dead_letters:
                    break
        outbox = Outbox(tmp_path / "outbox.sqlite")
        (letter,) = outbox.letters.dead_letters()
        outbox.close()
        assert f"HTTP {code}" in letter.error and SECRET not in letter.error and verdict(tmp_path) == PARKED
    assert failing.answered == (8 if code == 502 else 1)  # tried until parked, or refused once
    times = Counter(proposal["systemMetadata"]["lastObserved"] for proposal in gms.proposals())
    expected = {int(datetime.fromisoformat(e["eventTime"].replace("Z", "+00:00")).timestamp() * 1000) for e in queued}
    assert set(times) == expected - {int(failing.marker)}  # every other event arrived


def observed(event: dict) -> int:
    """An event's time as DataHub keeps it with each aspect (``lastObserved``, in milliseconds)."""
    return int(datetime.fromisoformat(event["eventTime"].replace("Z", "+00:00")).timestamp() * 1000)


@pytest.mark.parametrize("runs", [1, 3, 10])
def test_a_gms_failing_one_job_with_any_number_of_runs_takes_every_other_run_and_parks_the_job(tmp_path, runs):
    from bridge.outbox.letters import EVENT_ATTEMPTS
    from tests.loopback_gms import GmsStandIn

    starts, completes = runs_of_one_job(runs)
    queued = fill(tmp_path, starts + golden_events() + completes)
    flaky = [event for _, event in starts + completes]
    with GmsStandIn(answer=lambda body: 502 if FLAKY_JOB.encode() in body else 200) as gms:
        bridge = bridge_for(tmp_path, (SinkSpec("datahub-rest", {"server": gms.url}, "datahub"),))
        passes = [one_pass(bridge).sink("datahub")]
        others = {observed(event) for event in queued} - {observed(event) for event in flaky}
        assert {proposal["systemMetadata"]["lastObserved"] for proposal in gms.proposals()} == others
        assert passes[0].held == 2 * runs and passes[0].waiting_on is None, passes[0]
        while passes[-1].pending and len(passes) < 4 * EVENT_ATTEMPTS:
            expire_backoffs(tmp_path, passes[-1].sink)
            passes.append(one_pass(bridge).sink("datahub"))
    outbox = Outbox(tmp_path / "outbox.sqlite")
    letters = outbox.letters.dead_letters()
    outbox.close()
    assert len(letters) == 2 * runs and {letter.attempts for letter in letters} == {EVENT_ATTEMPTS}
    assert {letter.run_id for letter in letters} == {event["run"]["runId"] for event in flaky}
    assert verdict(tmp_path) == PARKED


@pytest.mark.parametrize("code", [302, 307])
def test_a_gms_answering_with_a_redirect_waits_and_loses_nothing(tmp_path, code):
    from tests.loopback_gms import GmsStandIn

    fill(tmp_path)
    with GmsStandIn(answer=lambda body: code) as gms:
        bridge = bridge_for(tmp_path, (SinkSpec("datahub-rest", {"server": gms.url}, "datahub"),))
        result = one_pass(bridge).sink("datahub")
    assert f"HTTP {code}" in (result.waiting_on or "") and "DATAHUB_GMS_URL" in result.waiting_on, result
    assert result.sent == 0 and result.pending == len(golden_events()) and verdict(tmp_path) == FAILING


def test_a_gms_that_is_down_or_refuses_the_token_names_the_setting(tmp_path):
    from tests.loopback_gms import GmsStandIn

    fill(tmp_path)
    port = free_port()
    down = SinkSpec("datahub-rest", {"server": f"http://127.0.0.1:{port}"}, "datahub")
    assert "DATAHUB_GMS_URL" in one_pass(bridge_for(tmp_path, (down,))).sink("datahub").waiting_on
    with GmsStandIn(token=SECRET) as gms:
        wrong = SinkSpec("datahub-rest", {"server": gms.url, "token": "wrong"}, "datahub")
        refused = one_pass(bridge_for(tmp_path, (wrong,))).sink("datahub").waiting_on
    assert "DATAHUB_GMS_TOKEN" in refused and "wrong" not in refused and verdict(tmp_path) == FAILING
    unset = SinkSpec("datahub-rest", {"server": ""}, "datahub")
    (problem,) = one_pass(bridge_for(tmp_path, (unset,))).problems
    assert "DATAHUB_GMS_URL" in problem and verdict(tmp_path) == DAMAGED


def test_a_client_certificate_that_cannot_be_read_names_its_setting(tmp_path):
    from openlineage.client import OpenLineageClient
    from openlineage.client.transport.http import HttpConfig, HttpSslContextConfig, HttpTransport

    fill(tmp_path)
    missing = HttpSslContextConfig(client_cert_path=str(tmp_path / "client.pem"))
    client = OpenLineageClient(
        transport=HttpTransport(HttpConfig(url=f"https://127.0.0.1:{free_port()}", ssl_context=missing))
    )
    waiting = one_pass(bridge_for(tmp_path, (http_sink(client),))).sink("openlineage").waiting_on
    assert "clientCertPath" in waiting and verdict(tmp_path) == FAILING


def test_a_discarded_event_stays_discarded_after_the_outbox_is_rebuilt(tmp_path):
    queued = fill(tmp_path)
    refused = identity(queued[3])
    with LineageServer(refuse=lambda e: identity(e) == refused) as server:
        bridge = bridge_for(tmp_path, (http_sink(Auth("none", None).client(server.url)),))
        one_pass(bridge)
        outbox = Outbox(tmp_path / "outbox.sqlite")
        assert outbox.letters.discard() == 1
        outbox.close()
        server.refuse = lambda e: False  # the target would take it now: only the discard keeps it away

        def refill_and_pass() -> int:
            fill(tmp_path)  # the sources queue every run again
            return one_pass(bridge).health

        assert rebuild(bridge, "outbox", refill_and_pass) == HEALTHY
    received_once_each(server, queued, missing={refused})
    assert [identity(event) for event in server.refused] == [refused]
