"""The bridge's command line: one pass without the Dagster daemon, and a look at the lineage graph.

A project gives it its :class:`~bridge.config.LineageBridge`; the pass loads the project's code
location from ``workspace.yaml`` (for the asset graph) and opens the Dagster instance of ``DAGSTER_HOME``.

    pass                       one pass: Dagster + Metaflow -> OpenLineage -> DataHub (the default)
    show DATASET_OR_JOB [--json]  upstream and downstream trees across both tools: versions and last runs
    show NAME --version V      the lineage exactly as model version V's training run read and wrote it
    model [VERSION] [--json]   model versions: inputs at the versions read, metrics (from the run that trained it)
    diff A B [--json]          what changed between two model versions: inputs added or removed, versions, metrics
    picture [--format mermaid] the whole graph as an SVG to open in a browser, or Mermaid text for markdown
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from bridge.config import LineageBridge
from bridge.graph_view import (
    LineageGraph,
    NotInGraph,
    current_versions,
    last_runs,
    not_found_message,
    to_mermaid,
    to_svg,
)
from bridge.lite import NoLineageGraph, open_for_reading
from bridge.model_versions import TrainedVersion, differences, find_version, run_tree, trained_versions
from bridge.outbox import Outbox


class UsageError(Exception):
    """A name or state the command cannot work with; reported like argparse's usage errors."""


def lineage_pass(bridge: LineageBridge) -> int:
    # Dagster, Metaflow and the OpenLineage client load only for a pass: the read commands need none of them.
    from dagster import DagsterInstance

    from bridge.bridge_pass import run_pass
    from bridge.code_location import CodeLocationNotFound, load_asset_graph
    from bridge.delivery import describe, make_client

    started = time.monotonic()
    try:
        graph = load_asset_graph(bridge.workspace_file, bridge.code_location)
    except CodeLocationNotFound as err:
        raise UsageError(str(err)) from err
    client = make_client(bridge.events_file)
    with DagsterInstance.get() as instance:
        result = run_pass(bridge, instance, graph, client)
    seconds = time.monotonic() - started
    print(f"Lineage pass: {sum(result.queued.values())} new events ({dict(result.event_types)}) in {seconds:.1f} s")
    print(f"  per source: {result.queued}")
    print(f"  delivered {result.delivery.delivered} to {describe(client)}; {result.delivery.pending} still queued")
    if result.datahub is not None:
        print(f"  DataHub: {result.datahub.events} events as {result.datahub.aspects} aspects"
              + (f"; stopped: {result.datahub.error}" if result.datahub.error else ""))  # fmt: skip
    if result.reported:
        print(f"  reported {len(result.reported)} Metaflow runs made outside Dagster to Dagster as materializations")
    if result.untranslated:
        print(f"  {len(result.untranslated)} Dagster records could not be translated (storage ids in the log)")
    if result.delivery.error:
        print(f"  delivery stopped: {result.delivery.error} (queued events are retried on the next pass)")
    return 0


def _open_graph(bridge: LineageBridge):
    """The lineage graph and the open DataHub Lite it was read from (the caller closes it)."""
    if bridge.datahub.kind != "lite":
        raise UsageError(f"The lineage graph is read from DataHub Lite; DataHub is set to {bridge.datahub.kind!r}")
    try:
        lite = open_for_reading(bridge.datahub.lite_path, bridge.how_to_fill_graph)
    except NoLineageGraph as err:
        raise UsageError(str(err)) from err
    try:
        graph = LineageGraph.from_lite(lite)
    except BaseException:
        lite.close()
        raise
    if not graph.labels:
        lite.close()
        msg = f"The lineage graph at {bridge.datahub.lite_path} holds no jobs yet; {bridge.how_to_fill_graph}"
        raise UsageError(msg)
    return graph, lite


def _events(bridge: LineageBridge) -> list[dict]:
    """Every event the bridge queued, oldest first: the runs' states and the versions they wrote."""
    return [json.loads(queued.payload) for queued in Outbox(bridge.outbox_path).events_after(0, limit=10_000_000)]


def _describe(graph: LineageGraph, node: str, runs: dict, versions: dict) -> str:
    label, kind = graph.labels[node], graph.kinds[node]
    if kind == "dataset":
        version = versions.get(label) or next((v for name, v in versions.items() if name.endswith(label)), None)
        return f"{label}  [dataset" + (f", version {version}]" if version else "]")
    run = runs.get(label)
    return f"{label}  [{kind} job" + (f"; {run.describe()}]" if run else "; no run yet]")


def _node_json(graph: LineageGraph, node: str, runs: dict, versions: dict) -> dict:
    label, kind = graph.labels[node], graph.kinds[node]
    if kind == "dataset":
        return {"name": label, "kind": "dataset", "version": versions.get(label)}
    run = runs.get(label)
    last = None
    if run:
        last = {"status": run.status, "started": run.started, "finished": run.finished, "seconds": run.seconds}
    return {"name": label, "kind": f"{kind} job", "last_run": last}


def _tree_json(graph: LineageGraph, node: str, upstream: bool, runs: dict, versions: dict) -> list[dict]:
    """The tree as nested nodes; a node already shown is listed with ``"repeated": true`` and no children."""
    children: dict[str, list[dict]] = {node: []}
    for line in graph.tree(node, upstream):
        entry = {**_node_json(graph, line.node, runs, versions), "repeated": line.repeated, "children": []}
        children[line.parent].append(entry)
        if not line.repeated:
            children[line.node] = entry["children"]
    return children[node]


def show(bridge: LineageBridge, name: str, as_json: bool = False) -> int:
    graph, lite = _open_graph(bridge)
    lite.close()
    try:
        node = graph.find(name)
    except NotInGraph as err:
        raise UsageError(str(err)) from err
    events = _events(bridge)
    runs, versions = last_runs(events), current_versions(events)
    if as_json:
        tree = {
            **_node_json(graph, node, runs, versions),
            "upstream": _tree_json(graph, node, True, runs, versions),
            "downstream": _tree_json(graph, node, False, runs, versions),
        }
        print(json.dumps(tree, indent=2))
        return 0
    print(_describe(graph, node, runs, versions))
    for title, upstream, arrow in (("upstream", True, "<-"), ("downstream", False, "->")):
        lines = graph.tree(node, upstream)
        print(f'\n{title} ({arrow} reads as "{"is made from" if upstream else "feeds"}"):')
        if not lines:
            print("  (nothing)")
        for line in lines:
            seen = "  (shown above)" if line.repeated else ""
            print(f"  {'   ' * (line.depth - 1)}{arrow} {_describe(graph, line.node, runs, versions)}{seen}")
    return 0


def _versions(bridge: LineageBridge) -> list[TrainedVersion]:
    return trained_versions(_events(bridge))


def _version(versions: list[TrainedVersion], wanted: str) -> TrainedVersion:
    found = find_version(versions, wanted)
    if found is None:
        raise UsageError(not_found_message("model version", wanted, [v.version for v in versions]))
    return found


def model(bridge: LineageBridge, version: str | None, as_json: bool) -> int:
    versions = _versions(bridge)
    chosen = [_version(versions, version)] if version else versions
    if as_json:
        print(json.dumps([v.to_json() for v in chosen], indent=2))
        return 0
    if not versions:
        print(f"No model versions in the lineage yet; {bridge.how_to_fill_graph}.")
    for found in chosen:
        print(f"{found.version}  {', '.join(f'{name}={value:g}' for name, value in found.metrics.items())}")
        for dataset in found.inputs:
            print(f"  input {dataset.name}" + (f" @ {dataset.version}" if dataset.version else ""))
    return 0


def diff(bridge: LineageBridge, first: str, second: str, as_json: bool) -> int:
    versions = _versions(bridge)
    before, after = _version(versions, first), _version(versions, second)
    if before.trained_at > after.trained_at:
        before, after = after, before
    changes = differences(before, after)
    if as_json:
        print(json.dumps({"from": before.to_json(), "to": after.to_json(), "changes": changes}, indent=2))
        return 0
    print(f"From {before.version} ({before.trained_at}) to {after.version} ({after.trained_at}):")
    for line in changes:
        print(f"  {line}")
    return 0


def show_version(bridge: LineageBridge, name: str, wanted: str) -> int:
    """The lineage exactly as the run that trained one model version read and wrote it."""
    events = _events(bridge)
    version = _version(trained_versions(events), wanted)
    print(f"{version.model} {version.version}, trained by {version.job} (run {version.run_id}, {version.trained_at})")
    for job, reads, writes in run_tree(events, version):
        print(f"  {job}")
        for dataset in reads:
            print(f"    <- {dataset.name}" + (f" @ {dataset.version}" if dataset.version else ""))
        for dataset in writes:
            print(f"    -> {dataset.name}" + (f" @ {dataset.version}" if dataset.version else ""))
    related = {d.name for _, reads, writes in run_tree(events, version) for d in (*reads, *writes)}
    if not any(name == d or d.endswith(name) for d in related):
        print(f"  ({name} is not among what this run read or wrote)")
    return 0


def picture(bridge: LineageBridge, out: Path, title: str, form: str) -> int:
    graph, lite = _open_graph(bridge)
    lite.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    pictured = graph.without_dead_ends()
    out.write_text(to_svg(pictured, title) if form == "svg" else to_mermaid(pictured))
    where = "open it in a browser" if form == "svg" else "paste it into a ```mermaid block in markdown"
    print(
        f"Lineage picture: {out} ({len(pictured.labels)} of {len(graph.labels)} nodes; asset-check jobs left out); "
        + where
    )
    return 0


def parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("pass", help="one bridge pass (the default)")
    show_parser = commands.add_parser("show", help="a dataset's or job's upstream and downstream")
    show_parser.add_argument("name", help="a table identifier (db.table) or a job (Flow.step, job.step)")
    show_parser.add_argument("--version", help="a model version: the lineage exactly as its training run saw it")
    show_parser.add_argument("--json", action="store_true", help="the trees as nested JSON, for scripts")
    model_parser = commands.add_parser("model", help="model versions, their inputs (at the versions read), metrics")
    model_parser.add_argument("version", nargs="?", help="a model version (a Metaflow run pathspec), or part of it")
    model_parser.add_argument("--json", action="store_true", help="a list of versions, oldest first, for scripts")
    diff_parser = commands.add_parser("diff", help="what changed between two model versions")
    diff_parser.add_argument("first", help="a model version")
    diff_parser.add_argument("second", help="another model version")
    diff_parser.add_argument("--json", action="store_true", help="both versions and the changes, for scripts")
    picture_parser = commands.add_parser("picture", help="write the lineage graph as SVG")
    picture_parser.add_argument("--out", type=Path, default=None, help="where to write it")
    picture_parser.add_argument(
        "--format", choices=("svg", "mermaid"), default="svg", help="an SVG, or Mermaid text for markdown"
    )
    return parser


def main(argv: list[str] | None, bridge: LineageBridge, prog: str = "lineage", title: str = "Lineage") -> int:
    """Run one command for ``bridge``; returns the exit status (2 for a usage error)."""
    arguments = parser(prog)
    args = arguments.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.command == "show" and args.version:
            return show_version(bridge, args.name, args.version)
        if args.command == "show":
            return show(bridge, args.name, args.json)
        if args.command == "model":
            return model(bridge, args.version, args.json)
        if args.command == "diff":
            return diff(bridge, args.first, args.second, args.json)
        if args.command == "picture":
            out = args.out or bridge.lineage_dir / f"lineage_graph.{'svg' if args.format == 'svg' else 'mmd'}"
            return picture(bridge, out, title, args.format)
        return lineage_pass(bridge)
    except UsageError as err:
        print(f"{prog} {args.command or 'pass'}: error: {err}", file=sys.stderr)
        return 2
