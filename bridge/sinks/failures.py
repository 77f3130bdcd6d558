"""What a sink's failure means, and errors fit to print.

Four kinds, each with its own treatment in :mod:`bridge.sinks.drain`:

- ``refused``: the target read the event and refused it (a 4xx other than those below), or the event
  cannot be serialised or translated. Sending it again cannot help: it is parked at once.
- ``credentials``: the target refused who we are (401, 403), or we do not trust who it is (its TLS
  certificate). Every event would get the same answer, so the whole sink waits, and the reason names
  the setting to fix.
- ``away``: the target cannot be reached, is overloaded or gave no answer (connection errors, 429, a 503
  with ``Retry-After``, a redirect, a locked store, anything unknown). The whole sink waits and backs off: waiting loses
  nothing. The reason names where the target is set.
- ``this event``: the target failed on this one event but may not next time (every 5xx, 408, 425, or
  the connection closed before the answer: it may have the event, so it is not sent again in the same pass). The
  event waits and backs off on its own; the rest of the queue goes on (:mod:`bridge.sinks.drain` decides
  when so many fail in a row that the target itself is failing).

A target's ``Retry-After`` (seconds or an HTTP date) is honoured, up to ``RETRY_AFTER_LIMIT_SECONDS``: nothing is
sent to it sooner. Every reason is one line without credentials: a refusal keeps the target's own words (the start
of its answer).
"""

from __future__ import annotations

import ssl
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Literal

from bridge.errors import BridgeError
from bridge.redaction import redact

FailureKind = Literal["refused", "credentials", "away", "this event"]

CREDENTIAL_STATUS = frozenset({401, 403})
AWAY_STATUS = frozenset({429})
UNAVAILABLE = 503  # with a Retry-After, the whole target is unavailable for that long
RETRY_EVENT_STATUS = frozenset({408, 425})
TLS_SETTINGS = (
    "the target's TLS certificate is not trusted: give its CA bundle (sslContext.caCertPath in openlineage.yml, "
    "REQUESTS_CA_BUNDLE, or DataHub's ca_certificate_path)"
)
UNREADABLE_CERTIFICATE = (
    "the client certificate or key cannot be read: set sslContext.clientCertPath and clientKeyPath in "
    "openlineage.yml to readable PEM files"
)
ANSWER_SHOWN = 300  # characters of a refusal's answer kept in its reason
# A target asking for longer (or a clock far off) is tried again after this, rather than in days.
RETRY_AFTER_LIMIT_SECONDS = 900.0


class Unsendable(BridgeError):
    """The event cannot be serialised or translated for this sink: sending it again cannot help."""


class NoAnswer(BridgeError):
    """The request was sent and no answer came within ``waited`` seconds: the target may have the event, or not.

    The target may still be taking it in: it is not sent again for at least as long.
    """

    def __init__(self, message: str, waited: float) -> None:
        super().__init__(message)
        self.waited = waited


@dataclass(frozen=True)
class Failure:
    kind: FailureKind
    reason: str
    wait_at_least: float = 0.0  # seconds before the next attempt, whatever the backoff

    @property
    def permanent(self) -> bool:
        return self.kind == "refused"

    @property
    def whole_sink(self) -> bool:
        """Every event would fail the same way now: the sink waits, in order."""
        return self.kind in ("credentials", "away")


def http_status(err: BaseException | None) -> int | None:
    """The HTTP status an error carries: requests' ``HTTPError``, DataHub's ``OperationalError``, or their causes."""
    while err is not None:
        status = getattr(getattr(err, "response", None), "status_code", None) or getattr(err, "status", None)
        info = getattr(err, "info", None)
        if status is None and isinstance(info, dict):
            status = info.get("status") or info.get("status_code")
        if status is not None:
            try:
                return int(status)
            except (TypeError, ValueError):  # int()'s own answer to a status that is no number
                return None
        err = err.__cause__
    return None


def retry_after(err: BaseException | None, now: float | None = None) -> float | None:
    """The seconds the target asked to be left alone (its ``Retry-After``), bounded; ``None`` when it did not ask."""
    while err is not None:
        headers = getattr(getattr(err, "response", None), "headers", None)
        said = headers.get("Retry-After") if headers is not None else None
        if said is not None:
            return _seconds_asked(str(said).strip(), time.time() if now is None else now)
        err = err.__cause__
    return None


def _seconds_asked(said: str, now: float) -> float | None:
    if said.isdigit():
        seconds = float(said)
    else:
        try:
            seconds = parsedate_to_datetime(said).timestamp() - now
        except (TypeError, ValueError):  # neither seconds nor an HTTP date: not a request we can honour
            return None
    return min(max(seconds, 0.0), RETRY_AFTER_LIMIT_SECONDS)


def _untrusted_certificate(err: BaseException | None) -> bool:
    seen = 0
    while err is not None and seen < 10:
        if isinstance(err, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(err):
            return True
        err, seen = err.__cause__ or err.__context__, seen + 1
    return False


def answer_text(err: BaseException | None) -> str:
    """The start of the answer the target gave with an error, on one line ("" when none)."""
    while err is not None:
        response = getattr(err, "response", None)
        text = getattr(response, "text", None)
        if isinstance(text, str) and text.strip():
            one_line = " ".join(text.split())
            return one_line[:ANSWER_SHOWN] + ("..." if len(one_line) > ANSWER_SHOWN else "")
        err = err.__cause__
    return ""


def _unreadable_certificate(err: BaseException) -> bool:
    text = str(err)
    return isinstance(err, OSError) and ("certificate file" in text or "key file" in text or "cert_file" in text)


def _closed_without_an_answer(err: BaseException | None) -> bool:
    """The connection was open and the target closed it before answering this request (by name: the classes are
    the standard library's and ``urllib3``'s, raised through ``requests``)."""
    seen = 0
    while err is not None and seen < 10:
        if type(err).__name__ in ("RemoteDisconnected", "IncompleteRead") or isinstance(
            err, ConnectionResetError | BrokenPipeError
        ):
            return True
        err, seen = err.__cause__ or err.__context__, seen + 1
    return False


def classify(
    err: BaseException,
    credentials_setting: str = "the target's credentials",
    target_setting: str = "the target's address",
) -> Failure:
    """What ``err`` from a sink means; ``credentials_setting`` and ``target_setting`` are where a user sets the
    sink's credentials and its target, named in the reason."""
    reason = redact(" ".join(f"{type(err).__name__}: {err}".split()))
    if isinstance(err, Unsendable):
        return Failure("refused", redact(str(err)))
    if isinstance(err, NoAnswer):
        return Failure("away", redact(str(err)), wait_at_least=err.waited)
    if _untrusted_certificate(err):
        return Failure("credentials", f"{reason}; {TLS_SETTINGS}")
    if _unreadable_certificate(err):
        return Failure("credentials", f"{reason}; {UNREADABLE_CERTIFICATE}")
    status = http_status(err)
    if status in CREDENTIAL_STATUS:
        return Failure("credentials", f"HTTP {status}: the target refused the credentials; check {credentials_setting}")
    if status is None and _closed_without_an_answer(err):  # it may have the event: not sent again in this pass
        return Failure("this event", f"{reason}; the target closed the connection without an answer")
    if status is None:
        return Failure("away", f"{reason}; check that the target runs and {target_setting}")
    answer = redact(answer_text(err))
    said = f"HTTP {status}: {reason}" + (f"; the target said: {answer}" if answer else "")
    wait = retry_after(err)
    if wait is not None:
        said += f"; it asked to be left alone for {wait:.0f} s (Retry-After)"
    if status in AWAY_STATUS or (status == UNAVAILABLE and wait is not None):
        return Failure("away", said, wait or 0.0)
    if status in RETRY_EVENT_STATUS or status >= 500:
        return Failure("this event", said, wait or 0.0)
    if 300 <= status < 400:  # every event would be sent elsewhere: the target's address is wrong, or it moved
        return Failure("away", f"{said}; it answers with a redirect: check {target_setting}", wait or 0.0)
    if 400 <= status < 500:
        return Failure("refused", said)
    return Failure("away", said)
