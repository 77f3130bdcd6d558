"""A refusal or ``--help`` answers before anything heavy loads: each entry point's arguments are read first.

Each command runs in a fresh interpreter, as a user's shell starts it, and reports the modules it loaded: a bad
option of `taxi demo` once waited 15-35 s on a busy machine for pandas and pyiceberg before it was refused. The
figures in seconds are `benchmarks/command_latency.py`'s; this test holds what they rest on, whatever the load."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# What takes seconds to import on a busy machine, and what no argument check needs.
HEAVY = ("pandas", "numpy", "pyarrow", "pyiceberg", "pyspark", "dagster", "metaflow", "datahub", "openlineage",
         "sklearn", "matplotlib")  # fmt: skip

RUN_AND_REPORT = """
import json, sys
from {module} import main
try:
    code = main({argv!r})
except SystemExit as stop:
    code = stop.code
loaded = sorted({{name.split(".")[0] for name in sys.modules}} & set({heavy!r}))
print(json.dumps({{"code": code, "loaded": loaded}}), file=sys.__stdout__)
"""


def _run(module: str, argv: list[str]) -> tuple[dict, str]:
    script = RUN_AND_REPORT.format(module=module, argv=argv, heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return report, done.stdout + done.stderr


# Each command's entry point by the name a user types.
ENTRY_POINTS = {"taxi": "taxi_demo.cli", "taxi-lineage": "forecast_assets.lineage_cli"}


@pytest.mark.parametrize(
    ("command", "argv", "says"),
    [
        ("taxi", ["demo", "--scale", "0"], "--scale '0'"),
        ("taxi", ["demo", "--months", "2031-02"], "--months '2031-02'"),
        ("taxi", ["demo", "--profile", "nope"], "invalid choice: 'nope'"),
        ("taxi", ["demo", "--nope"], "unrecognized arguments: --nope"),
        ("taxi", ["--help"], "usage: taxi"),
        ("taxi", ["demo", "--help"], "usage: taxi demo"),
        ("taxi-lineage", ["nope"], "invalid choice: 'nope'"),
        ("taxi-lineage", ["picture", "--hops", "0"], "a picture reaches at least 1 hop"),
        ("taxi-lineage", ["show"], "the following arguments are required: name"),
        ("taxi-lineage", ["--help"], "usage: taxi-lineage"),
        ("taxi-lineage", ["model", "--help"], "usage: taxi-lineage model"),
    ],
)
def test_a_command_reads_its_arguments_before_anything_heavy_loads(command, argv, says):
    report, output = _run(ENTRY_POINTS[command], argv)
    assert says in output
    assert report["code"] == (0 if "--help" in argv else 2)
    assert report["loaded"] == [], f"`{command} {' '.join(argv)}` loaded {report['loaded']} before answering"
