"""A one-op Dagster job whose op holds until told to go on: a run whose worker is killed while it runs.

hold   writes its process's pid to $HOLD_DIR/holding, then waits for $HOLD_DIR/go (5 min at most)
"""

import os
import time
from pathlib import Path

from dagster import Definitions, job, op


@op
def hold():
    folder = Path(os.environ["HOLD_DIR"])
    (folder / "holding").write_text(str(os.getpid()))
    give_up = time.monotonic() + 300
    while not (folder / "go").exists() and time.monotonic() < give_up:
        time.sleep(0.1)


@job
def hold_job():
    hold()


defs = Definitions(jobs=[hold_job])
