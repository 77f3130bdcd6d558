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


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["demo", "--scale", "0"], "--scale '0'"),
        (["demo", "--months", "2031-02"], "--months '2031-02'"),
        (["demo", "--profile", "nope"], "invalid choice: 'nope'"),
        (["demo", "--nope"], "unrecognized arguments: --nope"),
        (["--help"], "usage: taxi"),
        (["demo", "--help"], "usage: taxi demo"),
    ],
)
def test_taxi_reads_its_arguments_before_anything_heavy_loads(argv, says):
    report, output = _run("taxi_demo.cli", argv)
    assert says in output
    assert report["code"] == (0 if "--help" in argv else 2)
    assert report["loaded"] == [], f"`taxi {' '.join(argv)}` loaded {report['loaded']} before answering"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["nope"], "invalid choice: 'nope'"),
        (["picture", "--hops", "0"], "a picture reaches at least 1 hop"),
        (["show"], "the following arguments are required: name"),
        (["--help"], "usage: taxi-lineage"),
        (["model", "--help"], "usage: taxi-lineage model"),
    ],
)
def test_taxi_lineage_reads_its_arguments_before_anything_heavy_loads(argv, says):
    report, output = _run("forecast_assets.lineage_cli", argv)
    assert says in output
    assert report["code"] == (0 if "--help" in argv else 2)
    assert report["loaded"] == [], f"`taxi-lineage {' '.join(argv)}` loaded {report['loaded']} before answering"
