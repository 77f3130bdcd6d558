"""Each state is told by its true name: a read-only lineage folder, an outbox row that is no event, a deleted events
file, a copied state folder's sinks, two versions of one table."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bridge.config import SinkSpec
from bridge.outbox.health import HEALTHY, PARKED
from bridge.outbox.outbox import Outbox
from tests.test_fault_matrix import bridge_for, fill, golden_events, lite, one_pass, verdict


@contextmanager
def mounted_read_only(folder: Path, at: Path) -> Iterator[Path]:
    """``folder`` seen read-only at ``at`` (a read-only bind mount: even root cannot write there)."""
    at.mkdir()
    subprocess.run(["mount", "--bind", "-o", "ro", str(folder), str(at)], check=True, capture_output=True)
    try:
        yield at
    finally:
        subprocess.run(["umount", str(at)], check=True)


@pytest.mark.parametrize("command", ["pass", "status"])
def test_a_read_only_lineage_folder_is_named_read_only_not_damaged(tmp_path, command, capsys):
    from bridge.cli import main as cli

    fill(tmp_path / "lineage")
    with mounted_read_only(tmp_path / "lineage", tmp_path / "read-only") as folder:
        code = cli.main([command], bridge_for(folder, (SinkSpec("openlineage"),)))
    told = capsys.readouterr()
    said = told.out + told.err
    assert code != 0 and "read-only" in said and str(folder) in said, said
    assert "damaged" not in said.replace("nothing in it is damaged", "") and "rebuild" not in said, said


def test_an_outbox_row_that_is_no_run_event_is_parked_with_its_reason_and_the_rest_is_delivered(tmp_path):
    events = golden_events()
    key, shape = events[3]
    broken = {k: v for k, v in shape.items() if k != "run"}
    queued = fill(tmp_path, [*events[:3], ("broken", broken), *events[3:]])
    bridge = bridge_for(tmp_path, (SinkSpec("openlineage"), lite(tmp_path)))
    result = one_pass(bridge)
    assert not result.problems, result.problems
    outbox = Outbox(tmp_path / "outbox.sqlite")
    letters = outbox.letters.dead_letters()
    outbox.close()
    assert {letter.sink for letter in letters} == {result.sink("openlineage").sink, result.sink("datahub").sink}
    assert all("'run'" in letter.error and "Traceback" not in letter.error for letter in letters), letters
    delivered = (tmp_path / "openlineage_events.jsonl").read_text().splitlines()
    assert len(delivered) == len(queued) - 1 and verdict(tmp_path) == PARKED


def test_a_deleted_events_file_is_refilled(tmp_path):
    queued = fill(tmp_path)
    bridge = bridge_for(tmp_path, (SinkSpec("openlineage"),))
    one_pass(bridge)
    events_file = tmp_path / "openlineage_events.jsonl"
    assert len(events_file.read_text().splitlines()) == len(queued)
    events_file.unlink()
    one_pass(bridge)
    assert len(events_file.read_text().splitlines()) == len(queued)
    assert verdict(tmp_path) == HEALTHY


def test_a_copied_lineage_folder_s_status_names_its_own_files(tmp_path):
    import shutil

    from bridge.outbox.health import status

    original, copy = tmp_path / "original", tmp_path / "copy"
    fill(original)
    one_pass(bridge_for(original, (SinkSpec("openlineage"), lite(original))))
    shutil.copytree(original, copy)
    outbox = Outbox(copy / "outbox.sqlite")
    targets = [sink.target for sink in status(outbox).sinks]
    outbox.close()
    assert any(str(copy / "lite.sqlite") in target for target in targets), targets
    assert not any(str(original) in target for target in targets), targets
