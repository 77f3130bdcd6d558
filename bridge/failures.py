"""What a sink's failure means: wait and retry in order, or give up on that one event; and errors fit to print.

Retryable: the backend is away or busy (connection refused, timeouts, HTTP 5xx, 408, 429, a locked
or unreadable store). Permanent: the backend read the event and refused it (any other 4xx), or the
event could not be serialised or translated. Anything unknown is retryable: waiting loses nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RETRYABLE_STATUS = frozenset({408, 425, 429})
_CREDENTIALS = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s:]+(?::[^/@\s]*)?@")


class Unsendable(Exception):
    """The event cannot be serialised or translated for this sink: sending it again cannot help."""


@dataclass(frozen=True)
class Failure:
    permanent: bool
    reason: str


def redact(text: str) -> str:
    """``text`` with any ``user:password@`` in a URL replaced by ``***@``."""
    return _CREDENTIALS.sub(r"\g<scheme>***@", text)


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
            except (TypeError, ValueError):
                return None
        err = err.__cause__
    return None


def classify(err: BaseException) -> Failure:
    reason = redact(f"{type(err).__name__}: {err}".strip())
    if isinstance(err, Unsendable):
        return Failure(permanent=True, reason=redact(str(err)))
    status = http_status(err)
    if status is not None and 400 <= status < 500 and status not in RETRYABLE_STATUS:
        return Failure(permanent=True, reason=f"HTTP {status}: {reason}")
    if status is not None:
        return Failure(permanent=False, reason=f"HTTP {status}: {reason}")
    return Failure(permanent=False, reason=reason)
