"""Column-level lineage as the bridge carries it: each output column and the input columns it comes from.

Inputs are named by a source label (a Dagster asset key's user string, ``nyc_taxi/raw_yellow``) until
a translator names them as datasets. Transformations follow the OpenLineage column-lineage facet:
``DIRECT`` (``IDENTITY``, ``TRANSFORMATION``, ``AGGREGATION``) when the value is computed from the
input column, ``INDIRECT`` (``FILTER``, ``JOIN``, ``GROUP_BY``, ``SORT``, ``WINDOW``) when the input
column decides which rows there are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DIRECT = "DIRECT"
INDIRECT = "INDIRECT"
IDENTITY = "IDENTITY"
TRANSFORMATION = "TRANSFORMATION"
AGGREGATION = "AGGREGATION"
# A chain of direct steps is as strong as its strongest: a cast of an identity is a transformation.
DIRECT_STRENGTH = {IDENTITY: 0, TRANSFORMATION: 1, AGGREGATION: 2}


@dataclass(frozen=True, order=True)
class InputColumn:
    source: str
    column: str


@dataclass(frozen=True, order=True)
class Transformation:
    type: str
    subtype: str

    @property
    def direct(self) -> bool:
        return self.type == DIRECT


@dataclass(frozen=True)
class ColumnOrigin:
    input: InputColumn
    transformations: tuple[Transformation, ...]

    @property
    def direct(self) -> bool:
        return any(t.direct for t in self.transformations)


ColumnLineage = Mapping[str, tuple[ColumnOrigin, ...]]


def stronger(first: str | None, second: str) -> str:
    if first is None:
        return second
    return first if DIRECT_STRENGTH[first] >= DIRECT_STRENGTH[second] else second


def lineage_to_json(lineage: ColumnLineage) -> dict[str, list[dict[str, Any]]]:
    return {
        column: [
            {
                "source": origin.input.source,
                "column": origin.input.column,
                "transformations": [{"type": t.type, "subtype": t.subtype} for t in origin.transformations],
            }
            for origin in origins
        ]
        for column, origins in lineage.items()
    }


def lineage_from_json(data: Mapping[str, Any]) -> dict[str, tuple[ColumnOrigin, ...]]:
    return {
        column: tuple(
            ColumnOrigin(
                InputColumn(origin["source"], origin["column"]),
                tuple(Transformation(t["type"], t.get("subtype", "")) for t in origin.get("transformations", [])),
            )
            for origin in origins
        )
        for column, origins in data.items()
    }
