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
MODEL_PROMOTIONS = "nyc_taxi.model_promotions"
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
    sources = [(source["table"], source["files"], source["name"]) for source in record["sources"]]
    for table, source, kind in sources:
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
        # The registry is read in load (the decisions before the run) and written in write (with its own).
        if run["registry_read_snapshot_id"] is not None:
            named[f"{MODEL_PROMOTIONS}:read"] = run["registry_read_snapshot_id"]
        named[f"{MODEL_PROMOTIONS}:written"] = run["registry_written_snapshot_id"]
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
            for direction, named in (("read", inputs), ("written", outputs)):
                for name, version in named.items():
                    said = truth.get(f"{name}:{direction}", truth.get(name))
                    verdicts.append(
                        Verdict(f"event {job}", name, str(version), said == version, f"the run's artifacts say {said}")
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
            # A run of a range of months names each: one run of each step per month.
            right = order is not None and ((partition or "")[:7] in month.split() if month else not partition)
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
        # A partition read ("input:TABLE [PARTITION]") is checked month by month (content_verdicts).
        reads = {
            to_lineage.get(k[6:], k[6:]): v for k, v in versions.items() if k.startswith("input:") and " [" not in k
        }
        writes = {to_lineage.get(k[7:], k[7:]): v for k, v in versions.items() if k.startswith("output:")}
        for loop in reads.keys() & writes.keys():
            verdicts.append(Verdict("DataHub run", loop, writes[loop], False, f"{run['name']} reads and writes it"))
        if job.startswith(flow_name):
            named = {**reads, **writes}
            sides = [(reads, "read"), (writes, "written")]
            right = any(
                all(flow.get(f"{k}:{side}", flow.get(k)) == v for said, side in sides for k, v in said.items())
                for flow in flows
            )
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
        *content_verdicts(record),
        *diff_verdicts(record),
        *table_diff_verdicts(record, expected),
        *killed_run_verdicts(record),
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


# A model is built from every month it read, each at the snapshot that wrote it (DESIGN: a version is what it
# contains). The truth: the months whose rows the run read (from the rows, at the snapshot it read), each month's
# writer on that snapshot's ancestry (from the snapshot summaries), that writer's source file (from expected_inputs).
READ_WHOLE = {
    ACTUALS: ("actuals_snapshot_id", "taxi_trip_files"),
    RAW_WEATHER: ("weather_snapshot_id", "weather_files"),
}
Contents = dict[str, dict[str, tuple[str, str]]]  # table -> month -> (the snapshot that wrote it, its source's sha256)


def _month_writer(table: dict, read_at: str, month: str) -> str | None:
    """The snapshot on ``read_at``'s ancestry that last wrote ``month`` (its summary names the partition)."""
    current: str | None = read_at
    while current is not None:
        if (_properties(table, current).get("dagster.partition") or "")[:7] == month:
            return current
        parent = table["snapshots"][current]["parent"]
        current = None if parent is None else str(parent)
    return None


def model_contents(record: dict) -> dict[str, Contents]:
    """Model version -> what it was built from, month by month, from the truth alone."""
    expected, labels = expected_inputs(record), record["labels"]
    found: dict[str, Contents] = {}
    for run in record["flow_runs"]:
        contents: Contents = {}
        for table, months in run["months_read"].items():
            snapshot_key, files = READ_WHOLE[table]
            for month in months:
                writer = _month_writer(record["snapshots"][table], run[snapshot_key], month) or "?"
                built = expected.get((table, writer), {})
                if table == ACTUALS:  # the actuals' month was built from raw_yellow's, built from the file
                    built = expected.get((RAW_YELLOW, built.get(RAW_YELLOW, "?")), {})
                contents.setdefault(table, {})[month] = (writer, built.get(labels[files]["lineage"], "?"))
        found[run["model_version"]] = contents
    return found


def _month(partition: str) -> str:
    """``pickup_hour_month=2024-12`` -> ``2024-12``."""
    return partition.rpartition("=")[2]


def _fingerprint(sources: list[dict], record: dict, table: str) -> str | None:
    label = record["labels"][READ_WHOLE[table][1]]["lineage"]
    return next((source["version"] for source in sources if source["name"] == label), None)


def _leaves(node: dict) -> list[dict]:
    below = [*node.get("read", []), *node.get("partitions", [])]
    if node.get("repeated"):
        return []
    return (
        [{"name": node["dataset"], "version": node["version"]}]
        if not below
        else [leaf for child in below for leaf in _leaves(child)]
    )


def _month_verdicts(where: str, version: str, truth: Contents, said: Contents) -> list[Verdict]:
    """One verdict per (table, month) the truth or the claim names: the month's writer and its source."""
    verdicts = []
    for table in sorted(truth.keys() | said.keys()):
        for month in sorted(truth.get(table, {}).keys() | said.get(table, {}).keys()):
            want, got = truth.get(table, {}).get(month), said.get(table, {}).get(month)
            right = got is not None and want is not None and (got[0], got[1] or want[1]) == want
            verdicts.append(Verdict(where, f"{table} {month}", version, right, f"said {got}, truth {want}"))
    return verdicts


def content_verdicts(record: dict) -> list[Verdict]:
    """Every month every model version read, with its writer and source sha256, in each view that names it."""
    truth, verdicts = model_contents(record), []
    for version in record["answers"]["model"] or []:
        said: Contents = {}
        for read in version["inputs"]:
            for part in read.get("partitions", []):
                month = said.setdefault(read["name"], {})
                month[_month(part["partition"])] = (
                    part["version"],
                    _fingerprint(part["sources"], record, read["name"]),
                )
        verdicts += _month_verdicts("model --json months", version["version"], truth.get(version["version"], {}), said)
    for run in record["flow_runs"]:
        answer = record["answers"]["versions"].get(f"{FORECAST}@{run['forecast_snapshot_id']}")
        said = {}
        for read in (answer or {"tree": {"read": []}})["tree"]["read"]:
            for part in read.get("partitions", []):
                fingerprint = (
                    _fingerprint(_leaves(part), record, read["dataset"]) if read["dataset"] in READ_WHOLE else ""
                )
                said.setdefault(read["dataset"], {})[_month(part["partition"])] = (part["version"], fingerprint)
        verdicts += _month_verdicts("show --version months", run["model_version"], truth[run["model_version"]], said)
    for event in record["events"]:
        facet = event["run"].get("facets", {}).get("modelTraining")
        if event["eventType"] != "COMPLETE" or not facet:
            continue
        said = {}
        for dataset in event.get("inputs", []):
            label = _named([dataset]).popitem()[0]
            for part in dataset.get("inputFacets", {}).get("partitionVersions", {}).get("partitions", []):
                said.setdefault(label, {})[_month(part["identifier"])] = (part["version"], None)
        verdicts += _month_verdicts("event months", facet["version"], truth.get(facet["version"], {}), said)
    to_lineage = {value["datahub"]: value["lineage"] for value in record["labels"].values()}
    for run in record["datahub_runs"]:
        parts = {k: v for k, v in run["versions"].items() if k.startswith("input:") and " [" in k}
        versions = {v for k, v in run["versions"].items() if k.startswith("output:")}
        model = next((version for version in truth if version in versions), None)
        if model is None or "." in (run["name"] or "").split(" ")[0]:
            continue  # the flow run's own DataProcessInstance names the model it wrote
        said = {}
        for key, version in parts.items():
            name, _, partition = key[6:].partition(" [")
            said.setdefault(to_lineage.get(name, name), {})[_month(partition.rstrip("]"))] = (version, None)
        verdicts += _month_verdicts("DataHub run months", model, truth[model], said)
    return verdicts


def diff_verdicts(record: dict) -> list[Verdict]:
    """``diff`` between consecutive model versions names exactly the months whose writer changed, added, removed."""
    truth, verdicts = model_contents(record), []
    for pair, answer in record["answers"]["model_diffs"].items():
        before, after = pair.split()
        want = set()
        for table in truth[before].keys() & truth[after].keys():
            old, new = truth[before][table], truth[after][table]
            want |= {(table, m, "replaced") for m in old.keys() & new.keys() if old[m][0] != new[m][0]}
            want |= {(table, m, "added") for m in new.keys() - old.keys()}
            want |= {(table, m, "removed") for m in old.keys() - new.keys()}
        said = set()
        for line in (answer or {}).get("changes", []):
            text = line.strip()
            for how in ("replaced", "added", "removed"):
                if f"]: {how}" in text:
                    name, _, rest = text.partition(" [")
                    said.add((name, _month(rest.partition("]")[0]), how))
        verdicts.append(Verdict("diff model months", "(months changed)", pair, said == want, f"said {said}, {want}"))
    return verdicts


def raw_yellow_contents(record: dict, snapshot_id: str) -> dict[str, str]:
    """Per Iceberg alone: each month raw_yellow holds at ``snapshot_id`` (on main) -> the snapshot that wrote it."""
    raw, held = record["snapshots"][RAW_YELLOW], {}
    for snapshot in map(str, raw["main"]):
        partition = _properties(raw, snapshot).get("dagster.partition")
        if partition:
            held[partition[:7]] = snapshot
        if snapshot == snapshot_id:
            break
    return held


def table_diff_verdicts(record: dict, expected: dict) -> list[Verdict]:
    """``diff`` of two raw_yellow versions, by content: the months each holds at the snapshot that wrote it (as
    Iceberg's snapshots say), each from the file fingerprint it was staged from, and exactly the months that differ."""
    verdicts = []
    for pair, answer in record["answers"]["diffs"].items():
        if answer is None:
            continue
        before, after = (part.partition("@")[2] for part in pair.split())
        said = {
            side: {_month(write["partition"] or "")[:7]: write for write in answer["partitions"][side]}
            for side in ("from", "to")
        }
        truth = {"from": raw_yellow_contents(record, before), "to": raw_yellow_contents(record, after)}
        held = {side: {month: write["version"] for month, write in said[side].items()} for side in said}
        sources = all(
            write["read"] == expected[(RAW_YELLOW, write["version"])]
            for side in said.values()
            for write in side.values()
            if (RAW_YELLOW, write["version"]) in expected
        )
        differ = {m for m in truth["from"].keys() | truth["to"].keys() if truth["from"].get(m) != truth["to"].get(m)}
        named = {
            _month(line.split()[1])[:7]
            for line in answer["changes"]
            if line.startswith("partition ") and any(word in line for word in (" rewritten", " added", " gone"))
        }
        right = held == truth and sources and named == differ
        verdicts.append(Verdict("diff table months", RAW_YELLOW, f"{before}..{after}", right, f"{held} vs {truth}"))
    return verdicts


def killed_run_verdicts(record: dict) -> list[Verdict]:
    """A killed run, once Dagster knows it ended, ends in OpenLineage: the run and every step it started; a later run
    that drops the branch it left says it was never audited, and a branch a failed audit left says that."""
    verdicts = []
    for run_id in record["killed"]:
        started, ended = set(), set()
        for event in record["events"]:
            if event["run"].get("facets", {}).get("orchestratorRun", {}).get("runId") != run_id:
                continue
            (started if event["eventType"] == "START" else ended).add(event["run"]["runId"])
            if event["eventType"] in ("ABORT", "FAIL"):
                verdicts.append(Verdict("event killed run", event["job"]["name"], run_id, True, event["eventType"]))
        for unended in started - ended:
            verdicts.append(Verdict("event killed run", "(a run never ended)", run_id, False, unended))
    failed_audit = {run["run_id"][:8] for run in record["runs"] if "fails its audit" in run["what"]}
    killed = {run_id[:8] for run_id in record["killed"]}
    for run in record["runs"]:
        for line in run["dropped"]:
            left_by = line.partition(" of run ")[2][:8]
            if left_by in killed:
                right = "ended before its audit" in line
            elif left_by in failed_audit:
                right = "held back" in line
            else:
                right = False
            verdicts.append(Verdict("log dropped branch", RAW_YELLOW, run["run_id"], right, line))
    return verdicts
