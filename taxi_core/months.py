"""Monthly partitions: one partition key, one source month, one half-open time window."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime

from taxi_core.errors import PipelineError

# A month as every entry point takes it: YYYY-MM, or its first day, YYYY-MM-01 (a Dagster partition key).
MONTH_TEXT = re.compile(r"(?P<year>\d{4})-(?P<month>\d{2})(?:-01)?")


class MonthInvalid(ValueError, PipelineError):
    """A month written another way than ``YYYY-MM``, or one no source can have yet."""


def parse_month(text: str, today: date | None = None, earliest: str = "") -> str:
    """``text`` as ``YYYY-MM``: strictly ``YYYY-MM`` or ``YYYY-MM-01``, a real month, and, given ``today``, one
    that has ended (no publisher has a month still under way, let alone a later one), not before ``earliest``."""
    found = MONTH_TEXT.fullmatch(text.strip())
    if found is None or not 1 <= int(found["month"]) <= 12:
        msg = f"{text!r} is not a month: write it as YYYY-MM (e.g. 2025-01), or as its first day, YYYY-MM-01"
        raise MonthInvalid(msg)
    month = f"{found['year']}-{found['month']}"
    if today is not None and month >= f"{today:%Y-%m}":
        msg = f"{month} has not ended yet (today is {today:%Y-%m-%d}): no source has it; pick one before {today:%Y-%m}"
        raise MonthInvalid(msg)
    if earliest and month < earliest:
        raise MonthInvalid(f"{month} is before {earliest}, the first month TLC publishes yellow-taxi trips for")
    return month


@dataclass(frozen=True)
class MonthWindow:
    start: datetime
    end: datetime

    @classmethod
    def from_partition_key(cls, partition_key: str) -> MonthWindow:
        """The month of ``YYYY-MM-01`` (or ``YYYY-MM``); anything else is refused, naming the key."""
        start = datetime.strptime(parse_month(partition_key), "%Y-%m")
        end = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
        return cls(start, end)

    @property
    def partition_key(self) -> str:
        """``YYYY-MM-01``, the month's Dagster partition key."""
        return f"{self.start:%Y-%m-%d}"

    @property
    def month(self) -> str:
        """``YYYY-MM``, as in TLC and NOAA file names."""
        return f"{self.start:%Y-%m}"

    @property
    def hours(self) -> int:
        return int((self.end - self.start).total_seconds() // 3600)

    @property
    def days(self) -> int:
        return (self.end - self.start).days
