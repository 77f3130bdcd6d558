"""What a lineage pass with nothing new costs, as a user pays for it: the CPU of the whole `taxi-lineage pass`
process, beside `python -c pass` measured the same way.

    ./run python benchmarks/idle_pass.py [REPEAT]

Works on a copy of the demo's state folder (its lineage, Dagster, Metaflow and DataHub folders), so the
demo is left as it was. Three configurations, each caught up by one full pass first:

- the default targets (the OpenLineage client's file, DataHub Lite);
- the OpenLineage target over HTTP (a loopback receiver) and DataHub Lite;
- every built-in sink at once: HTTP, DataHub Lite, a DataHub metadata file, a SQLite table and an S3 archive
  (a loopback S3 server).

Then REPEAT idle passes each; prints the median CPU (user + system) and wall time of each, and, last, the
worst configuration's median CPU in milliseconds.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the loopback receivers are the tests' own

from tests.loopback_lineage import LineageServer  # noqa: E402
from tests.loopback_s3 import CREDENTIALS, s3_bucket  # noqa: E402


def measured(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """CPU seconds (user + system of the process and its children) and wall seconds of one run; its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done.stdout + done.stderr


def copy_of_demo_state(into: Path) -> Path:
    from taxi_core.settings import load_settings

    state = load_settings().state_dir
    if not (state / "lineage" / "outbox.sqlite").exists():
        raise SystemExit(f"No lineage in {state}: run `./run demo` first")
    copy = into / "state"
    copy.mkdir()
    for part in ("lineage", "dagster", "metaflow", "datahub", "settings.env"):
        source = state / part
        if source.is_dir():
            shutil.copytree(source, copy / part)
        elif source.exists():
            shutil.copy2(source, copy / part)
    return copy


def main(repeat: int) -> int:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the S3 server's request log
    os.environ.update(CREDENTIALS)  # only the loopback S3 server accepts them
    with tempfile.TemporaryDirectory() as folder, LineageServer() as receiver, s3_bucket() as s3:
        state = copy_of_demo_state(Path(folder))
        base = {**os.environ, "TAXI_STATE_DIR": str(state), "DAGSTER_HOME": str(state / "dagster")}
        base.pop("OPENLINEAGE_URL", None)
        every_sink = [
            {"kind": "datahub-file", "name": "metadata-file", "options": {"path": str(state / "metadata.json")}},
            {"kind": "sqlite-table", "name": "table", "options": {"path": str(state / "events.sqlite")}},
        ]
        configurations = {
            "default targets (file, DataHub Lite)": base,
            "HTTP target, DataHub Lite": {**base, "OPENLINEAGE_URL": receiver.url},
            "every built-in sink (HTTP, Lite, metadata file, SQLite table, S3 archive)": {
                **base,
                **CREDENTIALS,
                "TAXI_S3_ENDPOINT_URL": s3.endpoint,
                "OPENLINEAGE_URL": receiver.url,
                "TAXI_LINEAGE_SINKS": json.dumps(every_sink),
                "TAXI_LINEAGE_ARCHIVE": f"s3://{s3.bucket}/lineage",
            },
        }
        command = [sys.executable, "-m", "forecast_assets.lineage_cli", "pass"]
        baseline = [measured([sys.executable, "-c", "pass"], base)[:2] for _ in range(repeat)]
        print(f"python -c pass: median CPU {statistics.median(c for c, _ in baseline) * 1000:.0f} ms")
        worst = 0.0
        for name, env in configurations.items():
            cpu, wall, said = measured(command, env)  # catches up: delivers the copy's events to the new targets
            print(f"\n{name}\n  catch-up pass: CPU {cpu:.2f} s, wall {wall:.2f} s")
            runs = [measured(command, env) for _ in range(repeat)]
            idle = [said for _, _, said in runs if "nothing new" in said]
            cpu_median = statistics.median(c for c, _, _ in runs)
            print(
                f"  idle pass: median CPU {cpu_median * 1000:.0f} ms, "
                f"wall {statistics.median(w for _, w, _ in runs):.2f} s ({len(idle)} of {repeat} by the idle check)"
            )
            if len(idle) < repeat:
                print("  a pass that was not idle said:\n    " + runs[0][2].strip().replace("\n", "\n    "))
            worst = max(worst, cpu_median)
    print(f"\n{worst * 1000:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
