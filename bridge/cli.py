"""`taxi-lineage`: one bridge pass without the Dagster daemon, and a look at the lineage graph.

taxi-lineage                       one pass: Dagster + Metaflow -> OpenLineage -> DataHub (Lite)
taxi-lineage show DATASET_OR_JOB   upstream and downstream across both tools, versions, last runs
taxi-lineage model [VERSION]       model versions and the datasets each was trained on
taxi-lineage picture [--out FILE]  the whole graph as an SVG to open in a browser
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

from bridge.graph_view import LineageGraph, NotInGraph, model_versions, not_found_message, to_svg

# Each command imports the tools it needs when it runs: the pass needs Dagster, Metaflow and the
# OpenLineage client, the read commands only DataHub Lite (and SQLite), and `--help` none of them.


class UsageError(Exception):
    """A name or state the command cannot work with; reported like argparse's usage errors."""


def lineage_pass() -> int:
    from forecast_assets.local_state import dagster_home

    os.environ.setdefault("DAGSTER_HOME", str(dagster_home()))
    from dagster import DagsterInstance

    from bridge.bridge_pass import default_outbox, run_pass
    from bridge.dagster_reports import report_metaflow_outputs
    from bridge.delivery import describe, make_client
    from bridge.sources import sources_for

    started = time.monotonic()
    client = make_client()
    outbox = default_outbox()
    with DagsterInstance.get() as instance:
        result = run_pass(sources_for(instance), outbox, client)
        reported = report_metaflow_outputs(instance, outbox)
    seconds = time.monotonic() - started
    queued = sum(result.queued.values())
    print(f"Lineage pass: {queued} new events ({dict(result.event_types)}) in {seconds:.1f} s")
    print(f"  per source: {result.queued}")
    print(f"  delivered {result.delivery.delivered} to {describe(client)}; {result.delivery.pending} still queued")
    if result.datahub is not None:
        print(f"  DataHub: {result.datahub.events} events as {result.datahub.aspects} aspects"
              + (f"; stopped: {result.datahub.error}" if result.datahub.error else ""))  # fmt: skip
    if reported:
        print(f"  reported {len(reported)} Metaflow runs from the shell to Dagster as materializations")
    if result.untranslated:
        print(f"  {len(result.untranslated)} Dagster records could not be translated (storage ids in the log)")
    if result.delivery.error:
        print(f"  delivery stopped: {result.delivery.error} (queued events are retried on the next pass)")
    return 0


def _open_graph():
    """The lineage graph and the open DataHub Lite it was read from (the caller closes it)."""
    from bridge.lite import HOW_TO_MAKE_ONE, NoLineageGraph, lite_path, open_for_reading

    try:
        lite = open_for_reading()
    except NoLineageGraph as err:
        raise UsageError(str(err)) from err
    try:
        graph = LineageGraph.from_lite(lite)
    except BaseException:
        lite.close()
        raise
    if not graph.labels:
        lite.close()
        msg = f"The lineage graph at {lite_path()} holds no jobs yet; {HOW_TO_MAKE_ONE}"
        raise UsageError(msg)
    return graph, lite


def _versions_written(label: str) -> list[tuple[str, str, str]]:
    """(time, job, version) of each completed run that wrote the dataset ``label`` or ran as job ``label``."""
    from bridge.outbox import default_outbox

    runs = set()
    for queued in default_outbox().events_after(0, limit=1_000_000):
        event = json.loads(queued.payload)
        if event["eventType"] != "COMPLETE":
            continue
        for dataset in event.get("outputs", []):
            names = {d.get("name") for d in dataset.get("facets", {}).get("symlinks", {}).get("identifiers", [])}
            if label in names or dataset["name"].endswith(label) or event["job"]["name"] == label:
                version = dataset.get("facets", {}).get("version", {}).get("datasetVersion", "?")
                runs.add((event["eventTime"], event["job"]["name"], version))
    return sorted(runs)


def show(name: str) -> int:
    graph, lite = _open_graph()
    lite.close()
    try:
        node = graph.find(name)
    except NotInGraph as err:
        raise UsageError(str(err)) from err
    print(f"{graph.labels[node]}  ({graph.kinds[node]})")
    for title, upstream in (("upstream", True), ("downstream", False)):
        print(f"\n{title}:")
        for depth, other in graph.walk(node, upstream):
            print(f"  {'  ' * (depth - 1)}{graph.labels[other]}  [{graph.kinds[other]}]")
    runs = _versions_written(graph.labels[node])
    if runs:
        print("\nlast versions written (time, job, version):")
        for when, job, version in runs[-8:]:
            print(f"  {when}  {job}  {version}")
    return 0


def model(version: str | None) -> int:
    _, lite = _open_graph()
    try:
        versions = model_versions(lite)
    finally:
        lite.close()
    matching = [v for v in versions if not version or version in v.tag]
    if version and not matching:
        raise UsageError(not_found_message("model version", version, [v.tag for v in versions]))
    if not versions:
        print("No model versions in the lineage graph yet: train one (`taxi demo`), then run a lineage pass.")
    for found in matching:
        print(f"{found.tag}  {', '.join(f'{name}={value}' for name, value in found.metrics.items())}")
        for dataset in found.inputs:
            print(f"  input {dataset}")
    return 0


def picture(out: Path) -> int:
    graph, lite = _open_graph()
    lite.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    pictured = graph.without_dead_ends()
    out.write_text(to_svg(pictured, "NYC taxi demand: lineage across Dagster and Metaflow"))
    print(
        f"Lineage picture: {out} ({len(pictured.labels)} of {len(graph.labels)} nodes; asset-check jobs left out); "
        "open it in a browser"
    )
    return 0


def _default_picture() -> Path:
    from forecast_assets.settings import state_path

    return state_path("lineage") / "lineage_graph.svg"


def _keep_tool_files_in_state_folder() -> None:
    """Metaflow's client cache and DataHub's telemetry setting, as for every other command."""
    from forecast_assets.local_state import apply_tool_environment

    apply_tool_environment()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="taxi-lineage", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("pass", help="one bridge pass (the default)")
    show_parser = commands.add_parser("show", help="a dataset's or job's upstream and downstream")
    show_parser.add_argument("name", help="e.g. nyc_taxi.yellow_rides_hourly_forecast or TrainForecastModelFlow.load")
    model_parser = commands.add_parser("model", help="model versions and their input datasets")
    model_parser.add_argument("version", nargs="?", help="a Metaflow run pathspec, or part of it")
    picture_parser = commands.add_parser("picture", help="write the lineage graph as SVG")
    picture_parser.add_argument("--out", type=Path, default=None, help="where to write the SVG")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    _keep_tool_files_in_state_folder()
    try:
        if args.command == "show":
            return show(args.name)
        if args.command == "model":
            return model(args.version)
        if args.command == "picture":
            return picture(args.out or _default_picture())
        return lineage_pass()
    except UsageError as err:
        print(f"{parser.prog} {args.command or 'pass'}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
