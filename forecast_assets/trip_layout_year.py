"""A trip month's layout against its year's: TLC added columns over the years (``cbd_congestion_fee`` in 2025), so
a month whose file lacks its year's columns, or has a later year's, is a file of another year, re-dated.

The raw table keeps every column of the layout, so a column the file did not have reads as empty on every row:
what is measured is which of the layout's optional columns hold any value.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F

from forecast_assets.audits import WARN, Aggregates, AuditResult, Judge, Measured, MonthFacts, count_of
from forecast_assets.sources.tlc_format import TripLayout

# TLC's files as the project knows them: every year's layout from this one on.
FIRST_LAYOUT_YEAR = 2019


def _counted(column: str) -> str:
    return f"rows_with_{column}"


def columns_of_year(layout: TripLayout, year: int) -> frozenset[str]:
    """The layout's optional columns that TLC's files of ``year`` carry with values."""
    schema = layout.published_schema(year)
    return frozenset(
        field.name.lower()
        for field in schema
        if field.name.lower() in layout.optional - layout.left_empty and not pa.types.is_null(field.type)
    )


def _years_text(years: list[int]) -> str:
    if not years:
        return "no year's"
    spans: list[list[int]] = [[years[0]]]
    for year in years[1:]:
        if year == spans[-1][-1] + 1:
            spans[-1].append(year)
        else:
            spans.append([year])
    return ", ".join(str(span[0]) if len(span) == 1 else f"{span[0]}-{span[-1]}" for span in spans)


def layout_of_its_year(layout: TripLayout) -> tuple[Aggregates, Judge]:
    """The aggregates (rows with a value, per optional column) and the judge of the month's layout."""
    optional = sorted(layout.optional - layout.left_empty)

    def aggregates(facts: MonthFacts) -> Mapping[str, Column]:
        return {_counted(column): count_of(F.col(column).isNotNull()) for column in optional}

    def judge(measured: Measured, facts: MonthFacts) -> AuditResult:
        year = facts.month.start.year
        present = frozenset(column for column in optional if measured.count(_counted(column)))
        expected = columns_of_year(layout, year)
        missing, extra = sorted(expected - present), sorted(present - expected)
        matching = [y for y in range(FIRST_LAYOUT_YEAR, year + 2) if columns_of_year(layout, y) == present]
        faults = []
        if missing:
            faults.append(f"no trip has {', '.join(missing)}, which TLC's {year} files carry")
        if extra:
            faults.append(f"its trips have {', '.join(extra)}, which TLC's {year} files do not")
        return AuditResult(
            passed=not faults,
            severity=WARN,
            description=(
                f"{facts.month.month}: {'; '.join(faults)}. The file has the layout of {_years_text(matching)} "
                "files: check it is this month's and not another year's re-dated."
                if faults
                else None
            ),
            metadata={
                "year": year,
                "columns_of_the_year": ", ".join(sorted(expected)) or "none",
                "columns_with_values": ", ".join(sorted(present)) or "none",
                "layout_of_years": _years_text(matching),
            },
        )

    return aggregates, judge
