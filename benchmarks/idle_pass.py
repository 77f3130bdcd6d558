"""The median in-process lineage pass with nothing new, over the demo's state folder.

    ./run python benchmarks/idle_pass.py [REPEAT]

Loads what a sensor tick has at hand (the Dagster instance, the asset graph), runs one pass to catch
up, then REPEAT passes; prints each, then the median of the check a pass from the shell makes first
(``bridge.run.idle``, from files alone) beside it, and, last, the pass's median in milliseconds.
"""

from __future__ import annotations

import os
import statistics
import sys
import time


def main(repeat: int) -> int:
    from taxi_core.settings import load_settings
    from taxi_core.tool_env import apply_tool_environment

    settings = load_settings()
    apply_tool_environment(settings)
    os.environ.setdefault("DAGSTER_HOME", str(settings.dagster_home))
    # Dagster and the project load only once the settings put their configuration in place.
    from dagster import DagsterInstance

    from bridge.run.idle import idle_pass
    from bridge.run.lineage_pass import run_pass
    from bridge.sources.code_location import load_asset_graph
    from forecast_assets.lineage import taxi_bridge

    bridge = taxi_bridge(settings)
    if not bridge.outbox_path.exists():
        print(f"No lineage in {bridge.lineage_dir}: run the demo first", file=sys.stderr)
        return 1
    graph = load_asset_graph(bridge.workspace_file, bridge.code_location)
    with DagsterInstance.get() as instance:
        run_pass(bridge, instance, graph, wait=30)
        timings = []
        for _ in range(repeat):
            started = time.perf_counter()
            run_pass(bridge, instance, graph, wait=30)
            timings.append(time.perf_counter() - started)
    checks = []
    for _ in range(repeat):
        started = time.perf_counter()
        assert idle_pass(bridge) is not None, "something is new: the idle check would run the full pass"
        checks.append(time.perf_counter() - started)
    print(f"idle passes (ms): {' '.join(f'{t * 1000:.1f}' for t in timings)}")
    print(
        f"the idle check from files, as a pass from the shell makes it first (ms): median "
        f"{statistics.median(checks) * 1000:.1f} beside the full pass's {statistics.median(timings) * 1000:.1f}"
    )
    print(f"{statistics.median(timings) * 1000:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
