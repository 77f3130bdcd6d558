"""A model version's champion/challenger decision in OpenLineage (a run facet) and in DataHub (the serving alias)."""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from openlineage.client.serde import Serde

from bridge.sinks.lite import open_lite
from bridge.sources.metaflow_recorder import Promotion, record_model, recording
from bridge.translate.datahub import metadata_for
from bridge.translate.metaflow import FlowRunRecord, TaskRecord, translate_flow_run
from forecast_assets.lineage import naming as project_naming
from taxi_core.settings import Settings
from tests.openlineage_schema import validation_errors

NAMING = project_naming(Settings.model_construct().model_copy(update={"state_dir": Path("/state")}))
MODEL = "forecast_model"


def _trained(run: int, promotion: Promotion | None) -> list[dict]:
    """The OpenLineage events of a training run whose one step recorded the model version and its decision."""
    pathspec = f"TrainForecastModelFlow/{run}"
    with recording() as step:
        record_model(MODEL, pathspec, metrics={"backtest_mae": 3.1}, params={"name": "blend"}, promotion=promotion)
    began = datetime(2026, 11, 27, 9, tzinfo=UTC) + timedelta(hours=run % 100)
    task = TaskRecord(f"{pathspec}/predict/1", "predict", began, began + timedelta(minutes=1), "COMPLETE",
                      io=json.loads(json.dumps(step.to_artifact())))  # fmt: skip
    record = FlowRunRecord("TrainForecastModelFlow", pathspec, began, began + timedelta(minutes=2), "COMPLETE",
                           {"predict": []}, [task])  # fmt: skip
    return [json.loads(Serde.to_json(event)) for _, event in translate_flow_run(record, NAMING)]


def _complete(events: list[dict]) -> dict:
    (flow,) = [e for e in events if e["eventType"] == "COMPLETE" and "modelTraining" in e["run"]["facets"]]
    return flow


def test_the_decision_is_a_run_facet_of_the_training_run_valid_against_its_schema():
    decided = Promotion("TrainForecastModelFlow/2", "TrainForecastModelFlow/1", True, "better: 0.84x on 28 days",
                        {"ratio": 0.84, "ratio_high": 0.93})  # fmt: skip
    flow = _complete(_trained(2, decided))
    facet = flow["run"]["facets"]["modelPromotion"]
    assert facet["promoted"] is True and facet["nowServing"] == "TrainForecastModelFlow/2"
    assert facet["serving"] == "TrainForecastModelFlow/1" and facet["figures"]["ratio_high"] == 0.93
    assert validation_errors(flow) == []
    assert "modelPromotion" not in _complete(_trained(3, None))["run"]["facets"]


def _serving_in(lite) -> dict[str, list[str]]:
    """Each model version's aliases and tags, as the graph holds them."""
    found = {}
    for urn in lite.list_ids():
        if urn.startswith("urn:li:mlModel:"):
            aspects = lite.get(urn, aspects=["versionProperties", "globalTags"]) or {}
            aliases = [a["versionTag"] for a in (aspects.get("versionProperties") or {}).get("aliases", [])]
            tags = [t["tag"] for t in (aspects.get("globalTags") or {}).get("tags", [])]
            found[urn.split(",")[1]] = sorted(aliases + tags)
    return found


def test_one_version_serves_in_datahub_and_a_promotion_moves_the_alias(tmp_path):
    first = Promotion("TrainForecastModelFlow/1", None, True, "the first version")
    worse = Promotion("TrainForecastModelFlow/2", "TrainForecastModelFlow/1", False, "1 keeps serving: 1.2x")
    better = Promotion("TrainForecastModelFlow/3", "TrainForecastModelFlow/1", True, "3 promoted: 0.8x")
    lite = open_lite(tmp_path / "lite.sqlite")
    history = []
    for run, decided in ((1, first), (2, worse), (3, better)):
        for mcp in metadata_for(_complete(_trained(run, decided)), NAMING):
            lite.write(mcp)
        history.append(_serving_in(lite))
    serving = ["serving", "urn:li:tag:serving"]
    version = "forecast_model_TrainForecastModelFlow_{}"
    assert history[0] == {version.format(1): serving}
    assert history[1] == {version.format(1): serving, version.format(2): []}
    assert history[2] == {version.format(1): [], version.format(2): [], version.format(3): serving}
    third = lite.get(f"urn:li:mlModel:(urn:li:dataPlatform:metaflow,{version.format(3)},PROD)",
                     aspects=["mlModelProperties", "versionProperties"])  # fmt: skip
    assert third["mlModelProperties"]["customProperties"]["promotion"] == "3 promoted: 0.8x"
    sets = {
        (lite.get(urn, aspects=["versionProperties"]) or {})["versionProperties"]["versionSet"]
        for urn in lite.list_ids()
        if urn.startswith("urn:li:mlModel:")
    }
    assert len(sets) == 1  # every version in the model's one version set
    lite.close()
