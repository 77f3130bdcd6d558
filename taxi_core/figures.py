"""How a figure is shown to a person (Dagster's pages, cards, messages): rounded to what it means."""

from __future__ import annotations

import math

# Errors are in rides per hour: a thousandth of a ride tells candidates apart, a finer digit is noise.
RIDES_DECIMALS = 3
RATIO_DECIMALS = 3
PERCENT_DECIMALS = 1
SECONDS_DECIMALS = 1
PERCENT_SIGNIFICANT = 3


def rides(value: float) -> float:
    """A count of rides per hour (an error, a width, a forecast): to a thousandth."""
    return round(float(value), RIDES_DECIMALS)


def ratio(value: float) -> float:
    """A ratio (to seasonal naive, to the noise floor, to the recent months): to three decimals."""
    return round(float(value), RATIO_DECIMALS)


def percent(share: float) -> float:
    """A share (0.8013) as a percentage to one decimal (80.1), for a measure plotted over time."""
    return round(float(share) * 100, PERCENT_DECIMALS)


def seconds(value: float) -> float:
    return round(float(value), SECONDS_DECIMALS)


def percent_text(share: float) -> str:
    """A share as a percentage with three significant figures and no exponent: ``0.00232%``, ``1.3%``, ``100%``.

    For the shares an audit measures, where one row in three million (``0.0000333%``) must not read as none.
    """
    value = float(share) * 100
    if value == 0 or not math.isfinite(value):
        return f"{value:g}%"
    decimals = max(0, PERCENT_SIGNIFICANT - 1 - math.floor(math.log10(abs(value))))
    shown = f"{value:.{decimals}f}"
    if "." in shown:
        shown = shown.rstrip("0").rstrip(".")
    return f"{shown}%"
