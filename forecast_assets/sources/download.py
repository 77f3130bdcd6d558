"""Fetch a source file over http(s) or file://, skipping it when the source has not changed."""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import shutil
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from taxi_core.errors import PipelineError
from taxi_core.files import atomic_path

log = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20
PROGRESS_MIN_BYTES = 8 << 20  # smaller files arrive too fast for progress lines to help
TIMEOUT_SECONDS = 60  # a read that waits this long on a live connection is a stall
ATTEMPTS = 4
MISSING_STATUSES = (403, 404, 410)  # TLC's CDN answers 403 for a month it has not published
USER_AGENT = "taxi-demand-lineage/0.1"
# A message names the setting of the source's base URL; callers that know the source name it exactly.
BASE_URL_SETTING = "the source's TAXI_<SOURCE>_BASE_URL"

Progress = Callable[[str], None]


class SourceMissing(FileNotFoundError, PipelineError):
    """The source has no file at this address (a month not published yet, a wrong base URL)."""


class SourceInvalid(ValueError, PipelineError):
    """The file arrived but is not what its name promises."""


@dataclass(frozen=True)
class FetchRecord:
    """What is known about a staged file; kept beside it so the next fetch can skip it."""

    url: str
    fingerprint: str
    size: int
    etag: str | None
    last_modified: str | None
    fetched_at: str
    rows: int | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> FetchRecord:
        return cls(**json.loads(text))


@dataclass(frozen=True)
class Fetched:
    """A fresh download waiting in ``path`` to be verified and staged."""

    path: Path
    record: FetchRecord


@dataclass(frozen=True)
class RetryPolicy:
    """How hard a download tries: attempts, exponential waits between them, and the read timeout."""

    attempts: int = ATTEMPTS
    first_wait_seconds: float = 2.0
    max_wait_seconds: float = 30.0
    read_timeout_seconds: float = TIMEOUT_SECONDS


DEFAULT_RETRY = RetryPolicy()
# A HEAD is a cheap look (the sensor asks for several URLs in one tick): one quick retry, then give up;
# a stalled HEAD costs at most about 31 s, within a sensor tick.
HEAD_RETRY = RetryPolicy(attempts=2, first_wait_seconds=1.0, max_wait_seconds=1.0, read_timeout_seconds=15.0)
# Failures of the network or the server that another attempt may get past; local disk errors are not among them.
NETWORK_ERRORS = (ConnectionError, TimeoutError, ssl.SSLError, http.client.HTTPException)

T = TypeVar("T")


class SourceUnavailable(ConnectionError, PipelineError):
    """The source could not be downloaded, even after retries."""


class _TransientFault(Exception):
    """One failed attempt that another attempt may get past; ``reason`` says what happened in plain words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def fetch_if_changed(
    url: str,
    previous: FetchRecord | None,
    workdir: Path,
    progress: Progress = log.info,
    policy: RetryPolicy = DEFAULT_RETRY,
    setting: str = BASE_URL_SETTING,
) -> Fetched | None:
    """Download ``url`` into ``workdir``; ``None`` when it matches ``previous``.

    Resets, cut bodies, stalls and 5xx answers are retried with exponential backoff; after the last
    attempt one ``SourceUnavailable`` names the URL, the cause and what to try (``setting``: the
    setting of the source's base URL, ``TAXI_TRIP_BASE_URL``).
    """
    return _with_retries(
        url,
        policy,
        progress,
        lambda: _fetch_once(url, previous, workdir, progress, policy.read_timeout_seconds, setting),
        failed=f"Could not download {url}",
        then=f"Check the network and the base URL ({setting}), then materialize the partition again",
    )


def _with_retries(
    url: str, policy: RetryPolicy, progress: Progress, attempt_once: Callable[[], T], failed: str, then: str
) -> T:
    """Run ``attempt_once`` until it gets past its ``_TransientFault``s or the attempts run out."""

    def report_retry(state: RetryCallState) -> None:
        fault = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action else 0.0
        progress(
            f"Attempt {state.attempt_number} of {policy.attempts} at {url} failed: {fault}; retrying in {wait:.1f} s"
        )

    retrying = Retrying(
        stop=stop_after_attempt(policy.attempts),
        wait=wait_exponential(multiplier=policy.first_wait_seconds, max=policy.max_wait_seconds),
        retry=retry_if_exception_type(_TransientFault),
        before_sleep=report_retry,
        reraise=True,
    )
    try:
        return retrying(attempt_once)
    except _TransientFault as fault:
        attempts = "1 attempt" if policy.attempts == 1 else f"{policy.attempts} attempts"
        msg = f"{failed}: {fault.reason} (after {attempts}). {then}."
        raise SourceUnavailable(msg) from fault.__cause__


def _fetch_once(
    url: str, previous: FetchRecord | None, workdir: Path, progress: Progress, timeout: float, setting: str
) -> Fetched | None:
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    if previous and previous.url == url and url.startswith("http"):
        if previous.etag:
            request.add_header("If-None-Match", previous.etag)
        if previous.last_modified:
            request.add_header("If-Modified-Since", previous.last_modified)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            etag = response.headers.get("ETag")
            last_modified = response.headers.get("Last-Modified")
            size = int(response.headers.get("Content-Length") or -1)
            if previous and _same_source(previous, url, etag, last_modified, size):
                return None
            return _stream(url, response, workdir, etag, last_modified, size, progress, timeout)
    except urllib.error.HTTPError as err:
        if err.code == 304:
            return None
        if err.code in MISSING_STATUSES:
            msg = f"{url} does not exist (HTTP {err.code})"
            raise SourceMissing(msg) from err
        if err.code >= 500 or err.code == 429:
            raise _TransientFault(f"the server answered HTTP {err.code} {err.reason}") from err
        msg = (
            f"Downloading {url} failed with HTTP {err.code} {err.reason}; check the base URL "
            f"({setting}) and any access the server needs"
        )
        raise SourceUnavailable(msg) from err
    except urllib.error.URLError as err:
        if isinstance(err.reason, FileNotFoundError):
            msg = f"{url} does not exist"
            raise SourceMissing(msg) from err
        raise _TransientFault(_plain(err.reason, timeout)) from err
    except NETWORK_ERRORS as err:
        raise _TransientFault(_plain(err, timeout)) from err


def _plain(cause: object, timeout: float) -> str:
    """A network failure in the words a user would use."""
    if isinstance(cause, TimeoutError):
        return f"no data arrived for {timeout:g} s"
    if isinstance(cause, http.client.RemoteDisconnected):  # before ConnectionResetError, its base class
        return "the server closed the connection without answering"
    if isinstance(cause, ConnectionResetError):
        return "the connection was reset"
    if isinstance(cause, ConnectionAbortedError):
        return "the connection was aborted"
    if isinstance(cause, ConnectionRefusedError):
        return "the connection was refused"
    if isinstance(cause, http.client.IncompleteRead):
        return "the body ended early"
    if isinstance(cause, socket.gaierror):
        return "the host name could not be resolved"
    return str(cause) or type(cause).__name__


def _same_source(previous: FetchRecord, url: str, etag: str | None, last_modified: str | None, size: int) -> bool:
    if previous.url != url:
        return False
    if etag and previous.etag:
        return etag == previous.etag
    return bool(last_modified) and last_modified == previous.last_modified and size == previous.size


def _stream(
    url: str,
    response: http.client.HTTPResponse,
    workdir: Path,
    etag: str | None,
    last_modified: str | None,
    size: int,
    progress: Progress,
    timeout: float,
) -> Fetched:
    name = url.rstrip("/").rsplit("/", 1)[-1]
    workdir.mkdir(parents=True, exist_ok=True)
    target = workdir / name
    digest = hashlib.sha256()
    received, next_report = 0, 0.25
    try:
        with target.open("wb") as out:
            try:
                while chunk := response.read1(CHUNK_BYTES):  # what has arrived, so a cut is counted exactly
                    out.write(chunk)  # a local disk error is no network fault: it is not caught below
                    digest.update(chunk)
                    received += len(chunk)
                    if size > PROGRESS_MIN_BYTES and received / size >= next_report:
                        progress(f"{name}: {received / 1e6:.1f} of {size / 1e6:.1f} MB")
                        next_report += 0.25
            except NETWORK_ERRORS as err:
                of_size = f" of {size:,}" if size > 0 else ""
                raise _TransientFault(f"{_plain(err, timeout)} at byte {received:,}{of_size}") from err
        if size > 0 and received != size:
            raise _TransientFault(f"the download was cut off: received {received:,} of {size:,} bytes")
    except BaseException:
        target.unlink(missing_ok=True)  # the next attempt starts from an empty file
        raise
    record = FetchRecord(
        url=url,
        fingerprint=f"sha256:{digest.hexdigest()}",
        size=received,
        etag=etag,
        last_modified=last_modified,
        fetched_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    return Fetched(path=target, record=record)


def copy_atomically(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as tmp:
        shutil.copyfile(source, tmp)


def source_version(
    url: str, progress: Progress = log.info, policy: RetryPolicy = HEAD_RETRY, setting: str = BASE_URL_SETTING
) -> str | None:
    """A cheap look at whether ``url`` exists: its ETag or Last-Modified, ``None`` when it is absent.

    Transient faults get ``policy``'s retries; then ``SourceUnavailable``, as for a download.
    """
    return _with_retries(
        url,
        policy,
        progress,
        lambda: _head_once(url, policy.read_timeout_seconds, setting),
        failed=f"Could not look up {url}",
        then=f"Check the network and the base URL ({setting}), then look again",
    )


def _head_once(url: str, timeout: float, setting: str) -> str | None:
    request = urllib.request.Request(url, method="HEAD", headers={"User-Agent": USER_AGENT})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.headers.get("ETag") or response.headers.get("Last-Modified") or "present"
    except urllib.error.HTTPError as err:
        if err.code in MISSING_STATUSES:
            return None
        if err.code >= 500 or err.code == 429:
            raise _TransientFault(f"the server answered HTTP {err.code} {err.reason}") from err
        msg = f"Looking up {url} failed with HTTP {err.code} {err.reason}; check the base URL ({setting})"
        raise SourceUnavailable(msg) from err
    except urllib.error.URLError as err:
        if isinstance(err.reason, FileNotFoundError):
            return None
        raise _TransientFault(_plain(err.reason, timeout)) from err
    except NETWORK_ERRORS as err:
        raise _TransientFault(_plain(err, timeout)) from err
