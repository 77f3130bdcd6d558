"""Compare the lineage's claims with what really happened: pure, over the scenario's record.

:func:`expected_inputs` derives, from the truth alone, what each output version was built from:
- a ``raw_yellow`` / ``raw_weather`` snapshot: the month's staged file(s) as they were after the run
  that wrote it (the snapshot summary names the run and the partition);
- an actuals snapshot: the ``raw_yellow`` snapshot that last wrote the month on main before it;
- a ``taxi_zones`` snapshot: the staged zone lookup as it was after the run that wrote it;
- a model version and the forecast its run wrote: the actuals, zone lookup (and weather, if it used
  weather) snapshots the run read, per its artifacts.
:func:`verdicts` then checks every claim: each OpenLineage event, each ``show --version``, the column
view, ``diff``, ``model --json`` and each DataHub run. One verdict per (claim, version checked).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

CHERRY_PICK_SOURCE = "source-snapshot-id"
RAW_YELLOW, RAW_WEATHER = "nyc_taxi.raw_yellow", "nyc_taxi.raw_weather"
ACTUALS, FORECAST = "nyc_taxi.yellow_rides_hourly_actuals", "nyc_taxi.yellow_rides_hourly_forecast"
ZONES = "nyc_taxi.taxi_zones"
# The partition recorded on a table written whole (the zone lookup): its files are recorded under "".
WHOLE_TABLE = "whole table"


@dataclass(frozen=True)
class Verdict:
    where: str  # which view made the claim
    dataset: str
    version: str
    right: bool
    detail: str = ""


def _properties(table: dict, snapshot_id: str) -> dict:
    """A snapshot's summary, or that of the snapshot it was cherry-picked from."""
    snapshot = table["snapshots"][snapshot_id]
    summary = snapshot["summary"]
    if "dagster.run-id" not in summary and CHERRY_PICK_SOURCE in summary:
        return {**table["snapshots"].get(summary[CHERRY_PICK_SOURCE], {}).get("summary", {}), **summary}
    return summary


def expected_inputs(record: dict) -> dict[tuple[str, str], dict[str, str]]:
    """(dataset label, version) -> {input label: input version}, from the truth alone."""
    labels = {key: value["lineage"] for key, value in record["labels"].items()}
    files_after = {run["run_id"]: run["files"] for run in record["runs"]}
    expected: dict[tuple[str, str], dict[str, str]] = {}
    sources = (RAW_YELLOW, "taxi_trip_files", "taxi"), (RAW_WEATHER, "weather_files", "weather")
    for table, source, kind in (*sources, (ZONES, "taxi_zone_files", "zones")):
        snapshots = record["snapshots"][table]
        for snapshot_id in snapshots["snapshots"]:
            summary = _properties(snapshots, snapshot_id)
            run, partition = summary.get("dagster.run-id"), summary.get("dagster.partition")
            if run in files_after and partition:
                month = "" if partition == WHOLE_TABLE else partition[:7]
                expected[(table, snapshot_id)] = {labels[source]: files_after[run][month][kind]}
    raw = record["snapshots"][RAW_YELLOW]
    actuals = record["snapshots"][ACTUALS]
    for snapshot_id in actuals["snapshots"]:
        summary = _properties(actuals, snapshot_id)
        partition, at = summary.get("dagster.partition"), actuals["snapshots"][snapshot_id]["at"]
        if not partition:
            continue  # the empty snapshot that created the table
        month_writes = [
            str(s) for s in raw["main"]
            if _properties(raw, str(s)).get("dagster.partition") == partition and raw["snapshots"][str(s)]["at"] < at
        ]  # fmt: skip
        if month_writes:
            expected[(ACTUALS, snapshot_id)] = {RAW_YELLOW: month_writes[-1]}
    for run in record["flow_runs"]:
        read = {ACTUALS: run["actuals_snapshot_id"], ZONES: run["zones_snapshot_id"]}
        if run["weather_snapshot_id"] is not None:
            read[RAW_WEATHER] = run["weather_snapshot_id"]
        expected[(labels["forecast_model"], run["model_version"])] = read
        # The forecast's write step reads only artifacts: its run stands for it, with what the run read.
        expected[(FORECAST, run["forecast_snapshot_id"])] = read
    return expected


def _named(datasets: list[dict]) -> dict[str, str | None]:
    def label(d: dict) -> str:
        symlinks = d.get("facets", {}).get("symlinks", {}).get("identifiers", [])
        return symlinks[0]["name"] if symlinks else d["name"]

    return {label(d): d.get("facets", {}).get("version", {}).get("datasetVersion") for d in datasets}


def _flow_reads(record: dict) -> dict[str, dict[str, str]]:
    """What each Metaflow run read or wrote, by run id: every version any of its events may name."""
    labels = {key: value["lineage"] for key, value in record["labels"].items()}
    found = {}
    for run in record["flow_runs"]:
        named = {ACTUALS: run["actuals_snapshot_id"], labels["forecast_model"]: run["model_version"]}
        named[FORECAST] = run["forecast_snapshot_id"]
        named[ZONES] = run["zones_snapshot_id"]
        if run["weather_snapshot_id"] is not None:
            named[RAW_WEATHER] = run["weather_snapshot_id"]
        found[run["pathspec"].split("/")[1]] = named
    return found


def event_verdicts(record: dict, expected: dict) -> list[Verdict]:
    verdicts = []
    flows = _flow_reads(record)
    # A flow run's COMPLETE names the model version (its pathspec); its steps name the flow run as parent.
    flow_runs = {
        e["run"]["runId"]: e["run"]["facets"]["modelTraining"]["version"].split("/")[1]
        for e in record["events"]
        if "modelTraining" in e["run"].get("facets", {})
    }
    for event in record["events"]:
        if event["eventType"] != "COMPLETE":
            continue
        job = event["job"]["name"]
        inputs, outputs = _named(event.get("inputs", [])), _named(event.get("outputs", []))
        for loop in inputs.keys() & outputs.keys():
            verdicts.append(Verdict(f"event {job}", loop, str(outputs[loop]), False, "both input and output"))
        integration = event["job"].get("facets", {}).get("jobType", {}).get("integration")
        if integration == "METAFLOW":
            parent = event["run"].get("facets", {}).get("parent", {}).get("run", {}).get("runId")
            truth = flows.get(flow_runs.get(event["run"]["runId"]) or flow_runs.get(parent, ""), {})
            for name, version in {**inputs, **outputs}.items():
                right = truth.get(name) == version
                verdicts.append(
                    Verdict(f"event {job}", name, str(version), right, f"the run's artifacts say {truth.get(name)}")
                )
            continue
        if "." not in job:
            continue  # a Dagster run: its steps say what each read
        for name, version in outputs.items():
            want = expected.get((name, str(version)))
            if want is None:
                continue  # the file assets: their versions are checked as the tables' inputs
            found = {k: v for k, v in inputs.items() if k in want or k not in outputs}
            verdicts.append(Verdict(f"event {job}", name, str(version), found == want, f"read {found}, truth {want}"))
    return verdicts


def _ran_by(record: dict) -> dict[tuple[str, str], tuple[str, str | None]]:
    """(table, snapshot) -> the run that wrote it as its tool names it, from Iceberg and Metaflow alone: a Dagster
    run id and partition (the snapshot's summary), or the Metaflow run's pathspec (the forecast it wrote)."""
    ran_by: dict[tuple[str, str], tuple[str, str | None]] = {}
    for table, snapshots in record["snapshots"].items():
        for snapshot_id in snapshots["snapshots"]:
            summary = _properties(snapshots, snapshot_id)
            if "dagster.run-id" in summary:
                partition = summary.get("dagster.partition")
                partition = None if partition == WHOLE_TABLE else partition
                ran_by[(table, snapshot_id)] = (summary["dagster.run-id"], partition)
    for run in record["flow_runs"]:
        ran_by[(FORECAST, run["forecast_snapshot_id"])] = (run["pathspec"], None)
    return ran_by


def tool_run_verdicts(record: dict) -> list[Verdict]:
    """Each run names itself as its tool does (the ``orchestratorRun`` facet): a Dagster run the scenario launched,
    for its month; each table version it names as output is that month's, written by it or, when the run found
    it published already, by an earlier run (per Iceberg's snapshot). ``show --version`` names as writer the run
    Iceberg's snapshot (or Metaflow's client, for the forecast) says wrote that version."""
    ran_by, verdicts = _ran_by(record), []
    launched = {run["run_id"]: (order, run["month"]) for order, run in enumerate(record["runs"])}
    flows = {run["pathspec"] for run in record["flow_runs"]}
    for event in record["events"]:
        if event["eventType"] != "COMPLETE" or "." not in event["job"]["name"]:
            continue
        facet = event["run"].get("facets", {}).get("orchestratorRun", {})
        said, partition = facet.get("runId"), facet.get("partition")
        where = f"event {event['job']['name']} orchestratorRun"
        if facet.get("orchestrator") == "metaflow":
            verdicts.append(Verdict(where, "(the run)", str(said), said in flows, f"Metaflow's runs: {flows}"))
        else:
            order, month = launched.get(said, (None, None))
            right = order is not None and (partition or "")[:7] == month
            verdicts.append(Verdict(where, "(the run)", str(said), right, f"{partition}; launched {launched}"))
        for name, version in _named(event.get("outputs", [])).items():
            truth = ran_by.get((name, str(version)))
            if truth is None:
                continue
            writer, written_for = truth
            earlier = launched.get(writer, (len(launched),))[0] < launched.get(said, (-1,))[0]
            right = (writer == said or earlier) and written_for == partition
            verdicts.append(Verdict(where, name, str(version), right, f"said {(said, partition)}, Iceberg {truth}"))
    for key, answer in record["answers"]["versions"].items():
        dataset, _, version = key.partition("@")
        truth = ran_by.get((dataset, version))
        if truth is None or answer is None or answer["tree"]["written_by"] is None:
            continue
        writer = answer["tree"]["written_by"]
        said_by = (writer["tool_run_id"], writer["partition"])
        detail = f"said {said_by}, truth {truth}"
        verdicts.append(Verdict("show --version writer", dataset, version, said_by == truth, detail))
    return verdicts


def answer_verdicts(record: dict, expected: dict) -> list[Verdict]:
    verdicts = []
    for key, answer in record["answers"]["versions"].items():
        dataset, _, version = key.partition("@")
        want = expected.get((dataset, version))
        if want is None or answer is None:
            if want is not None and _published(record, dataset, version):
                verdicts.append(Verdict("show --version", dataset, version, False, "the command does not know it"))
            continue
        read = {node["dataset"]: node["version"] for node in answer["tree"]["read"]}
        verdicts.append(Verdict("show --version", dataset, version, read == want, f"read {read}, truth {want}"))
    for version, answer in record["answers"]["columns"].items():
        want = expected.get((RAW_YELLOW, version))
        if want is None or answer is None:
            continue
        read = {origin["dataset"]: origin["version"] for origin in answer["origins"]}
        verdicts.append(Verdict("show COLUMN --version", RAW_YELLOW, version, read == want, f"{read} vs {want}"))
    for pair, answer in record["answers"]["diffs"].items():
        before, after = (part.partition("@")[2] for part in pair.split())
        wanted = [expected.get((RAW_YELLOW, before)), expected.get((RAW_YELLOW, after))]
        if None in wanted or answer is None:
            continue
        said = " ".join(answer["changes"])
        right = all(version in said for want in wanted for version in want.values())
        if wanted[0] != wanted[1]:
            right = right and "both read" not in said
        verdicts.append(Verdict("diff", RAW_YELLOW, f"{before}..{after}", right, said))
    model_label = record["labels"]["forecast_model"]["lineage"]
    for version in record["answers"]["model"]:
        want = expected.get((model_label, version["version"]), {})
        read = {i["name"]: i["version"] for i in version["inputs"]}
        verdicts.append(Verdict("model --json", model_label, version["version"], read == want, f"{read} vs {want}"))
        target = f"{ACTUALS}.total_rides" in version["input_columns"]
        verdicts.append(Verdict("model --json columns", model_label, version["version"], target, "total_rides"))
    return verdicts


def datahub_verdicts(record: dict, expected: dict) -> list[Verdict]:
    """Each DataHub run: a Dagster step's reads equal the truth of what it wrote; a Metaflow run's versions agree."""
    to_lineage = {value["datahub"]: value["lineage"] for value in record["labels"].values()}
    flows = list(_flow_reads(record).values())
    flow_name = record["labels"]["forecast_model"]["lineage"].split("/")[-2]
    verdicts = []
    for run in record["datahub_runs"]:
        versions, job = run["versions"], (run["name"] or "").split(" ")[0]
        reads = {to_lineage.get(k[6:], k[6:]): v for k, v in versions.items() if k.startswith("input:")}
        writes = {to_lineage.get(k[7:], k[7:]): v for k, v in versions.items() if k.startswith("output:")}
        for loop in reads.keys() & writes.keys():
            verdicts.append(Verdict("DataHub run", loop, writes[loop], False, f"{run['name']} reads and writes it"))
        if job.startswith(flow_name):
            named = {**reads, **writes}
            right = any(all(flow.get(k) == v for k, v in named.items()) for flow in flows)
            for name, version in named.items():
                verdicts.append(Verdict("DataHub run", name, version, right, f"{run['name']}: {named}"))
            continue
        if "." not in job:
            continue  # a Dagster run: its steps say what each read
        for name, version in writes.items():
            want = expected.get((name, version))
            if want is None:
                continue
            found = {k: v for k, v in reads.items() if k in want or k not in writes}
            verdicts.append(Verdict("DataHub run", name, version, found == want, f"{run['name']}: {found} vs {want}"))
    return verdicts


def _published(record: dict, dataset: str, version: str) -> bool:
    table = record["snapshots"].get(dataset)
    return table is not None and int(version) in table["main"]


def verdicts(record: dict) -> list[Verdict]:
    expected = expected_inputs(record)
    return [
        *event_verdicts(record, expected),
        *answer_verdicts(record, expected),
        *datahub_verdicts(record, expected),
        *tool_run_verdicts(record),
    ]


def table(found: list[Verdict]) -> str:
    """Versions checked, right and wrong, per view and dataset."""
    counts: Counter = Counter()
    for verdict in found:
        counts[(verdict.where, verdict.dataset, verdict.right)] += 1
    rows = sorted({(where, dataset) for where, dataset, _ in counts})
    lines = [f"{'view':24s} {'dataset':60s} {'checked':>7s} {'right':>6s} {'wrong':>6s}"]
    for where, dataset in rows:
        right, wrong = counts[(where, dataset, True)], counts[(where, dataset, False)]
        lines.append(f"{where[:24]:24s} {dataset[-60:]:60s} {right + wrong:7d} {right:6d} {wrong:6d}")
    return "\n".join(lines)
