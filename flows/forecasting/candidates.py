"""The candidate forecasters, built-in and installed, by name: what the flow backtests, selects among and serves.

A candidate is a factory (a class or a function taking no argument) returning a
:class:`~flows.forecasting.models.Forecaster`. Built-in ones are named here as ``module:factory`` and imported only
when made. Another package adds one through the ``taxi_forecast.candidates`` entry-point group, as lineage sinks
are added, with no edit here::

    [project.entry-points."taxi_forecast.candidates"]
    trend = "my_package.models:Trend"

Every column a candidate reads is in what its ``used_features`` returns: a feature the flow builds, or a column of
the actuals itself (``pickup_hour`` for a trend); the model's and the forecasts' column lineage follow from it.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any

from flows.forecasting.models import Forecaster
from taxi_core.errors import PipelineError

ENTRY_POINT_GROUP = "taxi_forecast.candidates"
BUILT_IN = {
    "seasonal_naive": "flows.forecasting.models:SeasonalNaive",
    "glm": "flows.forecasting.models:PoissonGlm",
    "gbm": "flows.forecasting.models:GradientBoosting",
    "profile": "flows.forecasting.models:WeeklyProfile",
    "blend": "flows.forecasting.models:Blend",
    "glm_weather": "flows.forecasting.models:ExpectedWeatherGlm",
    "gbm_weather": "flows.forecasting.models:gbm_weather",
    "glm_perfect_weather": "flows.forecasting.models:glm_perfect_weather",
}
# The candidates that fit with pandas and numpy alone: their tasks need not load scikit-learn. Any other, an
# installed one included, is taken to need it.
WITHOUT_SCIKIT_LEARN = frozenset({"seasonal_naive", "profile"})


class UnknownCandidate(ValueError, PipelineError):
    """A candidate model named that neither this version of the flow nor an installed package has."""


class CandidateMisnamed(ValueError, PipelineError):
    """An installed candidate whose forecaster calls itself by another name than it is registered under."""


@cache
def _installed() -> dict[str, str]:
    """The candidates installed packages register, read once per process."""
    return {point.name: point.value for point in entry_points(group=ENTRY_POINT_GROUP)}


def candidates() -> dict[str, str]:
    """Every candidate that can be trained, with where its factory lives: the built-in ones first."""
    return BUILT_IN | {name: where for name, where in _installed().items() if name not in BUILT_IN}


def candidate_names() -> list[str]:
    return list(candidates())


def make_candidate(name: str) -> Forecaster:
    where = candidates().get(name)
    if where is None:
        msg = (
            f"Unknown candidate model {name!r}; choose from {', '.join(candidates())}, or install a package that "
            f"registers it ({ENTRY_POINT_GROUP})"
        )
        raise UnknownCandidate(msg)
    module, _, factory = where.partition(":")
    made: Any = getattr(import_module(module), factory)()
    if made.name != name:
        msg = f"Candidate {name!r} ({where}) makes a forecaster named {made.name!r}: register it under its own name"
        raise CandidateMisnamed(msg)
    found: Forecaster = made
    return found


def fits_with_scikit_learn(name: str) -> bool:
    return name not in WITHOUT_SCIKIT_LEARN


def uses_weather(name: str) -> bool:
    return make_candidate(name).weather is not None


def is_scenario(name: str) -> bool:
    """A candidate that uses what is not known at the forecast origin: reported, never champion."""
    return make_candidate(name).weather == "perfect"


def needs_weather(names: list[str]) -> bool:
    return any(uses_weather(name) for name in names)
