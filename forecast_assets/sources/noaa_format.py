"""The NOAA nClimGrid-Daily county CSV layout: headerless, one row per county and element."""

from __future__ import annotations

import re

import pandas as pd

ELEMENTS = ("prcp", "tavg", "tmin", "tmax")
MISSING_VALUE = -999.99
# A day's value as NOAA writes it: a decimal number, space-padded ("    1.00", " -999.99").
DAY_VALUE = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*")
DAY_COLUMNS = tuple(f"day_{day:02d}" for day in range(1, 32))
COLUMNS = ("region_type", "region_code", "region_name", "year", "month", "element", *DAY_COLUMNS)

# The five boroughs: Bronx, Kings (Brooklyn), New York (Manhattan), Queens, Richmond (Staten Island).
NYC_COUNTY_FIPS = ("36005", "36047", "36061", "36081", "36085")

# Physical bounds a value must fall in: precipitation in mm, temperatures in degrees Celsius.
VALUE_RANGES = {"prcp": (0.0, 500.0), "tavg": (-45.0, 50.0), "tmin": (-50.0, 45.0), "tmax": (-40.0, 55.0)}


def weather_file_name(element: str, month: str) -> str:
    """``month`` is ``YYYY-MM``; NOAA names files ``prcp-202401-cty-scaled.csv``."""
    return f"{element}-{month.replace('-', '')}-cty-scaled.csv"


def weather_file_path(element: str, month: str) -> str:
    """The path below the NOAA base URL: files sit in a folder per year."""
    return f"{month[:4]}/{weather_file_name(element, month)}"


def row_problems(fields: list[str], element: str, month: str) -> list[str]:
    """What is wrong with one parsed CSV row; empty when it is well formed."""
    if len(fields) != len(COLUMNS):
        return [f"has {len(fields)} fields, expected {len(COLUMNS)}"]
    problems = []
    year, month_number, row_element = fields[3].strip(), fields[4].strip(), fields[5].strip()
    if not month_number.isdigit() or f"{year}-{int(month_number):02d}" != month:
        problems.append(f"is for {year}-{month_number}, expected {month}")
    if row_element.lower() != element:
        problems.append(f"holds element {row_element!r}, expected {element!r}")
    if not all(DAY_VALUE.fullmatch(value) for value in fields[6:]):
        problems.append("has a day value that is not a number")
    return problems


def county_file(weather: pd.DataFrame, element: str, month: str) -> str:
    """One element's month as NOAA writes it: a row per county (``county_fips``, ``county``, ``date`` and the
    element's column), its days padded to 31 with the missing value."""
    year, month_number = month.split("-")
    lines = []
    for (county_fips, county), rows in weather.groupby(["county_fips", "county"], sort=True):
        values = [*rows.sort_values("date")[element]]
        values += [MISSING_VALUE] * (len(DAY_COLUMNS) - len(values))
        cells = ["cty", str(county_fips), str(county), year, month_number, element, *(f"{v:8.2f}" for v in values)]
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"
