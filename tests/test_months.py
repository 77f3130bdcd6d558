"""One parser for every place a month enters: the demo's --months, the settings, a partition key."""

import argparse
import re
from datetime import date

import pytest

from taxi_core.months import MonthInvalid, MonthWindow, parse_month
from taxi_demo.cli import checked_months

TODAY = date(2026, 11, 26)


@pytest.mark.parametrize(
    ("text", "month"), [("2025-01", "2025-01"), ("2025-01-01", "2025-01"), (" 2024-12 ", "2024-12")]
)
def test_a_month_is_read_as_yyyy_mm(text, month):
    assert parse_month(text, today=TODAY) == month


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("2025-1", "is not a month: write it as YYYY-MM"),
        ("2025-1-01", "is not a month"),
        ("2025-13", "is not a month"),
        ("2025-02-15", "is not a month"),
        ("January", "is not a month"),
        ("2031-02", "2031-02 has not ended yet (today is 2026-11-26)"),
        ("2026-11", "2026-11 has not ended yet"),
    ],
)
def test_anything_else_is_refused_with_the_fix(text, says):
    with pytest.raises(MonthInvalid, match=re.escape(says)):
        parse_month(text, today=TODAY)


def test_the_demo_refuses_a_month_before_anything_is_written():
    with pytest.raises(
        argparse.ArgumentTypeError, match=r"--months '2031-02': 2031-02 has not ended yet.*Nothing was written"
    ):
        checked_months(["2025-01", "2031-02"], today=TODAY)
    with pytest.raises(argparse.ArgumentTypeError, match=r"--months '2025-1': '2025-1' is not a month"):
        checked_months(["2025-1"], today=TODAY)
    assert checked_months(["2025-01", "2024-12", "2025-01-01"], today=TODAY) == ["2024-12", "2025-01"]


def test_a_partition_key_written_another_way_is_refused_naming_it():
    with pytest.raises(MonthInvalid, match=r"'2025-1-01' is not a month"):
        MonthWindow.from_partition_key("2025-1-01")
