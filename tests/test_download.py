"""The downloader over real HTTP on loopback and over file://: skip unchanged, name what is missing."""

import hashlib
import http.client
import socket
import urllib.error

import pytest

from forecast_assets.source_specs.yellow_trips import YELLOW
from forecast_assets.sources.download import (
    RetryPolicy,
    SourceMissing,
    SourceUnavailable,
    fetch_if_changed,
    source_version,
)
from forecast_assets.sources.stage import stage_file
from forecast_assets.sources.staging import LocalStaging
from forecast_assets.sources.verify import verify_trip_file
from taxi_core.months import MonthWindow
from tests.hostile_server import (
    CUT_CHUNKED,
    CUT_LENGTH,
    GOOD,
    MISSING,
    RESET,
    STALL,
    UNAUTHORIZED,
    UNAVAILABLE,
    HostileServer,
)


def _stage(url, staging, tmp_path):
    return stage_file(
        url,
        "taxi/" + url.rsplit("/", 1)[-1],
        staging,
        lambda p: verify_trip_file(p, url, YELLOW, "TAXI_TRIP_BASE_URL"),
        tmp_path / "work",
        progress=lambda message: None,
    )


def test_http_download_is_skipped_when_the_source_is_unchanged(sample_server, tmp_path):
    staging = LocalStaging(tmp_path / "staging")
    url = f"{sample_server}/trip-data/{YELLOW.file_name('2025-01')}"
    first = _stage(url, staging, tmp_path)
    second = _stage(url, staging, tmp_path)
    assert first.downloaded and first.content_changed and first.record.rows > 0
    assert not second.downloaded
    assert second.record == first.record


def test_file_url_download_is_skipped_when_unchanged(sample_source, tmp_path):
    staging = LocalStaging(tmp_path / "staging")
    url = f"{sample_source.base_urls['trip']}/{YELLOW.file_name('2024-12')}"
    assert _stage(url, staging, tmp_path).downloaded
    assert not _stage(url, staging, tmp_path).downloaded


def test_a_changed_source_is_fetched_again(sample_source, tmp_path):
    staging = LocalStaging(tmp_path / "staging")
    url = f"{sample_source.base_urls['trip']}/{YELLOW.file_name('2024-12')}"
    first = _stage(url, staging, tmp_path)
    previous = first.record.__class__(**{**first.record.__dict__, "last_modified": "Mon, 01 Jan 2024 00:00:00 GMT"})
    refetched = fetch_if_changed(url, previous, tmp_path / "again")
    assert refetched is not None and refetched.record.fingerprint == first.record.fingerprint


@pytest.mark.parametrize("scheme", ["http", "file"])
def test_a_missing_month_raises_source_missing(scheme, sample_server, sample_source, tmp_path):
    base = sample_server + "/trip-data" if scheme == "http" else sample_source.base_urls["trip"]
    url = f"{base}/{YELLOW.file_name('2031-05')}"
    with pytest.raises(SourceMissing, match="yellow_tripdata_2031-05.parquet"):
        fetch_if_changed(url, None, tmp_path)
    assert source_version(url) is None


def test_source_version_sees_a_published_file(sample_server):
    assert source_version(f"{sample_server}/trip-data/{YELLOW.file_name('2025-01')}")


FAST = RetryPolicy(attempts=3, first_wait_seconds=0.05, max_wait_seconds=0.1, read_timeout_seconds=0.5)


@pytest.fixture
def trip_bytes(sample_source):
    return sample_source.trip_path("2025-01").read_bytes()


def _fetch(server, tmp_path, messages=None):
    url = f"{server.url}/trip-data/{YELLOW.file_name('2025-01')}"
    progress = messages.append if messages is not None else (lambda message: None)
    return url, fetch_if_changed(url, None, tmp_path / "work", progress, FAST, setting="TAXI_TRIP_BASE_URL")


@pytest.mark.parametrize(
    "fault", [RESET, CUT_CHUNKED, CUT_LENGTH, STALL, UNAVAILABLE], ids=lambda fault: f"{fault}_then_good"
)
def test_a_passing_network_fault_is_retried_and_the_file_arrives_whole(fault, trip_bytes, tmp_path):
    messages = []
    with HostileServer(trip_bytes, [fault, fault, GOOD], stall_seconds=1.0) as server:
        url, fetched = _fetch(server, tmp_path, messages)
    assert server.requests == 3
    assert fetched.record.fingerprint == f"sha256:{hashlib.sha256(trip_bytes).hexdigest()}"
    assert fetched.path.read_bytes() == trip_bytes
    assert [m.startswith(f"Attempt {n} of 3 at {url} failed") for n, m in enumerate(messages, start=1)] == [True] * 2
    assert list((tmp_path / "work").iterdir()) == [fetched.path]  # no partial file left behind


@pytest.mark.parametrize(
    ("fault", "reason", "cause"),
    [
        (RESET, "the connection was reset", ConnectionResetError),
        (CUT_CHUNKED, "the body ended early at byte ", http.client.IncompleteRead),
        (CUT_LENGTH, "the download was cut off: received", type(None)),  # noticed by the downloader itself
        (STALL, "no data arrived for 0.5 s", TimeoutError),
        (UNAVAILABLE, "the server answered HTTP 503", urllib.error.HTTPError),
    ],
)
def test_a_lasting_network_fault_fails_once_with_the_url_and_what_to_try(fault, reason, cause, trip_bytes, tmp_path):
    messages = []
    with HostileServer(trip_bytes, [fault], stall_seconds=1.0) as server, pytest.raises(SourceUnavailable) as failure:
        _fetch(server, tmp_path, messages)
    message = str(failure.value)
    assert server.requests == FAST.attempts
    assert len(messages) == FAST.attempts - 1  # one line per retry
    assert message.startswith(f"Could not download {server.url}/trip-data/{YELLOW.file_name('2025-01')}: {reason}")
    assert "after 3 attempts" in message and "materialize the partition again" in message
    assert "TAXI_TRIP_BASE_URL" in message and "Traceback" not in message
    assert isinstance(failure.value.__cause__, cause)  # the original error, for debugging
    if fault == CUT_CHUNKED:  # the bytes that did arrive are counted
        assert f"at byte {len(trip_bytes) // 2:,} (after 3 attempts)" in message
    assert not any((tmp_path / "work").glob("*"))  # no partial file left behind


def test_a_refused_connection_is_retried_then_named(tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/trip-data/{YELLOW.file_name('2025-01')}"
    messages = []
    with pytest.raises(SourceUnavailable, match="the connection was refused .after 3 attempts"):
        fetch_if_changed(url, None, tmp_path / "work", messages.append, FAST)
    assert len(messages) == 2 and messages[0].startswith(f"Attempt 1 of 3 at {url} failed: the connection was refused")


def test_a_missing_file_is_not_retried(trip_bytes, tmp_path):
    with HostileServer(trip_bytes, [MISSING]) as server, pytest.raises(SourceMissing, match="HTTP 404"):
        _fetch(server, tmp_path)
    assert server.requests == 1


def test_a_refused_request_is_not_retried(trip_bytes, tmp_path):
    with HostileServer(trip_bytes, [UNAUTHORIZED]) as server, pytest.raises(SourceUnavailable, match="HTTP 401"):
        _fetch(server, tmp_path)
    assert server.requests == 1


@pytest.mark.parametrize(("plan", "requests"), [([RESET, GOOD], 2), ([UNAVAILABLE, GOOD], 2), ([MISSING], 1)])
def test_source_version_gets_past_a_passing_fault(plan, requests, trip_bytes):
    with HostileServer(trip_bytes, plan) as server:
        version = source_version(f"{server.url}/trip-data/{YELLOW.file_name('2025-01')}", policy=FAST)
    assert server.requests == requests
    assert (version is None) is (plan == [MISSING])


def test_source_version_names_a_lasting_fault_and_the_sources_setting(trip_bytes):
    with HostileServer(trip_bytes, [RESET]) as server, pytest.raises(SourceUnavailable) as failure:
        source_version(f"{server.url}/misc/taxi_zone_lookup.csv", policy=FAST, setting="TAXI_ZONES_BASE_URL")
    assert server.requests == FAST.attempts
    assert str(failure.value).startswith(f"Could not look up {server.url}/misc/")
    assert "(TAXI_ZONES_BASE_URL), then look again" in str(failure.value)


def test_a_month_the_sample_source_lacks_names_the_command_that_writes_it(tmp_path):
    from forecast_assets.assets.source_files import _missing
    from forecast_assets.source_specs.registry import source_named
    from forecast_assets.sources.download import SourceMissing

    trips = source_named("trip")

    folder = tmp_path / "trip-data"
    folder.mkdir()
    for month in ("2024-12", "2025-01"):
        (folder / f"yellow_tripdata_{month}.parquet").write_bytes(b"")
    url = (folder / "yellow_tripdata_2025-03.parquet").as_uri()
    said = _missing(SourceMissing(f"{url} does not exist"), url, trips, MonthWindow.from_partition_key("2025-03-01"))
    assert "`./run demo --months 2025-03`" in said and "(2024-12, 2025-01)" in said and "TLC" not in said
    remote = "https://d37ci6vzurychx.cloudfront.net/trip-data/yellow_tripdata_2031-03.parquet"
    said = _missing(SourceMissing(f"{remote}: 403"), remote, trips, MonthWindow.from_partition_key("2031-03-01"))
    assert "TLC publishes a month some weeks after it ends" in said and "./run demo" not in said
    assert "TAXI_TRIP_BASE_URL" in said
