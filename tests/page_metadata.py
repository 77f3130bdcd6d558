"""What makes an asset's metadata fit a 1,400 px laptop screen in Dagster's UI, as one function over a metadata
dict: the unit tests run it on what each asset and check emits, the integration tests on real runs' events.

Dagster (1.13) draws a table entry inline at its full width, and JSON or Markdown under 1,000 characters inline
too (longer ones behind *Show JSON* / *Show Markdown*, in a dialog 1,120 px wide); it plots every int and float
entry over the asset's materializations (and a check's evaluations).
"""

from __future__ import annotations

import base64
import json
import re
import struct
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from dagster import MetadataValue, TableMetadataValue

MOST_COLUMNS = 5
MOST_DECIMALS = 4
# Whole inside the Markdown dialog (about 1,080 px inside its padding).
WIDEST_IMAGE = 1000
# Dagster shows JSON and Markdown shorter than this inline, in full.
INLINE_BELOW = 1000
MOST_INLINE_JSON_LINES = 10
# Words of a key that name a version or an identity, never a measure to plot.
ID_WORDS = {"id", "ids", "snapshot", "fingerprint", "version", "run", "commit"}
# ...unless it counts what a column holds: ``null_location_id`` is a number of rows.
COUNT_WORDS = {"null", "missing", "duplicate", "rows"}
PNG_DATA = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=]+)")
MARKDOWN_TABLE_ROW = re.compile(r"^\s*\|(.*)\|\s*$", re.MULTILINE)


def page_problems(metadata: Mapping[str, Any]) -> list[str]:
    """Each entry that would not fit the page, or would mislead on it, with why; empty when all is well."""
    problems: list[str] = []
    for key, entry in metadata.items():
        problems += [f"{key}: {problem}" for problem in _entry_problems(key, entry)]
    return problems


def _entry_problems(key: str, entry: Any) -> list[str]:
    value = entry.value if isinstance(entry, MetadataValue) else entry
    kind = type(entry).__name__
    problems = []
    if isinstance(value, bool):
        return []
    words = re.split(r"[/_ .-]", key.lower())
    if isinstance(value, int | float) and ID_WORDS & set(words) and words[0] not in COUNT_WORDS:
        problems.append(f"the number {value} names a version or an identity: Dagster would plot it (make it text)")
    if isinstance(value, float) and _decimals(value) > MOST_DECIMALS:
        problems.append(f"{value} has more than {MOST_DECIMALS} decimals")
    if isinstance(entry, TableMetadataValue):
        problems += _table_problems(entry)
    if kind == "JsonMetadataValue" or isinstance(value, dict | list):
        shown = json.dumps(value)
        lines = len(json.dumps(value, indent=2).splitlines())
        if len(shown) < INLINE_BELOW and lines > MOST_INLINE_JSON_LINES:
            problems.append(f"JSON of {lines} lines shown inline (Dagster expands JSON under {INLINE_BELOW} chars)")
    if isinstance(value, str):
        problems += _text_problems(value, markdown=kind == "MarkdownMetadataValue")
    return problems


def _decimals(value: float) -> int:
    exponent = Decimal(repr(value)).as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def _table_problems(table: TableMetadataValue) -> list[str]:
    columns = (
        [column.name for column in table.schema.columns]
        if table.schema is not None and table.schema.columns
        else sorted({name for record in table.records for name in record.data})
    )
    problems = []
    if len(columns) > MOST_COLUMNS:
        problems.append(f"a table of {len(columns)} columns ({', '.join(columns)}): at most {MOST_COLUMNS} fit")
    for record in table.records:
        for name, cell in record.data.items():
            if isinstance(cell, float) and not isinstance(cell, bool) and _decimals(cell) > MOST_DECIMALS:
                problems.append(f"column {name}: {cell} has more than {MOST_DECIMALS} decimals")
    return problems


def _text_problems(text: str, markdown: bool) -> list[str]:
    problems = []
    stripped = text.strip()
    if stripped[:1] in "{[" and _is_json(stripped):
        problems.append("JSON as text or Markdown: make it MetadataValue.json")
    for encoded in PNG_DATA.findall(text):
        width = png_width(base64.b64decode(encoded))
        if width > WIDEST_IMAGE:
            problems.append(f"an image {width} px wide: at most {WIDEST_IMAGE} px fit the dialog")
    if markdown and len(text) < INLINE_BELOW:
        widest = max((row.count("|") + 1 for row in MARKDOWN_TABLE_ROW.findall(text)), default=0)
        if widest > MOST_COLUMNS:
            problems.append(f"an inline Markdown table of {widest} columns: at most {MOST_COLUMNS} fit")
    return problems


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def png_width(png: bytes) -> int:
    """The pixel width a PNG's header gives."""
    if not png.startswith(b"\x89PNG"):
        raise ValueError("not a PNG")
    width: int = struct.unpack(">I", png[16:20])[0]
    return width


def recorded_problems(instance) -> dict[str, list[str]]:
    """``page_problems`` of every materialization and check evaluation ``instance`` holds, by what recorded it."""
    from dagster import DagsterEventType

    kinds = {DagsterEventType.ASSET_MATERIALIZATION, DagsterEventType.ASSET_CHECK_EVALUATION}
    found: dict[str, list[str]] = {}
    for run in instance.get_runs():
        for entry in instance.all_logs(run.run_id, of_type=kinds):
            data = entry.dagster_event.event_specific_data
            if entry.dagster_event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
                name, metadata = data.materialization.asset_key.to_user_string(), data.materialization.metadata
            else:
                name, metadata = f"{data.asset_key.to_user_string()} {data.check_name}", data.metadata
            if problems := page_problems(metadata):
                found[f"{name} (run {run.run_id[:8]})"] = problems
    return found
