"""Reading again what was read takes nothing new: no sequence number for an event already queued, and a
finished Metaflow task read from Metaflow once, however often the watcher looks at its run."""

import os
from pathlib import Path

import pytest
from metaflow import Runner

from bridge.outbox.outbox import Outbox
from bridge.run.lineage_pass import queue_source
from bridge.sources import metaflow as metaflow_source
from bridge.sources.metaflow import MetaflowSource
from tests.reuse_project.shop import naming

FLOW_FILE = Path(__file__).parent / "reuse_project" / "score_flow.py"
# The reuse example's flow under a name of its own: its runs stay out of the other tests' ScoreFlow history.
FLOW_NAME = "RereadFlow"


def _flow_file(folder: Path) -> Path:
    path = folder / "rereadflow.py"
    path.write_text(FLOW_FILE.read_text().replace("ScoreFlow", FLOW_NAME))
    return path


def test_an_event_already_queued_takes_no_sequence_number(tmp_path):
    outbox = Outbox(tmp_path / "outbox.sqlite")
    with outbox.queue.batch("source") as batch:
        assert [batch.add(key, "{}") for key in ("a", "b")] == [True, True]
    for _ in range(50):  # a source that reads the same running run on every pass
        with outbox.queue.batch("source") as batch:
            assert [batch.add(key, "{}") for key in ("a", "b")] == [False, False]
    with outbox.queue.batch("source") as batch:
        assert batch.add("c", "{}")
    assert [event.seq for event in outbox.queue.after(0)] == [1, 2, 3]


@pytest.mark.integration
def test_a_run_read_again_queues_nothing_and_reads_its_finished_tasks_once(tmp_path):
    env = os.environ | {"SHOP_ROOT": str(tmp_path), "SHOP_TOTALS_VERSION": "v1"}
    (tmp_path / "daily_totals.csv").write_text("day,total\n2026-01-01,7\n")
    with Runner(str(_flow_file(tmp_path)), env=env, cwd=str(tmp_path), show_output=False) as runner:
        run = runner.run().run
    assert run.successful
    outbox = Outbox(tmp_path / "outbox.sqlite")
    source = MetaflowSource([FLOW_NAME], naming(tmp_path))
    added, _ = queue_source(outbox, source)
    assert added > 0
    last = outbox.queue.last_seq()
    tasks = {task.pathspec for step in run for task in step}
    assert tasks <= set(metaflow_source._COMPLETED)  # each finished task, as it was read
    for _ in range(5):  # as the watcher re-reads a run it has not yet seen finish
        with outbox.queue.batch("metaflow") as batch:
            batch.set_cursor({})  # the run looks new again
        again, _ = queue_source(outbox, MetaflowSource([FLOW_NAME], naming(tmp_path)))
        assert again == 0
    assert outbox.queue.last_seq() == last
    with outbox.queue.batch("probe") as batch:
        assert batch.add("a new event", "{}")
    assert outbox.queue.last_seq() == last + 1  # the sequence did not run ahead
