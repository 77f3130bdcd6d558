"""Translate OpenLineage run events into native DataHub metadata (acryl-datahub SDK aspects).

Pure: events in, ``MetadataChangeProposalWrapper``s out. Flows and jobs come from OpenLineage job
names (``{parent}.{leaf}``), datasets' URNs from the translator (:mod:`bridge.translate.translator`; so replays
update, never duplicate), each OpenLineage run becomes a DataProcessInstance of its job, and a ``modelTraining``
run facet an MLModel version in its MLModelGroup. Everything comes from the event: nothing is looked up.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from datahub.emitter import mce_builder as builder
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata import schema_classes as models
from datahub.metadata.schema_classes import _Aspect
from datahub.metadata.urns import MlModelUrn, VersionSetUrn

from bridge.translate.naming import DatasetName, Naming, dataset_urn_name, dataset_urn_platform
from bridge.translate.partitions import partitions_in
from bridge.translate.translator import LineageTranslator, as_translator

ACTOR = "urn:li:corpuser:taxi-demand-bridge"
RUN_RESULTS = {
    "COMPLETE": models.RunResultTypeClass.SUCCESS,
    "FAIL": models.RunResultTypeClass.FAILURE,
    "ABORT": models.RunResultTypeClass.FAILURE,  # ended unfinished (canceled, killed); nativeResultType: ABORT
}


def dataset_urn(dataset: dict[str, Any], translator: LineageTranslator) -> str:
    symlinks = dataset.get("facets", {}).get("symlinks", {}).get("identifiers", [])
    catalog = symlinks[0] if symlinks else {}
    name = DatasetName(dataset["namespace"], dataset["name"], catalog.get("name"), catalog.get("namespace"))
    return translator.datahub_dataset_urn(name)


def flow_and_job(event: dict[str, Any]) -> tuple[str, str | None]:
    """The DataFlow URN and, for a step job, its DataJob URN."""
    integration = event["job"]["facets"]["jobType"]["integration"].lower()
    parent, _, leaf = event["job"]["name"].partition(".")
    flow = builder.make_data_flow_urn(integration, parent, cluster="PROD")
    return flow, builder.make_data_job_urn_with_flow(flow, leaf) if leaf else None


def _string_type() -> models.StringTypeClass:
    return models.StringTypeClass()  # type: ignore[no-untyped-call]  # generated without a return annotation


def _millis(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def metadata_for(event: dict[str, Any], names: LineageTranslator | Naming) -> list[MetadataChangeProposalWrapper]:
    """DataHub aspects for one OpenLineage event (as JSON), its datasets named by the translator (a naming policy
    alone: the default translator over it); its flow and job are the event's job name, ``{flow}.{step}``."""
    translator = as_translator(names)
    flow, job = flow_and_job(event)
    integration = event["job"]["facets"]["jobType"]["integration"].lower()
    inputs = [dataset_urn(d, translator) for d in event.get("inputs", [])]
    outputs = [dataset_urn(d, translator) for d in event.get("outputs", [])]
    flow_info = models.DataFlowInfoClass(
        name=event["job"]["name"].partition(".")[0], customProperties={"orchestrator": integration}
    )
    aspects: list[tuple[str, _Aspect]] = [(flow, flow_info)]
    entity = job or flow
    if job:
        upstream_jobs = [
            flow_and_job({"job": {"name": dep["job"]["name"], "facets": event["job"]["facets"]}})[1]
            for dep in event["run"]["facets"].get("jobDependencies", {}).get("upstream", [])
        ]
        job_info = models.DataJobInfoClass(
            name=event["job"]["name"].partition(".")[2], type=integration.upper(), flowUrn=flow
        )
        aspects.append((job, job_info))
        if event["eventType"] != "START" or inputs or outputs:
            columns = [
                lineage
                for dataset, urn in zip(event.get("outputs", []), outputs, strict=True)
                for lineage in fine_grained_lineage(dataset, urn, translator)
            ]
            aspects.append(
                (job, models.DataJobInputOutputClass(
                    inputDatasets=sorted(set(inputs)), outputDatasets=sorted(set(outputs)),
                    inputDatajobs=sorted({j for j in upstream_jobs if j}),
                    fineGrainedLineages=columns or None,
                ))
            )  # fmt: skip
    partition = event["run"]["facets"].get("nominalTime", {}).get("nominalStartTime", "")[:10] or None
    for dataset in event.get("outputs", []):
        aspects += _dataset_aspects(dataset, inputs, partition, translator)
    aspects += _run_aspects(event, entity, inputs, outputs, translator)
    if event["eventType"] in ("COMPLETE", "FAIL"):  # a failed audit is the result people most need to see
        checked = [*event.get("inputs", []), *event.get("outputs", [])]
        aspects += [a for d in checked for a in _assertion_aspects(event, d, translator)]
    if event["eventType"] == "COMPLETE" and "modelTraining" in event["run"]["facets"]:
        aspects += _model_aspects(event, inputs, translator)
    return [MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect) for urn, aspect in aspects]


def fine_grained_lineage(
    dataset: dict[str, Any], urn: str, translator: LineageTranslator
) -> list[models.FineGrainedLineageClass]:
    """An output's ``columnLineage`` facet as DataHub column lineage: per column, direct then indirect inputs."""
    lineages = []
    for column, spec in sorted(dataset.get("facets", {}).get("columnLineage", {}).get("fields", {}).items()):
        by_type: dict[str, tuple[set[str], set[str]]] = {}
        for source in spec.get("inputFields", []):
            upstream = translator.datahub_dataset_urn(translator.dataset_at(source["namespace"], source["name"]))
            field = builder.make_schema_field_urn(upstream, source["field"])
            for transformation in source.get("transformations") or [{"type": "DIRECT", "subtype": ""}]:
                fields, subtypes = by_type.setdefault(transformation["type"], (set(), set()))
                fields.add(field)
                subtypes.add(transformation.get("subtype") or "")
        for kind, (fields, subtypes) in sorted(by_type.items()):
            lineages.append(
                models.FineGrainedLineageClass(
                    upstreamType=models.FineGrainedLineageUpstreamTypeClass.FIELD_SET,
                    upstreams=sorted(fields),
                    downstreamType=models.FineGrainedLineageDownstreamTypeClass.FIELD,
                    downstreams=[builder.make_schema_field_urn(urn, column)],
                    transformOperation=f"{kind}:{','.join(sorted(s for s in subtypes if s))}".rstrip(":"),
                )
            )
    return lineages


def _dataset_aspects(
    dataset: dict[str, Any], upstream: list[str], partition: str | None, translator: LineageTranslator
) -> list[tuple[str, _Aspect]]:
    """Properties of the dataset's latest version (version, rows written, partition) and lineage."""
    urn = dataset_urn(dataset, translator)
    facets = dataset.get("facets", {})
    properties = {"openlineage_namespace": dataset["namespace"], "openlineage_name": dataset["name"]}
    if "version" in facets:
        properties["version"] = facets["version"]["datasetVersion"]
    rows = dataset.get("outputFacets", {}).get("outputStatistics", {}).get("rowCount")
    if rows is not None:
        properties["rows_written"] = str(rows)
    if partition:
        properties["partition"] = partition
    aspects: list[tuple[str, _Aspect]] = []
    # Only a written version describes the dataset's latest state; a planned or failed output must not
    # overwrite the properties of the version before it.
    if "version" in facets:
        aspects.append((urn, models.DatasetPropertiesClass(name=dataset_urn_name(urn), customProperties=properties)))
    if upstream:
        columns = fine_grained_lineage(dataset, urn, translator)
        aspects.append(
            (urn, models.UpstreamLineageClass(
                upstreams=[models.UpstreamClass(dataset=u, type=models.DatasetLineageTypeClass.TRANSFORMED)
                           for u in sorted(set(upstream)) if u != urn],
                fineGrainedLineages=columns or None,
            ))
        )  # fmt: skip
    fields = facets.get("schema", {}).get("fields", [])
    if fields:
        aspects.append(
            (urn, models.SchemaMetadataClass(
                schemaName=dataset_urn_name(urn), platform=f"urn:li:dataPlatform:{dataset_urn_platform(urn)}",
                version=0, hash="",
                platformSchema=models.OtherSchemaClass(rawSchema=""),
                fields=[models.SchemaFieldClass(fieldPath=f["name"], nativeDataType=f.get("type") or "",
                                                type=models.SchemaFieldDataTypeClass(type=_string_type()),
                                                description=f.get("description"))
                        for f in fields],
            ))
        )  # fmt: skip
    return aspects


def _run_aspects(
    event: dict[str, Any], template: str, inputs: list[str], outputs: list[str], translator: LineageTranslator
) -> list[tuple[str, _Aspect]]:
    """The run as a DataProcessInstance, with what this run (this version) read and wrote."""
    urn = f"urn:li:dataProcessInstance:{event['run']['runId']}"
    when = _millis(event["eventTime"])
    aspects: list[tuple[str, _Aspect]] = [
        (urn, models.DataProcessInstanceRelationshipsClass(upstreamInstances=[], parentTemplate=template)),
    ]
    if inputs:
        aspects.append((urn, models.DataProcessInstanceInputClass(inputs=sorted(set(inputs)))))
    if outputs:
        aspects.append((urn, models.DataProcessInstanceOutputClass(outputs=sorted(set(outputs)))))
    tool_run = _tool_run_properties(event)
    if event["eventType"] == "START":
        name = f"{event['job']['name']} {event['run']['runId']}"
        created = models.AuditStampClass(time=when, actor=ACTOR)
        started = models.DataProcessInstanceRunEventClass(
            timestampMillis=when, status=models.DataProcessRunStatusClass.STARTED
        )
        properties = models.DataProcessInstancePropertiesClass(name=name, created=created, customProperties=tool_run)
        aspects += [(urn, properties), (urn, started)]
    elif event["eventType"] in RUN_RESULTS:
        # The run's properties again, now with the dataset versions it read and wrote.
        versions = {
            f"{direction}:{dataset_urn_name(dataset_urn(d, translator))}": d["facets"]["version"]["datasetVersion"]
            for direction in ("input", "output")
            for d in event.get(f"{direction}s", [])
            if "version" in d.get("facets", {})
        }
        properties = models.DataProcessInstancePropertiesClass(
            name=f"{event['job']['name']} {event['run']['runId']}",
            created=models.AuditStampClass(time=when, actor=ACTOR),
            customProperties={**tool_run, **versions, **partitions_read(event, translator)},
        )
        aspects.append((urn, properties))
        result = models.DataProcessInstanceRunResultClass(
            type=RUN_RESULTS[event["eventType"]], nativeResultType=event["eventType"]
        )
        aspects.append((urn, models.DataProcessInstanceRunEventClass(
            timestampMillis=when, status=models.DataProcessRunStatusClass.COMPLETE, result=result,
            partitionSpec=_partition_spec(event))))  # fmt: skip
    return aspects


def partitions_read(event: dict[str, Any], translator: LineageTranslator) -> dict[str, str]:
    """Each partition a run read of a table read whole, at the version that wrote it:
    ``input:nyc_taxi.yellow_rides_hourly_actuals [pickup_hour_month=2024-12]`` = the snapshot that wrote it
    (a partition written by two snapshots names both, comma-separated)."""
    found: dict[str, list[str]] = {}
    for dataset in event.get("inputs", []):
        name = dataset_urn_name(dataset_urn(dataset, translator))
        for part in partitions_in(dataset):
            found.setdefault(f"input:{name} [{part.partition}]", []).append(part.version)
    return {key: ",".join(sorted(versions)) for key, versions in found.items()}


def _partition_spec(event: dict[str, Any]) -> models.PartitionSpecClass | None:
    """A run for one partition (a Dagster monthly run) as DataHub's partition-aware run event says it."""
    partition = event["run"].get("facets", {}).get("orchestratorRun", {}).get("partition")
    if not partition:
        return None
    return models.PartitionSpecClass(partition=partition, type=models.PartitionTypeClass.PARTITION)


def _tool_run_properties(event: dict[str, Any]) -> dict[str, str]:
    """The run as its tool names it (the ``orchestratorRun`` facet), to find it there: ``dagster_run_id`` and
    ``dagster_partition``, or ``metaflow_run_id`` and ``metaflow_task`` (pathspecs)."""
    facet = event["run"].get("facets", {}).get("orchestratorRun")
    if facet is None:
        return {}
    names = {"runId": "run_id", "task": "task", "partition": "partition"}
    return {f"{facet['orchestrator']}_{names[key]}": facet[key] for key in names if facet.get(key)}


def _model_aspects(
    event: dict[str, Any], inputs: list[str], translator: LineageTranslator
) -> list[tuple[str, _Aspect]]:
    """A run that trained a model: the model group and one MLModel for this version, with what it learned."""
    facet = event["run"]["facets"]["modelTraining"]
    name, version = facet["model"], facet["version"]
    platform = event["job"]["facets"]["jobType"]["integration"].lower()
    group = builder.make_ml_model_group_urn(platform, name, "PROD")
    urn = _model_version_urn(platform, name, version)
    written = [
        d for d in event.get("outputs", []) if d.get("facets", {}).get("version", {}).get("datasetVersion") == version
    ]
    custom = {"input_datasets": ", ".join(sorted(set(inputs))), **partitions_read(event, translator)}
    if written:
        custom["model_dataset"] = dataset_urn(written[0], translator)
    promotion = event["run"]["facets"].get("modelPromotion")
    if promotion:
        custom |= {"serving": str(promotion["nowServing"] == version).lower(), "promotion": promotion["reason"]}
    properties = models.MLModelPropertiesClass(
        name=f"{name} {version}",
        version=models.VersionTagClass(versionTag=version),
        trainingMetrics=[models.MLMetricClass(name=k, value=str(v)) for k, v in facet.get("metrics", {}).items()],
        hyperParams=[models.MLHyperParamClass(name=k, value=str(v)) for k, v in facet.get("params", {}).items()],
        trainingJobs=[f"urn:li:dataProcessInstance:{event['run']['runId']}"],
        groups=[group],
        customProperties=custom,
    )
    aspects: list[tuple[str, _Aspect]] = [(group, models.MLModelGroupPropertiesClass(name=name)), (urn, properties)]
    if promotion:
        aspects += _serving_aspects(platform, name, version, promotion)
    return aspects


SERVING = "serving"


def _model_version_urn(platform: str, name: str, version: str) -> str:
    return str(builder.make_ml_model_urn(platform, f"{name}_{version.replace('/', '_')}", "PROD"))


def _serving_aspects(platform: str, name: str, version: str, promotion: dict[str, Any]) -> list[tuple[str, _Aspect]]:
    """Each version of the model in one version set, the serving one under the alias and tag ``serving``.

    A promotion moves the alias: the version that served before is written again without it, from what the
    event says (its version), so the graph never shows two versions serving.
    """
    version_set = str(VersionSetUrn(builder.datahub_guid({"platform": platform, "name": name}), MlModelUrn.ENTITY_TYPE))
    versions = [version]
    if promotion.get("serving") and promotion["serving"] != version:
        versions.append(promotion["serving"])
    aspects: list[tuple[str, _Aspect]] = []
    for each in versions:
        serving = promotion["nowServing"] == each
        urn = _model_version_urn(platform, name, each)
        aspects.append(
            (
                urn,
                models.VersionPropertiesClass(
                    versionSet=version_set,
                    version=models.VersionTagClass(versionTag=each),
                    sortId=_sort_id(each),
                    aliases=[models.VersionTagClass(versionTag=SERVING)] if serving else [],
                    versioningScheme=models.VersioningSchemeClass.LEXICOGRAPHIC_STRING,
                ),
            )
        )
        tags = [models.TagAssociationClass(tag=builder.make_tag_urn(SERVING))] if serving else []
        aspects.append((urn, models.GlobalTagsClass(tags=tags)))
    return aspects


def _sort_id(version: str) -> str:
    """A version's place among its model's versions: its run id (the pathspec's last part), zero-padded."""
    run = version.rsplit("/", 1)[-1]
    return run.zfill(20) if run.isdigit() else run


def _assertion_aspects(
    event: dict[str, Any], dataset: dict[str, Any], translator: LineageTranslator
) -> list[tuple[str, _Aspect]]:
    """Each asset check on a dataset as a DataHub assertion, with this run's result."""
    facet = dataset.get("facets", {}).get("dataQualityAssertions", {})
    target = dataset_urn(dataset, translator)
    aspects: list[tuple[str, _Aspect]] = []
    for check in facet.get("assertions", []):
        urn = builder.make_assertion_urn(builder.datahub_guid({"dataset": target, "check": check["assertion"]}))
        info = models.AssertionInfoClass(
            type=models.AssertionTypeClass.DATASET,
            datasetAssertion=models.DatasetAssertionInfoClass(
                dataset=target,
                scope=models.DatasetAssertionScopeClass.DATASET_ROWS,
                operator=models.AssertionStdOperatorClass._NATIVE_,
                nativeType=check["assertion"],
            ),
            description=f"Dagster asset check {check['assertion']} (severity {check.get('severity', 'error')})",
        )
        outcome = (
            models.AssertionResultTypeClass.SUCCESS if check["success"] else models.AssertionResultTypeClass.FAILURE
        )
        run_event = models.AssertionRunEventClass(
            timestampMillis=_millis(event["eventTime"]),
            runId=event["run"]["runId"],
            asserteeUrn=target,
            assertionUrn=urn,
            status=models.AssertionRunStatusClass.COMPLETE,
            # What the check said of this run (the figures of a failure, an accepted failure's reason).
            result=models.AssertionResultClass(
                type=outcome, nativeResults={"description": check["description"]} if check.get("description") else None
            ),
        )
        aspects += [(urn, info), (urn, run_event)]
    return aspects
