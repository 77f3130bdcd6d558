"""Monthly partitions: one partition key, one source month, one half-open time window."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class MonthWindow:
    start: datetime
    end: datetime

    @classmethod
    def from_partition_key(cls, partition_key: str) -> MonthWindow:
        start = datetime.strptime(partition_key[:7], "%Y-%m")
        end = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
        return cls(start, end)

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
