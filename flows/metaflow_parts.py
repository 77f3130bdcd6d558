"""Metaflow's parts that exist only once it runs, typed for the flow: ``@card``, ``@exit_hook``, ``current.card``,
and a Parameter declared as the value its steps read.

Metaflow makes its plugin decorators when it is imported and sets ``current.card`` when a step with a card starts,
where no type checker looks; each is looked up here once, by name, and given the type Metaflow documents.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import metaflow
from metaflow import Parameter, current
from metaflow.cards import Table
from metaflow.plugins.cards.component_serializer import CardComponentCollector

StepT = TypeVar("StepT", bound=Callable[..., None])
FlowT = TypeVar("FlowT")
ValueT = TypeVar("ValueT", str, int, bool)


def parameter(name: str, default: ValueT, help: str) -> ValueT:
    """A run's Parameter of ``default``'s type, typed as the value a step reads: before any step runs, Metaflow
    puts the run's value where the class holds the Parameter (as ``dataclasses.field`` stands for its value)."""
    return cast(ValueT, Parameter(name, default=default, type=type(default), help=help))


def card(*, type: str, id: str) -> Callable[[StepT], StepT]:
    """Metaflow's ``@card``: the step renders a card of ``type`` named ``id``."""
    made = getattr(metaflow, "card")  # noqa: B009 - made when Metaflow is imported
    decorator: Callable[[StepT], StepT] = made(type=type, id=id)
    return decorator


def exit_hook(*, on_success: list[str], on_error: list[str]) -> Callable[[FlowT], FlowT]:
    """Metaflow's ``@exit_hook``: the functions named (``module.function``) run once the run has ended."""
    made = getattr(metaflow, "exit_hook")  # noqa: B009 - made when Metaflow is imported
    decorator: Callable[[FlowT], FlowT] = made(on_success=on_success, on_error=on_error)
    return decorator


def current_card() -> CardComponentCollector:
    """The components of the running step's card (Metaflow sets ``current.card`` when a step with a card starts)."""
    components: CardComponentCollector = getattr(current, "card")  # noqa: B009 - set at run time, unseen by types
    return components


def current_run_id() -> str:
    """The running run's id (Metaflow sets ``current.run_id`` before the first step runs)."""
    run_id = current.run_id
    if run_id is None:
        raise RuntimeError("no Metaflow run is running")  # an internal invariant: only a step asks
    return run_id


def table(rows: Sequence[Sequence[str | float]], headers: list[str]) -> Table:
    """A card's table of names and figures: Metaflow's annotation names text cells only, but it shows numbers."""
    cells: list[list[Any]] = [list(row) for row in rows]
    return Table(data=cells, headers=headers)
