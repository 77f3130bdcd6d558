"""The row filters the flow's tables are read and replaced with, as pyiceberg expressions.

pyiceberg's predicates are pydantic models whose fields are ``term`` and ``value`` (``values`` for a set): they are
built here by those names, which is how a type checker knows them, not by position.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyiceberg.expressions import BooleanExpression, EqualTo, In, Reference
from pyiceberg.expressions.literals import literal


def equal_to(column: str, value: str | int) -> BooleanExpression:
    """Rows whose ``column`` is ``value``."""
    return EqualTo(term=Reference(column), value=literal(value))


def one_of(column: str, values: Iterable[str]) -> BooleanExpression:
    """Rows whose ``column`` is any of ``values``."""
    return In(term=Reference(column), values={literal(value) for value in values})
