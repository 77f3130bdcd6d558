"""Every step of the flow says it is still working at least every ten seconds, in the shell and in Dagster's log.

A step that computes for a while prints nothing of its own (a model fit, a bootstrap, a table write); on a
busy machine that is 20 s and more of silence. The heartbeat prints from a thread while the step runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from metaflow import FlowMutator, FlowSpec, user_step_decorator

from taxi_core.progress import print_now, reporting_while

if TYPE_CHECKING:
    from metaflow.user_decorators.mutable_flow import MutableFlow


@user_step_decorator  # type: ignore[untyped-decorator]  # Metaflow leaves user_step_decorator unannotated
def heartbeat(step_name: str, flow: FlowSpec, inputs: Any) -> Iterator[None]:
    with reporting_while(print_now, "still working", ends=False):
        yield


class with_heartbeats(FlowMutator):  # noqa: N801 - used as a decorator, named like one
    """Flow decorator: every step runs with a :func:`heartbeat`."""

    def mutate(self, mutable_flow: MutableFlow) -> None:
        for _, step in mutable_flow.steps:
            step.add_decorator(heartbeat)
