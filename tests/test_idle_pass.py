"""An idle pass answers "nothing new" from files, and only when nothing is new: real Dagster instances (Dagster's
default run-sharded SQLite storage and the consolidated one), a run left open, a real Metaflow run."""

import json
import os
import sqlite3
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from dagster import DagsterInstance, Definitions, asset, materialize
from metaflow import Runner

from bridge.cli.commands import lineage_status
from bridge.run.idle import idle_pass
from bridge.run.lineage_pass import run_pass
from bridge.run.unseen import READ_TYPES, Unseen, dagster_event_log, unseen_runs
from bridge.translate.dagster_records import READ_TYPES as DAGSTER_READ_TYPES
from taxi_core.settings import PROJECT_ROOT
from tests.lineage_bridges import with_datahub
from tests.reuse_project.shop import CONSOLIDATED, TABLES, definitions, shop_bridge

FLOW_FILE = Path(__file__).parent / "reuse_project" / "score_flow.py"
# The reuse example's flow under a name of its own: its runs stay out of the other tests' ScoreFlow history.
FLOW_NAME = "IdleCheckFlow"


def _flow_file(folder: Path) -> Path:
    path = folder / "idlecheckflow.py"
    path.write_text(FLOW_FILE.read_text().replace("ScoreFlow", FLOW_NAME))
    return path


# A pass from a new process, as from the shell; it prints the heavy modules it loaded.
PASS = """
import sys
from pathlib import Path
from bridge.cli import main as cli
from bridge.config import LineageBridge, SinkSpec
from bridge.translate.naming import Naming
root = Path(sys.argv[1])
bridge = LineageBridge(
    naming=Naming(locations={"shop/orders": f"{root}/orders.csv", "shop/daily_totals": f"{root}/daily_totals.csv"},
                  job_namespace="shop"),
    lineage_dir=root / "lineage", code_location="shop", workspace_file=root / "workspace.yaml",
    sinks=(SinkSpec("openlineage"), SinkSpec("datahub-lite", {"path": root / "lite.sqlite"}, "datahub")),
    dagster_home=root / "home",
)
code = cli.main(["pass"], bridge)
print("loaded:", sorted(m for m in ("dagster", "metaflow", "openlineage.client", "datahub") if m in sys.modules))
sys.exit(code)
"""


def _shop(root: Path, storage: str):
    home = root / "home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(
        "telemetry:\n  enabled: false\n" + (CONSOLIDATED.format(home=home) if storage == "consolidated" else "")
    )
    (root / "shop_location.py").write_text(
        "from pathlib import Path\n\nfrom tests.reuse_project.shop import definitions\n\n"
        "defs = definitions(Path(__file__).parent)\n"
    )
    (root / "workspace.yaml").write_text(
        "load_from:\n  - python_file:\n      relative_path: shop_location.py\n      location_name: shop\n"
    )
    bridge = replace(shop_bridge(root), flows=(), workspace_file=root / "workspace.yaml", dagster_home=home)
    return home, definitions(root), bridge


def _pass_from_the_shell(root: Path) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-c", PASS, str(root)],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
    )
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("storage", ["sharded", "consolidated"])
def test_an_idle_pass_loads_no_tool_and_the_next_run_is_picked_up(tmp_path, monkeypatch, capsys, storage):
    monkeypatch.chdir(tmp_path)  # where the passes from the shell run (the working folder is part of the configuration)
    home, defs, bridge = _shop(tmp_path, storage)
    with DagsterInstance.from_config(str(home)) as instance:
        assert materialize(defs.resolve_asset_graph().assets_defs, instance=instance, selection=TABLES).success
    code, printed = _pass_from_the_shell(tmp_path)
    assert code == 0 and "Lineage pass: 6 new events" in printed, printed

    assert idle_pass(bridge) is not None
    code, printed = _pass_from_the_shell(tmp_path)
    assert code == 0, printed
    assert "nothing new in Dagster, Metaflow or the outbox" in printed and "sent 0, 0 waiting" in printed
    assert "loaded: []" in printed  # neither Dagster, Metaflow, the OpenLineage client nor DataHub

    with DagsterInstance.from_config(str(home)) as instance:
        assert materialize(defs.resolve_asset_graph().assets_defs, instance=instance, selection=TABLES).success
        runs = len(instance.get_run_records())
    assert idle_pass(bridge) is None
    # Status still says what the last pass delivered, and that a run has happened since.
    assert unseen_runs(bridge) == Unseen(dagster_runs=1, metaflow_runs=0)
    assert lineage_status(bridge) == 0
    said = " ".join(capsys.readouterr().out.split())  # as read, whatever the wrapping
    assert "up to date with the last pass" in said, said
    assert f"Not in the lineage yet: 1 Dagster run has happened since the last pass; `{bridge.repair_command}`" in said
    code, printed = _pass_from_the_shell(tmp_path)
    assert code == 0 and "Lineage pass: 6 new events" in printed, printed
    assert len((bridge.lineage_dir / "openlineage_events.jsonl").read_text().splitlines()) == 12
    assert runs == 2 and unseen_runs(bridge) == Unseen(dagster_runs=0, metaflow_runs=0)
    assert lineage_status(bridge) == 0 and "Not in the lineage yet" not in capsys.readouterr().out


@pytest.mark.parametrize("storage", ["sharded", "consolidated"])
def test_a_run_left_open_is_new_only_once_it_writes_again(tmp_path, storage):
    home, _, bridge = _shop(tmp_path, storage)
    started, release = threading.Event(), threading.Event()

    @asset(key=["shop", "orders"])
    def orders() -> None:
        started.set()
        assert release.wait(60), "the test never let the step finish"

    graph = Definitions(assets=[orders]).resolve_asset_graph()
    with DagsterInstance.from_config(str(home)) as instance:
        running = threading.Thread(target=lambda: materialize([orders], instance=instance))
        running.start()
        try:
            assert started.wait(60)
            first = run_pass(bridge, instance, graph)
            assert first.event_types == {"START": 2}  # the run's and its step's
            assert json.loads(_cursor(bridge))["open_runs"]
            assert idle_pass(bridge) is not None  # the open run wrote nothing since
        finally:
            release.set()
            running.join()
        assert idle_pass(bridge) is None
        assert run_pass(bridge, instance, graph).event_types == {"COMPLETE": 2}
        assert idle_pass(bridge) is not None


def _cursor(bridge) -> str:
    with sqlite3.connect(bridge.outbox_path) as outbox:
        return outbox.execute("SELECT value FROM cursors WHERE source = 'dagster'").fetchone()[0]


def test_a_changed_setting_or_target_runs_the_full_pass(tmp_path, monkeypatch, openlineage_env):
    home, defs, bridge = _shop(tmp_path, "sharded")
    with DagsterInstance.from_config(str(home)) as instance:
        assert materialize(defs.resolve_asset_graph().assets_defs, instance=instance, selection=TABLES).success
        run_pass(bridge, instance, defs.resolve_asset_graph())
    assert idle_pass(bridge) is not None
    assert idle_pass(with_datahub(bridge, None)) is None  # another target: its sinks never ran
    openlineage_env.setenv("OPENLINEAGE_URL", "http://127.0.0.1:9")
    assert idle_pass(bridge) is None
    openlineage_env.delenv("OPENLINEAGE_URL")
    # An emptied DataHub Lite is written again from the first event.
    Path(bridge.sink_spec("datahub").options["path"]).unlink()
    assert idle_pass(bridge) is None


@pytest.mark.integration
def test_a_new_metaflow_run_is_new(tmp_path):
    home, defs, bridge = _shop(tmp_path, "sharded")
    bridge = replace(bridge, flows=(FLOW_NAME,))
    with DagsterInstance.from_config(str(home)) as instance:
        assert materialize(defs.resolve_asset_graph().assets_defs, instance=instance, selection=TABLES).success
        graph = defs.resolve_asset_graph()
        run_pass(bridge, instance, graph)
        assert idle_pass(bridge) is not None
        env = os.environ | {"SHOP_ROOT": str(tmp_path), "SHOP_TOTALS_VERSION": "v1"}
        with Runner(str(_flow_file(tmp_path)), env=env, cwd=str(tmp_path), show_output=False) as runner:
            assert runner.run().run.successful
        assert idle_pass(bridge) is None
        assert unseen_runs(bridge) == Unseen(dagster_runs=0, metaflow_runs=1)
        result = run_pass(bridge, instance, graph)
    assert result.queued["metaflow"] > 0
    assert idle_pass(bridge) is not None
    assert unseen_runs(bridge) == Unseen(dagster_runs=0, metaflow_runs=0)


def test_the_idle_check_reads_what_the_dagster_source_reads():
    assert set(READ_TYPES) == {kind.value for kind in DAGSTER_READ_TYPES}


def test_dagster_yaml_says_where_the_event_log_is(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    assert dagster_event_log(home) == (home / "history" / "runs" / "index.db", home / "history" / "runs")
    monkeypatch.setenv("SOMEWHERE", str(tmp_path / "else"))
    (home / "dagster.yaml").write_text("storage:\n  sqlite:\n    base_dir:\n      env: SOMEWHERE\n")
    runs = tmp_path / "else" / "history" / "runs"
    assert dagster_event_log(home) == (runs / "index.db", runs)
    (home / "dagster.yaml").write_text(CONSOLIDATED.format(home=home))
    assert dagster_event_log(home) == (home / "history" / "event_log.db", None)
    (home / "dagster.yaml").write_text("storage:\n  postgres:\n    postgres_url: postgresql://x\n")
    assert dagster_event_log(home) is None
