"""`taxi-lineage`: the bridge's command line for this project."""

from __future__ import annotations

import os
import sys

from taxi_core.settings import SettingsError, load_settings
from taxi_core.tool_env import apply_tool_environment


def main(argv: list[str] | None = None) -> int:
    try:
        settings = load_settings()
    except SettingsError as err:
        print(f"taxi-lineage: {err}", file=sys.stderr)
        return 2
    apply_tool_environment(settings)
    # Metaflow and DataHub read their configuration when first imported: only now, with it in place.
    from bridge.cli import main as cli
    from forecast_assets.instance import dagster_home
    from forecast_assets.lineage import TITLE, taxi_bridge

    # The instance's dagster.yaml, for a pass; it names its folders by DAGSTER_HOME, which `./run` exports.
    os.environ.setdefault("DAGSTER_HOME", str(dagster_home(settings)))
    return cli.main(sys.argv[1:] if argv is None else argv, taxi_bridge(settings), prog="taxi-lineage", title=TITLE)


if __name__ == "__main__":
    sys.exit(main())
