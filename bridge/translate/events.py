"""Pure builders of OpenLineage run events and facets: no I/O, no Dagster, no Metaflow."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, TypeVar
from uuid import UUID

import attr
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    DatasetFacet,
    InputDatasetFacet,
    JobFacet,
    OutputDatasetFacet,
    RunFacet,
    base_subset_dataset,
    column_lineage_dataset,
    data_quality_assertions_dataset,
    dataset_version_dataset,
    documentation_job,
    error_message_run,
    job_dependencies_run,
    job_type_job,
    nominal_time_run,
    output_statistics_output_dataset,
    parent_run,
    processing_engine_run,
    schema_dataset,
    source_code_location_job,
    symlinks_dataset,
)

from bridge.translate.column_lineage import Transformation
from bridge.translate.naming import DatasetName
from bridge.translate.partitions import PartitionVersion, in_order

BRIDGE_VERSION = "0.1.0"
PRODUCER = f"urn:taxi-demand-lineage:bridge:{BRIDGE_VERSION}"
# The custom facets' JSON Schemas ship with the bridge, in bridge/spec/ (ModelTrainingRunFacet.json,
# ModelPromotionRunFacet.json, OrchestratorRunFacet.json, PartitionVersionsInputDatasetFacet.json).
MODEL_FACET_SCHEMA = "urn:taxi-demand-lineage:bridge:0.1.0:spec:ModelTrainingRunFacet.json"
PROMOTION_FACET_SCHEMA = "urn:taxi-demand-lineage:bridge:0.1.0:spec:ModelPromotionRunFacet.json"
ORCHESTRATOR_FACET_SCHEMA = "urn:taxi-demand-lineage:bridge:0.1.0:spec:OrchestratorRunFacet.json"
PARTITION_FACET_SCHEMA = "urn:taxi-demand-lineage:bridge:0.1.0:spec:PartitionVersionsInputDatasetFacet.json"
STEP_REPORT_FACET_SCHEMA = "urn:taxi-demand-lineage:bridge:0.1.0:spec:StepReportRunFacet.json"


@attr.define
class ModelTrainingRunFacet(RunFacet):
    """What a run that trained a model learned: the model's name and version, its metrics and hyperparameters.

    Captured when the run is translated, so a sink never has to ask the training tool again.
    """

    model: str
    version: str
    metrics: dict[str, float] = attr.field(factory=dict)
    params: dict[str, str] = attr.field(factory=dict)

    @staticmethod
    def _get_schema() -> str:
        return MODEL_FACET_SCHEMA + "#/$defs/ModelTrainingRunFacet"


@attr.define
class ModelPromotionRunFacet(RunFacet):
    """A trained model version's champion/challenger decision: the version serving before it, whether the new
    one serves now, why, and the figures the reason rests on (both versions scored on the same held-out days)."""

    challenger: str
    promoted: bool
    nowServing: str  # noqa: N815 -- the facet's field, in camel case as OpenLineage's fields are
    reason: str
    serving: str | None = None
    figures: dict[str, float] = attr.field(factory=dict)

    @staticmethod
    def _get_schema() -> str:
        return PROMOTION_FACET_SCHEMA + "#/$defs/ModelPromotionRunFacet"


@attr.define
class StepReportRunFacet(RunFacet):
    """What a step reported of each dataset (or partition) it wrote: its outcome, counts, audits, warnings and the
    seconds each phase took, as the step recorded them (``lineage/report`` in its materializations' metadata)."""

    reports: list[dict[str, Any]] = attr.field(factory=list)

    @staticmethod
    def _get_schema() -> str:
        return STEP_REPORT_FACET_SCHEMA + "#/$defs/StepReportRunFacet"


@attr.define
class OrchestratorRunFacet(RunFacet):
    """The run as the tool that ran it names it, so a person can find it there.

    OpenLineage run ids are derived (a UUID per run and step); this is Dagster's run id (with the
    partition it ran for) or Metaflow's run pathspec (with the task's, for a step).
    """

    orchestrator: str
    runId: str  # noqa: N815 -- the facet's field, named as OpenLineage names run ids
    task: str | None = None
    partition: str | None = None

    @staticmethod
    def _get_schema() -> str:
        return ORCHESTRATOR_FACET_SCHEMA + "#/$defs/OrchestratorRunFacet"


@attr.define
class PartitionVersionsInputDatasetFacet(InputDatasetFacet):
    """Each partition a run read of a dataset version and the version that wrote it."""

    partitions: list[dict[str, Any]] = attr.field(factory=list)

    @staticmethod
    def _get_schema() -> str:
        return PARTITION_FACET_SCHEMA + "#/$defs/PartitionVersionsInputDatasetFacet"


def input_facets(partitions: tuple[PartitionVersion, ...]) -> dict[str, InputDatasetFacet]:
    """The ``subset`` and ``partitionVersions`` input facets of the partitions read; none for an unpartitioned table."""
    read = in_order(partitions)
    if not read:
        return {}
    named = {p.partition: dict(p.dimensions) for p in read}
    subset = base_subset_dataset.InputSubsetInputDatasetFacet(
        producer=PRODUCER,
        inputCondition=base_subset_dataset.PartitionSubsetCondition(
            partitions=[base_subset_dataset.Partition(dimensions=dims, identifier=name) for name, dims in named.items()]
        ),
    )
    versions = PartitionVersionsInputDatasetFacet(
        producer=PRODUCER,
        partitions=[
            {"identifier": p.partition, "version": p.version, **({"rows": p.rows} if p.rows is not None else {})}
            for p in read
        ],
    )
    return {"subset": subset, "partitionVersions": versions}


@dataclass(frozen=True)
class ToolRun:
    """A run as its own tool names it: ``orchestrator`` (dagster, metaflow), its run id, task and partition."""

    orchestrator: str
    run_id: str
    task: str | None = None
    partition: str | None = None


@dataclass(frozen=True)
class Engine:
    """The tool that ran a run and its version (the ``processing_engine`` run facet)."""

    name: str
    version: str


@dataclass(frozen=True)
class SourceCode:
    """Where the code a job ran is kept: a git repository's commit and the file's path in it."""

    commit: str
    path: str
    repo_url: str | None = None
    branch: str | None = None

    @property
    def url(self) -> str:
        """The file at the commit: on the repository's host when it has a network address, else as ``git:``."""
        if self.repo_url and self.repo_url.startswith(("https://", "http://")):
            return f"{self.repo_url.removesuffix('.git')}/blob/{self.commit}/{self.path}"
        return f"git:{self.commit}:{self.path}"


@dataclass(frozen=True)
class Assertion:
    name: str
    success: bool
    severity: str
    description: str | None = None


@dataclass(frozen=True)
class InputField:
    """An input column one output column is derived from, and how."""

    dataset: DatasetName
    field: str
    transformations: tuple[Transformation, ...] = ()


@dataclass(frozen=True)
class DatasetRef:
    """A dataset as one event sees it: name, version and what is known about it.

    ``columns_from`` is an output's column lineage: each column with the input fields it comes from.
    """

    name: DatasetName
    version: str | None = None
    schema: tuple[tuple[str, str, str | None], ...] = ()  # each column's name, type and description
    assertions: tuple[Assertion, ...] = ()
    rows: int | None = None
    columns_from: tuple[tuple[str, tuple[InputField, ...]], ...] = ()
    # An input's partitions read, each at the version that wrote it (a whole-table read of a partitioned table).
    partitions: tuple[PartitionVersion, ...] = ()


@dataclass(frozen=True)
class JobRef:
    namespace: str
    name: str
    run_id: UUID


@dataclass(frozen=True)
class ModelTraining:
    name: str
    version: str
    metrics: dict[str, float] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    promotion: dict[str, Any] | None = None  # as bridge.sources.metaflow_recorder.Promotion.to_json gives it


@dataclass
class EventSpec:
    """Everything one run event says; :func:`run_event` turns it into the typed event."""

    state: RunState
    time: datetime
    job: JobRef
    integration: str
    job_type: str
    inputs: list[DatasetRef] = field(default_factory=list)
    outputs: list[DatasetRef] = field(default_factory=list)
    parent: JobRef | None = None
    root: JobRef | None = None
    error: str | None = None
    nominal_start: datetime | None = None
    nominal_end: datetime | None = None
    upstream_jobs: list[JobRef] = field(default_factory=list)
    model: ModelTraining | None = None
    tool_run: ToolRun | None = None
    engine: Engine | None = None
    documentation: str | None = None  # what the job does, as its tool describes it
    source_code: SourceCode | None = None
    # What the step reported of each dataset it wrote (JSON objects, see StepReportRunFacet).
    reports: tuple[Mapping[str, Any], ...] = ()


D = TypeVar("D", InputDataset, OutputDataset)


@dataclass(frozen=True)
class AddedFacets:
    """Facets a translator adds to one event (:class:`bridge.translate.translator.LineageTranslator`'s hooks), each
    replacing the bridge's own of the same name: the run's, the job's, and each input's and output's, in order."""

    run: Mapping[str, RunFacet] = field(default_factory=dict)
    job: Mapping[str, JobFacet] = field(default_factory=dict)
    inputs: tuple[Mapping[str, DatasetFacet], ...] = ()
    outputs: tuple[Mapping[str, DatasetFacet], ...] = ()

    @property
    def any(self) -> bool:
        return bool(self.run or self.job or any(self.inputs) or any(self.outputs))

    def dataset(self, dataset: D, index: int, output: bool) -> D:
        """``dataset`` (the ``index``-th input or output) with its added facets: a copy, since events share datasets."""
        added = (self.outputs if output else self.inputs)[index]
        return attr.evolve(dataset, facets={**(dataset.facets or {}), **added}) if added else dataset


def _iso(moment: datetime) -> str:
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return aware.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_FACETS: dict[DatasetRef, dict[str, DatasetFacet]] = {}  # a dataset seen the same way again: its facets built once
KEEP_FACETS = 4096


def dataset_facets(ref: DatasetRef) -> dict[str, DatasetFacet]:
    """The dataset facets of ``ref``; every event of a run names its inputs and outputs again, so a dataset seen
    the same way shares the facets built the first time (they are never changed once built)."""
    built = _FACETS.get(ref)
    if built is None:
        if len(_FACETS) >= KEEP_FACETS:
            _FACETS.clear()
        built = _FACETS[ref] = _dataset_facets(ref)
    return dict(built)


def _dataset_facets(ref: DatasetRef) -> dict[str, DatasetFacet]:
    facets: dict[str, DatasetFacet] = {}
    if ref.name.catalog_name:
        facets["symlinks"] = symlinks_dataset.SymlinksDatasetFacet(
            producer=PRODUCER,
            identifiers=[
                symlinks_dataset.Identifier(
                    namespace=ref.name.catalog_namespace or "", name=ref.name.catalog_name, type="TABLE"
                )
            ],
        )
    if ref.version is not None:
        facets["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(
            producer=PRODUCER, datasetVersion=str(ref.version)
        )
    if ref.schema:
        facets["schema"] = schema_dataset.SchemaDatasetFacet(
            producer=PRODUCER,
            fields=[
                schema_dataset.SchemaDatasetFacetFields(name=name, type=kind, description=about)
                for name, kind, about in ref.schema
            ],
        )
    if ref.columns_from:
        facets["columnLineage"] = column_lineage_facet(ref)
    if ref.assertions:
        # The client types this facet as an input facet; it rides among the dataset facets of inputs and
        # outputs alike, where the bridge's readers look for it (the JSON is the same either way).
        facets["dataQualityAssertions"] = data_quality_assertions_dataset.DataQualityAssertionsDatasetFacet(  # type: ignore[assignment]
            producer=PRODUCER,
            assertions=[
                data_quality_assertions_dataset.Assertion(
                    assertion=a.name, success=a.success, severity=a.severity, name=a.name, description=a.description
                )
                for a in ref.assertions
            ],
        )
    return facets


def column_lineage_facet(ref: DatasetRef) -> column_lineage_dataset.ColumnLineageDatasetFacet:
    return column_lineage_dataset.ColumnLineageDatasetFacet(
        producer=PRODUCER,
        fields={
            column: column_lineage_dataset.Fields(
                inputFields=[
                    column_lineage_dataset.InputField(
                        namespace=source.dataset.namespace,
                        name=source.dataset.name,
                        field=source.field,
                        transformations=[
                            column_lineage_dataset.Transformation(type=t.type, subtype=t.subtype)
                            for t in source.transformations
                        ],
                    )
                    for source in sources
                ]
            )
            for column, sources in ref.columns_from
        },
    )


def _output_facets(ref: DatasetRef) -> dict[str, OutputDatasetFacet]:
    if ref.rows is None:
        return {}
    return {
        "outputStatistics": output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
            producer=PRODUCER, rowCount=ref.rows
        )
    }


# The client's facets validate themselves as they are built (a URL parse per field, a UUID, a date): those
# every event of a run repeats (its parent, its job's type, its partition's time) are built once per process.
@lru_cache(maxsize=4096)
def _parent_facet(parent: JobRef, root: JobRef | None) -> parent_run.ParentRunFacet:
    root = root or parent
    return parent_run.ParentRunFacet(
        producer=PRODUCER,
        run=parent_run.Run(runId=str(parent.run_id)),
        job=parent_run.Job(namespace=parent.namespace, name=parent.name),
        root=parent_run.Root(
            run=parent_run.RootRun(runId=str(root.run_id)),
            job=parent_run.RootJob(namespace=root.namespace, name=root.name),
        ),
    )


@lru_cache(maxsize=4096)
def _input(ref: DatasetRef) -> InputDataset:
    return InputDataset(
        namespace=ref.name.namespace,
        name=ref.name.name,
        facets=dataset_facets(ref),
        inputFacets=input_facets(ref.partitions),
    )


@lru_cache(maxsize=4096)
def _output(ref: DatasetRef) -> OutputDataset:
    return OutputDataset(
        namespace=ref.name.namespace, name=ref.name.name, facets=dataset_facets(ref), outputFacets=_output_facets(ref)
    )


@lru_cache(maxsize=256)
def _job_type_facet(integration: str, job_type: str) -> job_type_job.JobTypeJobFacet:
    return job_type_job.JobTypeJobFacet(
        producer=PRODUCER, processingType="BATCH", integration=integration, jobType=job_type
    )


@lru_cache(maxsize=4096)
def _orchestrator_facet(run: ToolRun) -> OrchestratorRunFacet:
    return OrchestratorRunFacet(
        producer=PRODUCER, orchestrator=run.orchestrator, runId=run.run_id, task=run.task, partition=run.partition
    )


@lru_cache(maxsize=4096)
def _nominal_time_facet(start: datetime, end: datetime | None) -> nominal_time_run.NominalTimeRunFacet:
    return nominal_time_run.NominalTimeRunFacet(
        producer=PRODUCER, nominalStartTime=_iso(start), nominalEndTime=_iso(end) if end else None
    )


@lru_cache(maxsize=64)
def _engine_facet(engine: Engine) -> processing_engine_run.ProcessingEngineRunFacet:
    return processing_engine_run.ProcessingEngineRunFacet(
        producer=PRODUCER, version=engine.version, name=engine.name, openlineageAdapterVersion=BRIDGE_VERSION
    )


@lru_cache(maxsize=1024)
def _documentation_facet(text: str) -> documentation_job.DocumentationJobFacet:
    return documentation_job.DocumentationJobFacet(producer=PRODUCER, description=text)


@lru_cache(maxsize=1024)
def _source_code_facet(code: SourceCode) -> source_code_location_job.SourceCodeLocationJobFacet:
    return source_code_location_job.SourceCodeLocationJobFacet(
        producer=PRODUCER,
        type="git",
        url=code.url,
        repoUrl=code.repo_url,
        path=code.path,
        version=code.commit,
        branch=code.branch,
    )


def event_key(spec: EventSpec, discriminator: str = "") -> str:
    """What makes an event unique: replays of the same source record give the same key."""
    return f"{spec.job.namespace}/{spec.job.name}/{spec.job.run_id}/{spec.state.value}/{discriminator}"


def run_event(spec: EventSpec, added: AddedFacets | None = None) -> RunEvent:
    """The typed event ``spec`` describes, with the facets ``added`` (a translator's) over the bridge's own."""
    run_facets: dict[str, RunFacet] = {}
    if spec.parent:
        run_facets["parent"] = _parent_facet(spec.parent, spec.root)
    if spec.error:
        run_facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            producer=PRODUCER, message=spec.error, programmingLanguage="python"
        )
    if spec.nominal_start:
        run_facets["nominalTime"] = _nominal_time_facet(spec.nominal_start, spec.nominal_end)
    if spec.upstream_jobs:
        run_facets["jobDependencies"] = job_dependencies_run.JobDependenciesRunFacet(
            producer=PRODUCER,
            upstream=[
                job_dependencies_run.JobDependency(
                    job=job_dependencies_run.JobIdentifier(namespace=job.namespace, name=job.name),
                    run=job_dependencies_run.RunIdentifier(runId=str(job.run_id)),
                    dependency_type="DIRECT_INVOCATION",
                )
                for job in spec.upstream_jobs
            ],
        )
    if spec.model:
        run_facets["modelTraining"] = ModelTrainingRunFacet(
            producer=PRODUCER,
            model=spec.model.name,
            version=spec.model.version,
            metrics=dict(spec.model.metrics),
            params=dict(spec.model.params),
        )
        if spec.model.promotion:
            decided = spec.model.promotion
            run_facets["modelPromotion"] = ModelPromotionRunFacet(
                producer=PRODUCER,
                challenger=decided["challenger"],
                promoted=bool(decided["promoted"]),
                nowServing=decided["nowServing"],
                reason=decided["reason"],
                serving=decided.get("serving"),
                figures=dict(decided.get("figures") or {}),
            )
    if spec.reports:
        run_facets["stepReport"] = StepReportRunFacet(producer=PRODUCER, reports=[dict(r) for r in spec.reports])
    if spec.tool_run:
        run_facets["orchestratorRun"] = _orchestrator_facet(spec.tool_run)
    if spec.engine:
        run_facets["processing_engine"] = _engine_facet(spec.engine)
    job_facets: dict[str, JobFacet] = {"jobType": _job_type_facet(spec.integration, spec.job_type)}
    if spec.documentation:
        job_facets["documentation"] = _documentation_facet(spec.documentation)
    if spec.source_code:
        job_facets["sourceCodeLocation"] = _source_code_facet(spec.source_code)
    if added is None:
        inputs, outputs = [_input(d) for d in spec.inputs], [_output(d) for d in spec.outputs]
    else:
        run_facets |= added.run
        job_facets |= added.job
        inputs = [added.dataset(_input(d), i, output=False) for i, d in enumerate(spec.inputs)]
        outputs = [added.dataset(_output(d), i, output=True) for i, d in enumerate(spec.outputs)]
    return RunEvent(
        eventType=spec.state,
        eventTime=_iso(spec.time),
        run=Run(runId=str(spec.job.run_id), facets=run_facets),
        job=Job(namespace=spec.job.namespace, name=spec.job.name, facets=job_facets),
        inputs=inputs,
        outputs=outputs,
        producer=PRODUCER,
    )
