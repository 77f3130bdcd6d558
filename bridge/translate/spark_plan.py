"""Column lineage derived from a Spark DataFrame's analyzed logical plan, so it cannot drift from the code.

:func:`plan_of` reads the plan through the driver's JVM (the only I/O here); :func:`derive` walks it
and is pure. Each plan node's expressions say which attributes (by expression id) an output
attribute is computed from; filters, join conditions, groupings and orderings decide which rows
there are and count as indirect inputs of every output column.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bridge.translate.column_lineage import (
    AGGREGATION,
    DIRECT,
    IDENTITY,
    INDIRECT,
    TRANSFORMATION,
    ColumnLineage,
    ColumnOrigin,
    InputColumn,
    Transformation,
    stronger,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

ATTRIBUTE = "org.apache.spark.sql.catalyst.expressions.AttributeReference"
ALIAS = "org.apache.spark.sql.catalyst.expressions.Alias"
AGGREGATE = "org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression"
INDIRECT_SUBTYPES = {"Filter": "FILTER", "Join": "JOIN", "Aggregate": "GROUP_BY", "Sort": "SORT", "Window": "WINDOW"}


@dataclass(frozen=True)
class Attribute:
    id: int
    name: str


@dataclass(frozen=True)
class PlanNode:
    """One logical-plan node: its kind, output, expressions (each Spark's flattened JSON) and children.

    ``grouping`` holds an Aggregate's grouping expressions; ``source`` labels a leaf read from an input.
    """

    kind: str
    output: tuple[Attribute, ...]
    expressions: tuple[tuple[dict[str, Any], ...], ...] = ()
    children: tuple[PlanNode, ...] = ()
    grouping: tuple[tuple[dict[str, Any], ...], ...] = ()
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "output": [[a.id, a.name] for a in self.output],
            "expressions": [list(e) for e in self.expressions],
            "grouping": [list(e) for e in self.grouping],
            "source": self.source,
            "children": [child.to_json() for child in self.children],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PlanNode:
        return cls(
            kind=data["kind"],
            output=tuple(Attribute(i, name) for i, name in data["output"]),
            expressions=tuple(tuple(e) for e in data["expressions"]),
            grouping=tuple(tuple(e) for e in data["grouping"]),
            source=data["source"],
            children=tuple(cls.from_json(child) for child in data["children"]),
        )


# -- I/O edge: the plan of a live DataFrame --------------------------------------------------------
# The plan's objects are the JVM's, reached through py4j: untyped on this side.


def _seq(scala_seq: Any) -> list[Any]:
    return [scala_seq.apply(i) for i in range(scala_seq.size())]


def _expression(jexpr: Any) -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(jexpr.toJSON()))


def _node(jplan: Any, inputs: Mapping[str, list[Any]]) -> PlanNode:
    children = tuple(_node(child, inputs) for child in _seq(jplan.children()))
    kind = jplan.getClass().getSimpleName()
    source = None
    if not children:
        reads = (label for label, leaves in inputs.items() if any(jplan.sameResult(leaf) for leaf in leaves))
        source = next(reads, None)
    grouping = tuple(_expression(e) for e in _seq(jplan.groupingExpressions())) if kind == "Aggregate" else ()
    expressions = _seq(jplan.aggregateExpressions()) if kind == "Aggregate" else _seq(jplan.expressions())
    return PlanNode(
        kind=kind,
        output=tuple(Attribute(a.exprId().id(), a.name()) for a in _seq(jplan.output())),
        expressions=tuple(_expression(e) for e in expressions),
        children=children,
        grouping=grouping,
        source=source,
    )


def plan_of(rows: DataFrame, inputs: Mapping[str, DataFrame]) -> PlanNode:
    """The analyzed plan of DataFrame ``rows``; a leaf that reads one of ``inputs`` (label -> DataFrame) is labelled."""
    input_leaves = {label: _seq(df._jdf.queryExecution().analyzed().collectLeaves()) for label, df in inputs.items()}
    return _node(rows._jdf.queryExecution().analyzed(), input_leaves)


def column_lineage(rows: DataFrame, inputs: Mapping[str, DataFrame]) -> ColumnLineage:
    """Each column of DataFrame ``rows`` and the columns of ``inputs`` it is derived from."""
    return derive(plan_of(rows, inputs))


# -- Pure: walk the plan -----------------------------------------------------------------------------


def _references(expression: tuple[dict[str, Any], ...]) -> list[int]:
    return [node["exprId"]["id"] for node in expression if node["class"] == ATTRIBUTE]


def _kind(expression: tuple[dict[str, Any], ...]) -> str:
    if any(node["class"] == AGGREGATE for node in expression):
        return AGGREGATION
    is_rename = expression[0]["class"] == ALIAS and len(expression) == 2 and expression[1]["class"] == ATTRIBUTE
    return IDENTITY if is_rename or expression[0]["class"] == ATTRIBUTE else TRANSFORMATION


class _Walk:
    def __init__(self) -> None:
        self.origins: dict[int, dict[InputColumn, str]] = defaultdict(dict)
        self.indirect: dict[InputColumn, set[str]] = defaultdict(set)

    def computed(self, expression: tuple[dict[str, Any], ...]) -> dict[InputColumn, str]:
        step = _kind(expression)
        found: dict[InputColumn, str] = {}
        for ref in _references(expression):
            for column, kind in self.origins.get(ref, {}).items():
                found[column] = stronger(found.get(column), stronger(kind, step))
        return found

    def merge(self, attribute_id: int, found: Mapping[InputColumn, str]) -> None:
        target = self.origins[attribute_id]
        for column, kind in found.items():
            target[column] = stronger(target.get(column), kind)

    def decides_rows(self, expression: tuple[dict[str, Any], ...], subtype: str) -> None:
        for ref in _references(expression):
            for column in self.origins.get(ref, {}):
                self.indirect[column].add(subtype)

    def visit(self, node: PlanNode) -> None:
        for child in node.children:
            self.visit(child)
        if not node.children:
            if node.source:  # a leaf that reads none of the inputs is the origin of nothing
                for attribute in node.output:
                    self.origins[attribute.id] = {InputColumn(node.source, attribute.name): IDENTITY}
        elif node.kind in ("Union", "Expand"):
            self.positional(node)
        elif node.kind == "Generate":
            produced = {a.id for a in node.output} - {a.id for child in node.children for a in child.output}
            found: dict[InputColumn, str] = {}
            for expression in node.expressions:
                found |= self.computed(expression)
            for attribute_id in produced:
                self.merge(attribute_id, {column: TRANSFORMATION for column in found})
        else:
            self.expressions(node)

    def positional(self, node: PlanNode) -> None:
        width = len(node.output)
        if node.kind == "Union":
            for child in node.children:
                for position, attribute in enumerate(child.output):
                    self.merge(node.output[position].id, self.origins.get(attribute.id, {}))
            return
        # Expand's expressions are its projections, row after row, each as wide as its output.
        for position, expression in enumerate(node.expressions):
            self.merge(node.output[position % width].id, self.computed(expression))

    def expressions(self, node: PlanNode) -> None:
        subtype = INDIRECT_SUBTYPES.get(node.kind, node.kind.upper())
        output_ids = {a.id for a in node.output}
        for expression in node.grouping:
            self.decides_rows(expression, INDIRECT_SUBTYPES["Aggregate"])
        for expression in node.expressions:
            root = expression[0]
            if root["class"] == ALIAS:
                self.origins[root["exprId"]["id"]] = self.computed(expression)
            elif not (root["class"] == ATTRIBUTE and root["exprId"]["id"] in output_ids):
                self.decides_rows(expression, subtype)

    def lineage(self, root: PlanNode) -> dict[str, tuple[ColumnOrigin, ...]]:
        result = {}
        for attribute in root.output:
            transformations: dict[InputColumn, set[Transformation]] = defaultdict(set)
            for column, kind in self.origins.get(attribute.id, {}).items():
                transformations[column].add(Transformation(DIRECT, kind))
            for column, subtypes in self.indirect.items():
                transformations[column].update(Transformation(INDIRECT, subtype) for subtype in subtypes)
            result[attribute.name] = tuple(
                ColumnOrigin(column, tuple(sorted(kinds))) for column, kinds in sorted(transformations.items())
            )
        return result


def derive(root: PlanNode) -> dict[str, tuple[ColumnOrigin, ...]]:
    """Each output column of ``root`` and the labelled input columns it comes from, with how."""
    walk = _Walk()
    walk.visit(root)
    return walk.lineage(root)
