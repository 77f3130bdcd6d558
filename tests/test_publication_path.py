"""One partition's write-audit-publish is a straight path: it opens the table, stages the month, publishes it.

A call trace of the step (Python's own profiler hook) counts how often the step enters the publication module
from outside it, and how often it loads each table's state from the catalog: once, then every operation updates
what it loaded.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from dagster import AssetKey

from forecast_assets.lakehouse import publication, table_state
from forecast_assets.source_specs.registry import registered_sources

pytestmark = pytest.mark.integration

PUBLICATION_FILE = str(Path(publication.__file__).resolve())
LOAD = table_state.table_state.__code__
MONTHLY_TABLES = [source.table.identifier for source in registered_sources() if source.monthly]
ACTUALS = "nyc_taxi.yellow_rides_hourly_actuals"


@dataclass
class Trace:
    # The publication functions entered from a stack that is not already inside the module (a retry helper calling
    # back into the operation that called it is no new entry).
    entries: list[str] = field(default_factory=list)
    loads: Counter[str] = field(default_factory=Counter)  # the table states loaded, by identifier

    def __call__(self, frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        if code is LOAD:
            self.loads[frame.f_locals["identifier"]] += 1
        elif code.co_filename == PUBLICATION_FILE and not _inside_publication(frame.f_back):
            self.entries.append(code.co_qualname)


def _inside_publication(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_filename == PUBLICATION_FILE:
            return True
        frame = frame.f_back
    return False


@contextmanager
def traced() -> Iterator[Trace]:
    trace = Trace()
    sys.setprofile(trace)
    threading.setprofile(trace)
    try:
        yield trace
    finally:
        sys.setprofile(None)
        threading.setprofile(None)


@pytest.mark.parametrize("table", [*MONTHLY_TABLES, ACTUALS])
def test_one_partition_s_publish_opens_stages_and_publishes(pipeline, table):
    step = table.replace(".", "__")
    job = pipeline.definitions().resolve_job_def("monthly_ingestion")
    config = {"ops": {step: {"config": {"rewrite_unchanged": True}}}}
    with traced() as trace:
        result = job.execute_in_process(
            partition_key="2025-01-01",
            instance=pipeline.instance,
            run_config=config,
            asset_selection=[AssetKey(table.split("."))],
            raise_on_error=False,
        )
    assert result.success
    assert pipeline.latest_metadata(table)["publication"].value == "published"
    print(
        f"{table}: {len(trace.entries)} entries into publication.py ({', '.join(trace.entries)}); loads {trace.loads}"
    )
    assert len(trace.entries) <= 3, trace.entries
    assert trace.loads[table] == 1, trace.loads
