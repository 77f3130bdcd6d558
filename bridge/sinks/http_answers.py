"""What counts as an HTTP target's acceptance: a success (2xx), nothing else.

The OpenLineage client and DataHub's REST emitter raise for 4xx and 5xx answers only; a redirect they did
not follow (3xx) would pass for a delivered event, and one they followed (to a login page) too: the
event would be lost. These hooks, on their requests sessions, make every other answer an error that
:func:`bridge.sinks.failures.classify` judges.
"""

from __future__ import annotations

from typing import Any

from requests import HTTPError, Response


def only_a_success(response: Response, *args: Any, **kwargs: Any) -> None:
    """A requests response hook: an answer that is no success raises, carrying the response."""
    if not 200 <= response.status_code < 300:
        raise HTTPError(f"{response.status_code} {response.reason} for url: {response.url}", response=response)


class Redirects:
    """A requests response hook that notes redirects instead of raising (for a client whose own error handling
    needs the response: DataHub's emitter); :meth:`raise_noted` after the call raises for the first one noted."""

    def __init__(self) -> None:
        self.noted: list[Response] = []

    def __call__(self, response: Response, *args: Any, **kwargs: Any) -> None:
        if 300 <= response.status_code < 400:
            self.noted.append(response)

    def raise_noted(self) -> None:
        noted, self.noted = self.noted, []
        if noted:
            only_a_success(noted[0])
