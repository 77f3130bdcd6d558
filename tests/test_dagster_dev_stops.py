"""``./run dagster dev`` stops on SIGINT, SIGTERM or Ctrl-C, however it was started, and leaves no process of its own
behind within 15 s (the cases run in the background lane: :mod:`tests.dagster_dev_stops`)."""

from __future__ import annotations

import pytest

from tests.dagster_dev_stops import CASES, STOP_SECONDS

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def dev_stops(end_to_end) -> dict[str, dict]:
    outcomes: list[dict] = end_to_end.outcome("dagster-dev-stops")
    return {outcome["case"]: outcome for outcome in outcomes}


@pytest.mark.parametrize("case", [case.name for case in CASES])
def test_dagster_dev_stops_and_leaves_nothing(dev_stops, case):
    outcome = dev_stops[case]
    assert outcome["error"] is None, outcome["error"]
    assert outcome["watcher_started"], outcome  # it was all up: webserver, daemon, code server, the watcher
    assert outcome["left"] == {} and outcome["stop_seconds"] <= STOP_SECONDS, outcome
