"""A project's own translator: a subclass renames a job and a dataset and adds facets, and the bridge uses it.

The golden tests' recorded runs go through it: the overrides show in every OpenLineage event and in the DataHub
aspects made of them, nothing else changes, and the events still validate against the OpenLineage JSON Schemas.
"""

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import attr
import pytest
from openlineage.client.facet_v2 import DatasetFacet, RunFacet, ownership_dataset
from openlineage.client.serde import Serde

from bridge.config import LineageBridge, SinkSpec
from bridge.outbox.outbox import Outbox
from bridge.run.lineage_pass import sources_for
from bridge.sinks.contract import SinkContext
from bridge.sinks.registry import build_sink
from bridge.translate.dagster import run_ref, step_job, translate_run
from bridge.translate.dagster_records import DagsterRunRecords
from bridge.translate.datahub import metadata_for
from bridge.translate.events import PRODUCER, DatasetRef, EventSpec
from bridge.translate.metaflow import FlowRunRecord, translate_flow_run
from bridge.translate.naming import DatasetName
from bridge.translate.translator import JobNameRefused, LineageTranslator
from forecast_assets.lineage import taxi_bridge
from taxi_core.settings import Settings
from tests.openlineage_schema import validation_errors
from tests.test_golden import GOLDEN, NAMING

INGESTION = GOLDEN / "records" / "dagster_1_monthly_ingestion_2024-12_success.json"
TRAINING = GOLDEN / "records" / "metaflow_1_dagster_complete.json"
STAGED_TRIPS = ("file://taxi-state", "/staging/taxi")
LANDING = ("s3://landing", "/tlc/yellow")
# A custom facet ships its JSON Schema, as the OpenLineage spec asks of custom facets.
TEAM_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://shop.example/spec/TeamRunFacet.json",
    "$defs": {
        "TeamRunFacet": {
            "allOf": [
                {"$ref": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunFacet"},
                {"type": "object", "properties": {"team": {"type": "string"}}, "required": ["team"]},
            ],
            "type": "object",
        }
    },
    "type": "object",
    "properties": {"team": {"$ref": "#/$defs/TeamRunFacet"}},
}


@attr.define
class TeamRunFacet(RunFacet):
    """The team that owns the run."""

    team: str

    @staticmethod
    def _get_schema() -> str:
        return TEAM_SCHEMA["$id"] + "#/$defs/TeamRunFacet"


class ShopTranslator(LineageTranslator):
    """Dagster's ingestion job and Metaflow's training flow under the names the team uses, trip files where they
    land, and who owns every run and every dataset written."""

    def dagster_job(self, job: str, code_location: str) -> str:
        return "trips_monthly" if job == "monthly_ingestion" else super().dagster_job(job, code_location)

    def metaflow_flow_job(self, flow: str) -> str:
        return "forecast_training" if flow == "TrainForecastModelFlow" else super().metaflow_flow_job(flow)

    def asset_dataset(self, asset_path: Sequence[str]) -> DatasetName:
        if list(asset_path) == ["taxi_trip_files"]:
            return self.location_dataset("s3://landing/tlc/yellow")
        return super().asset_dataset(asset_path)

    def run_facets(self, event: EventSpec) -> Mapping[str, RunFacet]:
        return {"team": TeamRunFacet(producer=PRODUCER, team="forecasting")}

    def dataset_facets(self, event: EventSpec, dataset: DatasetRef, output: bool) -> Mapping[str, DatasetFacet]:
        if not output:
            return {}
        owner = ownership_dataset.Owner(name="team:forecasting", type="MAINTAINER")
        return {"ownership": ownership_dataset.OwnershipDatasetFacet(producer=PRODUCER, owners=[owner])}


def _events(record: Path, translator: LineageTranslator) -> list[dict]:
    text = record.read_text()
    if record.name.startswith("dagster_"):
        untranslated: list[int] = []
        events = translate_run(DagsterRunRecords.from_json(text), translator, untranslated=untranslated)
        assert untranslated == []
    else:
        events = translate_flow_run(FlowRunRecord.from_json(text), translator)
    return [json.loads(Serde.to_json(event)) for _, event in events]


def _renamed(value, jobs: dict[str, str]):
    """A default event as the shop's translator would name it: its jobs renamed, the staged trips at their landing."""
    if isinstance(value, dict):
        value = {key: _renamed(item, jobs) for key, item in value.items()}
        if (value.get("namespace"), value.get("name")) == STAGED_TRIPS:
            value |= dict(zip(("namespace", "name"), LANDING, strict=True))
        return value
    if isinstance(value, list):
        return [_renamed(item, jobs) for item in value]
    if isinstance(value, str):
        parent, dot, leaf = value.partition(".")
        return f"{jobs[parent]}{dot}{leaf}" if parent in jobs else value
    return value


def _without_added(event: dict) -> dict:
    """``event`` less the facets the shop's translator adds, after checking them."""
    event = json.loads(json.dumps(event))
    assert event["run"]["facets"].pop("team")["team"] == "forecasting"
    for output in event.get("outputs", []):
        assert output["facets"].pop("ownership")["owners"] == [{"name": "team:forecasting", "type": "MAINTAINER"}]
    return event


@pytest.mark.parametrize(
    ("record", "jobs"),
    [(INGESTION, {"monthly_ingestion": "trips_monthly"}), (TRAINING, {"TrainForecastModelFlow": "forecast_training"})],
    ids=["dagster", "metaflow"],
)
def test_the_overrides_show_in_every_event_and_nothing_else_changes(record, jobs):
    default, shop = _events(record, LineageTranslator(NAMING)), _events(record, ShopTranslator(NAMING))
    assert len(shop) == len(default)
    assert {event["job"]["name"].partition(".")[0] for event in shop} == set(jobs.values())
    for ours, theirs in zip(shop, default, strict=True):
        assert _without_added(ours) == _renamed(theirs, jobs)
        assert validation_errors(ours, custom=[TEAM_SCHEMA]) == []


def test_the_renamed_dataset_is_where_dagster_wrote_and_read_it_with_its_columns():
    shop = _events(INGESTION, ShopTranslator(NAMING))
    staged = [e for e in shop if e["job"]["name"] == "trips_monthly.taxi_trip_files" and e["eventType"] == "COMPLETE"]
    assert [(d["namespace"], d["name"]) for d in staged[0]["outputs"]] == [LANDING]
    (raw,) = [
        e for e in shop if e["job"]["name"] == "trips_monthly.nyc_taxi__raw_yellow" and e["eventType"] == "COMPLETE"
    ]
    assert LANDING in [(d["namespace"], d["name"]) for d in raw["inputs"]]
    read = {
        (source["namespace"], source["name"])
        for column in raw["outputs"][0]["facets"]["columnLineage"]["fields"].values()
        for source in column["inputFields"]
    }
    assert LANDING in read and STAGED_TRIPS not in read


def _datahub(record: Path) -> list[dict]:
    translator = ShopTranslator(NAMING)
    return [mcp.to_obj() for event in _events(record, translator) for mcp in metadata_for(event, translator)]


def test_datahub_names_the_renamed_job_and_dataset():
    aspects = _datahub(INGESTION)
    text = json.dumps(aspects)
    flow = "urn:li:dataFlow:(dagster,trips_monthly,PROD)"
    landing = "urn:li:dataset:(urn:li:dataPlatform:s3,landing/tlc/yellow,PROD)"
    entities = {aspect["entityUrn"] for aspect in aspects}
    assert {flow, f"urn:li:dataJob:({flow},nyc_taxi__raw_yellow)", landing} <= entities
    assert "monthly_ingestion" not in text and "taxi-state/staging/taxi" not in text
    raw_yellow = f"urn:li:dataJob:({flow},nyc_taxi__raw_yellow)"
    edges = [
        json.loads(a["aspect"]["value"])
        for a in aspects
        if a["entityUrn"] == raw_yellow and a["aspectName"] == "dataJobInputOutput"
    ]
    assert landing in edges[-1]["inputDatasets"]
    columns = [u for lineage in edges[-1]["fineGrainedLineages"] for u in lineage["upstreams"]]
    assert any(upstream.startswith(f"urn:li:schemaField:({landing},") for upstream in columns)


def test_datahub_names_the_renamed_flow_and_its_steps():
    entities = {aspect["entityUrn"] for aspect in _datahub(TRAINING)}
    flow = "urn:li:dataFlow:(metaflow,forecast_training,PROD)"
    assert {flow, f"urn:li:dataJob:({flow},train)", f"urn:li:dataJob:({flow},write)"} <= entities
    assert not [
        urn
        for urn in entities
        if "TrainForecastModelFlow" in urn and urn.startswith(("urn:li:dataFlow", "urn:li:dataJob"))
    ]


class Dotted(LineageTranslator):
    def dagster_job(self, job: str, code_location: str) -> str:
        return f"shop.{job}"


class Stray(LineageTranslator):
    def dagster_step_job(self, job: str, code_location: str, step: str, assets: Sequence[Sequence[str]]) -> str:
        return f"elsewhere.{step}"


def test_a_job_name_datahub_would_misread_is_refused_with_what_to_do():
    records = DagsterRunRecords.from_json(INGESTION.read_text())
    with pytest.raises(JobNameRefused, match="'shop.monthly_ingestion', with a dot"):
        run_ref(records, Dotted(NAMING))
    with pytest.raises(JobNameRefused, match="not 'monthly_ingestion.<step>'.*dagster_job"):
        step_job(records, Stray(NAMING), "taxi_trip_files")


def test_the_bridge_translates_with_the_translator_it_was_given(tmp_path):
    bridge = LineageBridge(naming=NAMING, lineage_dir=tmp_path, code_location="taxi_demand", translator=ShopTranslator)
    translator = bridge.translation
    assert type(translator) is ShopTranslator and translator.naming is NAMING and bridge.translation is translator
    assert all(source.translator is translator for source in sources_for(bridge, None, lambda: None))
    context = SinkContext(bridge, Outbox(tmp_path / "outbox.sqlite"), "datahub")
    sink = build_sink(SinkSpec("datahub-file", {"path": tmp_path / "metadata.json"}, "datahub"), context)
    assert sink.translator is translator


def test_this_project_builds_its_bridge_with_the_translator():
    bridge = taxi_bridge(Settings.model_construct().model_copy(update={"state_dir": Path("/state")}))
    assert type(bridge.translation) is LineageTranslator and bridge.translation.naming is bridge.naming
