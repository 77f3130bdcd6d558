"""How much history a model version needs, which sets the first day the daily loop can forecast.

A training run backtests ``selection_weeks + evaluation_weeks`` weeks before its origin, the first fitted on at
least ``LEAST_TRAINING_DAYS`` of actuals: with the flow's defaults no version can start forecasting earlier than
that many days after the first published month begins.
"""

from __future__ import annotations

from datetime import date, timedelta

EVALUATION_WEEKS = 4
SELECTION_WEEKS = 2
LEAST_TRAINING_DAYS = 14


def least_history_days(evaluation_weeks: int = EVALUATION_WEEKS, selection_weeks: int = SELECTION_WEEKS) -> int:
    """Days of actuals a run with these backtest weeks needs before its origin."""
    return (evaluation_weeks + selection_weeks) * 7 + LEAST_TRAINING_DAYS


def first_forecastable_day(first_day: date) -> date:
    """The first day a version trained with the flow's defaults on actuals from ``first_day`` can forecast."""
    return first_day + timedelta(days=least_history_days())
