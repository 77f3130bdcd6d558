"""A three-step Metaflow flow whose middle step holds until told to go on: a run to kill while it runs.

start   records the lineage's start artifacts
hold    writes its run id and its process's pid to $HOLD_DIR/held.json, then waits for $HOLD_DIR/go (10 min at most)
end     nothing
"""

import json
import os
import time
from pathlib import Path

from metaflow import FlowSpec, current, step

from bridge.sources.metaflow_recorder import record_lineage
from taxi_core.interrupts import terminate_as_interrupt


@record_lineage
class HoldFlow(FlowSpec):
    @step
    def start(self):
        self.next(self.hold)

    @step
    def hold(self):
        folder = Path(os.environ["HOLD_DIR"])
        held = {"run_id": current.run_id, "task_pid": os.getpid(), "runtime_pid": os.getppid()}
        (folder / "held.tmp").write_text(json.dumps(held))
        (folder / "held.tmp").rename(folder / "held.json")
        give_up = time.monotonic() + 600
        while not (folder / "go").exists() and time.monotonic() < give_up:
            time.sleep(0.1)
        self.next(self.end)

    @step
    def end(self):
        pass


if __name__ == "__main__":
    terminate_as_interrupt()  # as the project's training flow does
    HoldFlow()
