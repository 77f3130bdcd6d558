"""The bridge's command line: one pass without the Dagster daemon, and a look at the lineage graph.

A project gives it its bridge configuration (bridge.config.LineageBridge); a pass loads the project's
code location from workspace.yaml (for the asset graph) and opens the Dagster instance of DAGSTER_HOME.

    pass [--wait S]            one pass: Dagster + Metaflow -> OpenLineage -> DataHub (the default)
    status [--json]            is lineage healthy, how far behind is each sink (answers from the outbox)
    watch [--interval S]       a pass every S seconds: a finished step is in the graph within seconds
    dead-letters [--json]      events a sink gave up on; retry ID... | --all queues them again;
                               discard ID... | --all gives up on them
    rebuild SINK|outbox        set a sink's state aside and refill it, or a damaged outbox from the sources
    show DATASET_OR_JOB [--json]  upstream and downstream trees across both tools: versions and last runs
    show DB.TABLE.COLUMN [--direct]  the column's upstream columns across both tools, version by version
    show NAME --version V      a dataset version (or model version V's output) exactly as each run read it
    model [VERSION] [--json]   model versions: candidate, features, inputs at the versions read, metrics
    diff A B [--json]          two model versions (or db.table@V1 db.table@V2): inputs, versions, columns, metrics
    picture [NAME] [--hops N] [--format mermaid] [--version V]
                               the graph as an SVG (Graphviz) or Mermaid text, and each dataset's own picture
                               (its lineage within N hops); NAME (a table, dataset, job or Dagster asset key):
                               that one's picture alone; V highlighted

Read commands answer from a lineage index (index.sqlite beside the outbox), updated by every pass.

Exit codes of pass and status: 0 healthy; 1 damaged state (the message names the repair); 2 usage
error; 3 a sink is failing (its target is away or refuses the credentials, or an event is held on
an error); 4 dead letters wait for a person.
"""

from __future__ import annotations

import argparse
from pathlib import Path

NEIGHBOURHOOD_HOPS = 2  # a dataset's own picture: what it is made from and what it feeds, two datasets each way


def _hops(text: str) -> int:
    hops = int(text)
    if hops < 1:
        raise argparse.ArgumentTypeError(f"{text} hops: a picture reaches at least 1 hop")
    return hops


def parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command")
    pass_parser = commands.add_parser("pass", help="one bridge pass (the default)")
    pass_parser.add_argument(
        "--wait", type=float, default=10.0, help="seconds to wait for a pass already running (default 10)"
    )
    watch_parser = commands.add_parser("watch", help="a pass every half second: lineage within seconds")
    watch_parser.add_argument("--interval", type=float, default=0.5, help="seconds between passes (default 0.5)")
    watch_parser.add_argument("--while-sensor-ticks", action="store_true", help="stop when the sensor stops ticking")
    watch_parser.add_argument(
        "--started-by", type=int, metavar="PID", help="stop when this process (the one that started the watcher) ends"
    )
    letters_parser = commands.add_parser("dead-letters", help="events a sink gave up on, with their errors")
    letters_parser.add_argument("--json", action="store_true", help="as JSON, for scripts")
    retry_parser = commands.add_parser("retry", help="queue dead letters again for the next pass")
    retry_parser.add_argument("ids", nargs="*", type=int, help="dead letters by #ID")
    retry_parser.add_argument("--all", action="store_true", help="every parked dead letter")
    discard_parser = commands.add_parser("discard", help="give up on dead letters for good")
    discard_parser.add_argument("ids", nargs="*", type=int, help="dead letters by #ID")
    discard_parser.add_argument("--all", action="store_true", help="every dead letter")
    status_parser = commands.add_parser("status", help="is lineage healthy; how far behind each sink is")
    status_parser.add_argument("--json", action="store_true", help="as JSON, for scripts and health checks")
    rebuild_parser = commands.add_parser("rebuild", help="refill a sink (e.g. datahub), or rebuild a damaged outbox")
    rebuild_parser.add_argument("what", help="outbox, or a configured sink by its name (see `status`)")
    show_parser = commands.add_parser("show", help="a dataset's or job's upstream and downstream")
    show_parser.add_argument(
        "name", help="a table identifier (db.table), a column (db.table.column) or a job (Flow.step, job.step)"
    )
    show_parser.add_argument(
        "--version", help="a dataset version, or a model version: the lineage exactly as the runs read it"
    )
    show_parser.add_argument("--json", action="store_true", help="the trees as nested JSON, for scripts")
    show_parser.add_argument(
        "--direct", action="store_true", help="for a column: only the columns its values are computed from"
    )
    show_parser.add_argument(
        "--all", action="store_true", help="for a column: each source column on its own line, never summed up"
    )
    model_parser = commands.add_parser(
        "model", help="model versions: candidate, features, inputs (at the versions read), metrics"
    )
    model_parser.add_argument("version", nargs="?", help="a model version (a Metaflow run pathspec), or part of it")
    model_parser.add_argument("--json", action="store_true", help="a list of versions, oldest first, for scripts")
    diff_parser = commands.add_parser("diff", help="what changed between two model versions")
    diff_parser.add_argument("first", help="a model version, or a dataset version as db.table@VERSION")
    diff_parser.add_argument("second", help="another of the same kind")
    diff_parser.add_argument("--json", action="store_true", help="both versions and the changes, for scripts")
    picture_parser = commands.add_parser(
        "picture", help="write the lineage graph as SVG, and each dataset's own picture; or one node's picture"
    )
    picture_parser.add_argument(
        "name",
        nargs="?",
        help="a table (db.table), dataset, job or Dagster asset key (nyc_taxi/raw_yellow): its picture",
    )
    picture_parser.add_argument(
        "--hops", type=_hops, default=NEIGHBOURHOOD_HOPS,
        help=f"how far a node's picture reaches upstream and downstream, in datasets (default {NEIGHBOURHOOD_HOPS})",
    )  # fmt: skip
    picture_parser.add_argument("--out", type=Path, default=None, help="where to write it")
    picture_parser.add_argument(
        "--format", choices=("svg", "mermaid"), default="svg", help="an SVG, or Mermaid text for markdown"
    )
    picture_parser.add_argument("--version", help="a model version: its run's actual inputs and steps highlighted")
    return parser
