"""`taxi-lineage`: the bridge's command line for this project. Its arguments are read first: a mistyped command
or ``--help`` answers before Metaflow, DataHub or Dagster load (tests/test_cli_imports.py)."""

from __future__ import annotations

import os
import sys

from bridge.cli.arguments import parser
from taxi_core.settings import SettingsError, load_settings
from taxi_core.tool_env import apply_tool_environment

PROG = "taxi-lineage"


def main(argv: list[str] | None = None) -> int:
    args = parser(PROG).parse_args(sys.argv[1:] if argv is None else argv)
    try:
        settings = load_settings()
    except SettingsError as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 2
    apply_tool_environment(settings)
    # Metaflow and DataHub read their configuration when first imported: only now, with it in place.
    from bridge.cli.main import run
    from forecast_assets.instance import dagster_home
    from forecast_assets.lineage import TITLE, taxi_bridge

    # The instance's dagster.yaml, for a pass; it names its folders by DAGSTER_HOME, which `./run` exports.
    os.environ.setdefault("DAGSTER_HOME", str(dagster_home(settings)))
    return run(args, taxi_bridge(settings), prog=PROG, title=TITLE)


if __name__ == "__main__":
    sys.exit(main())
