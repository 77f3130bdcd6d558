"""The lineage against what really happened: every version of every table, the model and the forecast.

The scenario (``tests/truth/scenario.py``) runs the real pipeline in a state folder of its own, in a
process of its own, and records the truth (staged files' sha256, Iceberg snapshots, Metaflow
artifacts) apart from the lineage's claims; the oracle (``tests/truth/oracle.py``) compares them.
"""

from __future__ import annotations

import json

import pytest

from tests.openlineage_schema import validation_errors
from tests.truth.oracle import (
    ACTUALS,
    FORECAST,
    RAW_WEATHER,
    RAW_YELLOW,
    ZONES,
    expected_inputs,
    model_contents,
    table,
    verdicts,
)
from tests.truth.scenario import MONTHS

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def truth_record(end_to_end) -> dict:
    """The scenario's record (run in the background lane: :mod:`tests.end_to_end`)."""
    outcome: dict = end_to_end.outcome("truth-record")
    return outcome


@pytest.fixture(scope="module")
def record(truth_record) -> dict:
    return truth_record


def test_the_scenario_made_the_history_it_claims(record):
    outcomes = {run["what"]: run["success"] for run in record["runs"]}
    assert outcomes["republished file that fails its audit"] is False
    assert outcomes["killed while raw_yellow ran, then canceled"] is False and len(record["killed"]) == 1
    failed = ("fails its audit", "killed")
    assert all(success for what, success in outcomes.items() if not any(word in what for word in failed))
    assert [run["use_weather"] for run in record["flow_runs"]] == [False, False, False, True, False]
    expected = expected_inputs(record)
    # Every table version, every model version and every forecast have a truth to be checked against.
    for dataset in (RAW_YELLOW, RAW_WEATHER, ACTUALS, FORECAST):
        assert sum(1 for name, _ in expected if name == dataset) >= 2, dataset
    # The zone lookup was published once, and every forecast read that version.
    [zones] = [version for name, version in expected if name == ZONES]
    assert [inputs[ZONES] for (name, _), inputs in expected.items() if name == FORECAST] == [zones] * 5


def test_every_claim_of_every_view_equals_the_truth(record):
    found = verdicts(record)
    print("\n" + table(found))
    wrong = [v for v in found if not v.right]
    assert wrong == []
    views = {v.where.split()[0] for v in found}
    assert {"event", "show", "model", "diff", "DataHub"} <= views
    # Every table's versions name the run that wrote them as Dagster or Metaflow names it, in events and in show.
    for view in ("orchestratorRun", "show --version writer"):
        assert {v.dataset for v in found if v.where.endswith(view)} >= {RAW_YELLOW, RAW_WEATHER, ACTUALS, FORECAST}
    checked = {(v.dataset, v.version) for v in found}
    # Each month's raw_yellow on main (not the empty snapshot that created the table) is checked:
    # the months ingested latest first, rewritten, republished.
    raw = record["snapshots"][RAW_YELLOW]
    months = {str(s) for s in raw["main"] if raw["snapshots"][str(s)]["summary"].get("dagster.partition")}
    assert len(months) >= 4 and months <= {version for _, version in checked}


def test_a_range_of_months_in_one_run_has_each_month_s_lineage_as_a_run_of_that_month_would(record):
    """The single-run backfill (every month rewritten in one Dagster run): per Iceberg, the run wrote one raw_yellow
    and one actuals snapshot per month; per the lineage, each of its table steps ran once per month, each naming its
    month and exactly that month's snapshot (the oracle checks what each read)."""
    [run] = [run for run in record["runs"] if run["what"].endswith("as one run")]
    assert run["success"] and run["month"].split() == sorted(MONTHS)
    for name in (RAW_YELLOW, ACTUALS):
        snapshots = record["snapshots"][name]["snapshots"]
        written = {
            summary["dagster.partition"][:7]: snapshot_id
            for snapshot_id, snapshot in snapshots.items()
            if (summary := snapshot["summary"]).get("dagster.run-id") == run["run_id"]
        }
        assert sorted(written) == sorted(MONTHS), name
        said: dict[str, list[str]] = {}
        for event in record["events"]:
            facet = event["run"].get("facets", {}).get("orchestratorRun", {})
            of_run = event["eventType"] == "COMPLETE" and facet.get("runId") == run["run_id"]
            if not of_run or "." not in event["job"]["name"]:
                continue
            for output in event.get("outputs", []):
                if output["name"].endswith(name.split(".")[-1]):
                    version = output["facets"]["version"]["datasetVersion"]
                    said.setdefault(facet["partition"][:7], []).append(version)
        assert said == {month: [snapshot_id] for month, snapshot_id in written.items()}, name


def test_models_are_built_from_every_month_they_read_and_the_republish_shows_between_two(record):
    """Per Iceberg's rows and snapshots alone: the first model read two months, the next three (November came after
    it), and December's source differs exactly between the models trained before and after its republish."""
    contents = model_contents(record)
    versions = [run["model_version"] for run in record["flow_runs"]]
    months = [sorted(contents[version][ACTUALS]) for version in versions]
    assert months == [["2024-12", "2025-01"]] + [["2024-11", "2024-12", "2025-01"]] * 4
    before, after = (contents[version][ACTUALS] for version in versions[1:3])
    assert [month for month in before if before[month] != after[month]] == ["2024-12"]
    assert before["2024-12"][1] != after["2024-12"][1]  # a new sha256
    assert sorted(contents[versions[3]]) == [RAW_WEATHER, ACTUALS]
    views = {v.where for v in verdicts(record)}
    assert {"model --json months", "show --version months", "event months", "DataHub run months"} <= views
    assert {"diff model months", "diff table months", "event killed run", "log dropped branch"} <= views


def test_a_training_without_weather_while_a_weather_version_serves_reads_no_weather_and_leaves_it_serving(record):
    """The serving version's candidate is backtested beside each run; one that needs the weather cannot be beside a
    run that reads none. That run trains, names only what it read, and the weather version keeps serving, saying why."""
    from flows.forecasting.candidates import needs_weather

    weather, after = record["flow_runs"][3:]
    assert weather["promoted"] and needs_weather([weather["champion"]]), "the scenario's weather version must serve"
    assert after["serving_read"] == weather["model_version"] and not after["promoted"]
    assert after["promotion_reason"].startswith(f"{weather['model_version']} keeps serving: its candidate ")
    assert "--use_weather true" in after["promotion_reason"]
    assert after["weather_snapshot_id"] is None and sorted(model_contents(record)[after["model_version"]]) == [ACTUALS]


def test_every_event_is_valid_and_names_no_folder_of_this_machine(record):
    invalid = {e["job"]["name"]: validation_errors(e) for e in record["events"] if validation_errors(e)}
    assert invalid == {}
    named = [path for path in record["machine_paths"] if any(path in json.dumps(e) for e in record["events"])]
    assert named == []
    facets = {name for e in record["events"] for name in (*e["run"]["facets"], *e["job"]["facets"])}
    assert {"processing_engine", "documentation", "sourceCodeLocation", "nominalTime"} <= facets


def test_december_and_january_raw_yellow_name_two_different_files(record):
    expected = expected_inputs(record)
    months = {}
    for (dataset, version), inputs in expected.items():
        if dataset == RAW_YELLOW:
            snapshot = record["snapshots"][RAW_YELLOW]["snapshots"][version]["summary"]
            months.setdefault(snapshot.get("dagster.partition", "")[:7], set()).update(inputs.values())
    assert months["2024-12"].isdisjoint(months["2025-01"])
