"""The layout of a TLC trip-record file family (yellow, green...), declared once, and how a file is held to it.

TLC publishes each service's trips as ``{service}_tripdata_YYYY-MM.parquet``. The columns drifted across the
years: capitalisation (``Airport_fee``), integer widths, integers or floats for counts, columns added later.
A layout names the raw table's columns and the Spark type each is kept as; which drift a file may show follows
from that type, so one check serves every service.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from taxi_core.errors import PipelineError

# What a file must hold for a column kept as each Spark type: ids are integers of any width; counts, codes and
# amounts came as integers in some years and as floats in others ("number").
FILE_TYPE_OF_TABLE_TYPE = {
    "int": "integer",
    "bigint": "number",
    "double": "number",
    "string": "string",
    "timestamp_ntz": "timestamp",
}
ACCEPTED_FAMILIES = {"number": frozenset({"integer", "float"})}
# Every TLC trip layout names its zones so; the calendar, the zone audits and the actuals read them by these names.
ZONE_COLUMNS = ("pulocationid", "dolocationid")
NUMBER_TYPES = frozenset({"int", "bigint", "double"})


@dataclass(frozen=True)
class TripDraw:
    """A month's trips as the demo's sample draws them for every layout, one value per trip, by role: a layout's
    own columns (:attr:`TripSample.drawn`) are computed from these."""

    pickup: np.ndarray  # datetime64[s], the meter engaged
    dropoff: np.ndarray
    minutes: np.ndarray  # the trip's duration
    distance: np.ndarray  # miles
    fare: np.ndarray  # the metered fare, dollars
    tip: np.ndarray
    tolls: np.ndarray
    pickup_zone: np.ndarray
    dropoff_zone: np.ndarray


# A column of a layout's own, computed from the month's trips and a random stream of the layout's own.
DrawColumn = Callable[[TripDraw, np.random.Generator], np.ndarray]


@dataclass(frozen=True)
class TripSample:
    """What the demo's sample source writes for a layout: its service's share of the city's demand, where it picks
    up, and how to draw the columns only this layout has (the family's columns are drawn by role).

    ``choices`` draws a column from values with weights; ``drawn`` computes one from the trips (a request time
    before the pickup, a driver's pay from the fare); ``stream`` is the random stream of its trips, so a new
    layout's sample never changes another's files.
    """

    share: float
    stream: int
    boroughs: frozenset[str] | None = None  # None: everywhere
    airports: bool = True  # whether it picks up at the airports
    choices: Mapping[str, tuple[tuple[int | float | str, ...], tuple[float, ...]]] = field(default_factory=dict)
    drawn: Mapping[str, DrawColumn] = field(default_factory=dict)


class LayoutError(ValueError, PipelineError):
    """A trip layout that does not declare what its family reads, or declares it with the wrong types."""


@dataclass(frozen=True)
class TripLayout:
    """One TLC trip-file family: its file names, the raw table's columns and the drift its files may show."""

    service: str
    # The raw table's TLC columns by lower-cased name, in table order: the Spark type each is kept as.
    columns: Mapping[str, str]
    descriptions: Mapping[str, str]
    # When the meter was engaged and disengaged: TLC's wall-clock times, a column per service.
    pickup: str
    dropoff: str
    # Columns not in every year's files (added later, or left out some years); the others every file must have.
    optional: frozenset[str]
    # The schema TLC published for a year's files: what the sample source writes, and what tests hold verify to.
    published_schema: Callable[[int], pa.Schema]
    # Optional columns TLC's files carry but leave empty on every trip: no year is told by them.
    left_empty: frozenset[str] = frozenset()
    # What the family's audits read, by role: who sent each record (with the times, zones, distance and charges,
    # a trip's identity: TLC publishes no trip id), how far it went, what it cost (each must not be negative).
    identity: tuple[str, ...] = field(kw_only=True)
    distance: str | None = field(kw_only=True)
    charges: tuple[str, ...] = field(kw_only=True)
    # How the demo's sample source writes this layout's files (None: it writes none).
    sample: TripSample | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        problems = self.declaration_problems()
        if problems:
            msg = f"The TLC {self.service} trip layout is not declared right: {'; '.join(problems)}"
            raise LayoutError(msg)

    def declaration_problems(self) -> list[str]:
        """What the layout's roles name that its columns do not hold, or hold with a type the family cannot read."""
        problems = []
        for role, names, types in (
            ("pickup", (self.pickup,), {"timestamp_ntz"}),
            ("dropoff", (self.dropoff,), {"timestamp_ntz"}),
            ("zones", ZONE_COLUMNS, {"int"}),
            ("identity", self.identity, None),
            ("distance", (self.distance,) if self.distance else (), NUMBER_TYPES),
            ("charges", self.charges, NUMBER_TYPES),
        ):
            for name in names:
                kind = self.columns.get(name)
                if kind is None:
                    problems.append(f"{role} names {name!r}, which is not one of its columns")
                elif types is not None and kind not in types:
                    problems.append(f"{role} column {name!r} is {kind}, where the family reads {' or '.join(types)}")
        if not self.identity:
            problems.append("identity names no column")
        for name in sorted((self.optional | self.left_empty) - set(self.columns)):
            problems.append(f"optional column {name!r} is not one of its columns")
        problems += [f"left_empty column {name!r} is not optional" for name in sorted(self.left_empty - self.optional)]
        drawn = {*self.sample.choices, *self.sample.drawn} - set(self.columns) if self.sample else set()
        problems += [f"sample draws {name!r}, which is not one of its columns" for name in sorted(drawn)]
        problems += [
            f"{role} column {name!r} is optional" for role, name in self._required_roles() if name in self.optional
        ]
        return problems

    def _required_roles(self) -> list[tuple[str, str]]:
        return [("pickup", self.pickup), ("dropoff", self.dropoff), ("zones", ZONE_COLUMNS[0])]

    @property
    def file_pattern(self) -> re.Pattern[str]:
        return re.compile(rf"{re.escape(self.service)}_tripdata_(\d{{4}}-\d{{2}})\.parquet")

    @property
    def timestamp_columns(self) -> tuple[str, ...]:
        """Every wall-clock column of the layout, pickup and dropoff first (a layout may have more: a request's)."""
        others = [name for name, kind in self.columns.items() if kind == "timestamp_ntz"]
        return (self.pickup, self.dropoff, *(name for name in others if name not in (self.pickup, self.dropoff)))

    def file_name(self, month: str) -> str:
        """``month`` is ``YYYY-MM`` (or a glob such as ``*``)."""
        return f"{self.service}_tripdata_{month}.parquet"

    def file_month(self, name: str) -> str | None:
        """The ``YYYY-MM`` a trip file's name carries, or None for any other name."""
        found = self.file_pattern.fullmatch(name)
        return found.group(1) if found else None

    def schema_problems(self, schema: pa.Schema) -> list[str]:
        """What keeps a file's schema from loading into the raw table; empty when it loads.

        Accepted drift: any capitalisation, the file type its table type asks for (:data:`FILE_TYPE_OF_TABLE_TYPE`;
        timestamps in any unit), and columns of Arrow type ``null`` (a column TLC left entirely empty, like
        ``airport_fee`` in 2019-2021) when the column is optional.
        """
        found = {field.name.lower(): type_family(field.type) for field in schema}
        required = [name for name in self.columns if name not in self.optional]
        problems = [f"missing column {name!r}" for name in required if name not in found]
        for name, table_type in self.columns.items():
            have = found.get(name)
            if have is None or (have == "null" and name in self.optional):
                continue
            if have == "null":
                problems.append(f"column {name!r} is entirely empty (Arrow type null), but every trip needs it")
                continue
            wanted = FILE_TYPE_OF_TABLE_TYPE[table_type]
            if have not in ACCEPTED_FAMILIES.get(wanted, {wanted}):
                problems.append(f"column {name!r} is {have}, expected {wanted}")
        return problems

    def unmapped_columns(self, schema: pa.Schema) -> list[str]:
        """Columns the file has that the raw table does not (a new TLC column, for example)."""
        return [field.name for field in schema if field.name.lower() not in self.columns]


def type_family(arrow_type: pa.DataType) -> str:
    if pa.types.is_null(arrow_type):
        return "null"
    if pa.types.is_integer(arrow_type):
        return "integer"
    if pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type):
        return "float"
    if pa.types.is_timestamp(arrow_type):
        return "timestamp"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    return str(arrow_type)
