"""Which code made a materialization: the checkout's git commit and the asset's file in it (the lineage's
``sourceCodeLocation``), read in the run worker that ran it."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from dagster import AssetExecutionContext

from bridge.translate.dagster_inputs import code_metadata
from taxi_core.git_checkout import checkout_of
from taxi_core.settings import PROJECT_ROOT


def code_ran(context: AssetExecutionContext) -> dict[str, Any]:
    """``code/commit`` and ``code/path`` for the asset's materialization; none outside a git checkout."""
    checkout = checkout_of(PROJECT_ROOT)
    compute = context.op_def.compute_fn
    source = inspect.getsourcefile(getattr(compute, "decorated_fn", compute))
    if checkout is None or source is None or not Path(source).resolve().is_relative_to(PROJECT_ROOT):
        return {}
    return code_metadata(checkout.commit, Path(source).resolve().relative_to(PROJECT_ROOT).as_posix(), checkout.branch)
