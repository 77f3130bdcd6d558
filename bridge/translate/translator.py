"""The one class a project subclasses to change how its runs become lineage: job names, dataset names, extra facets.

:class:`LineageTranslator` holds the naming policy (:class:`~bridge.translate.naming.Naming`) and answers every
question the Dagster, Metaflow and DataHub translations ask of a name, through small methods a subclass overrides,
as ``DagsterDbtTranslator`` does for dbt. Its defaults are the bridge's own names and facets. Every method is pure:
it is asked during translation, which reads nothing.

Light to import (it loads neither the OpenLineage client nor a tool), since :mod:`bridge.config` holds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, final

from bridge.errors import BridgeError
from bridge.translate.naming import DatasetName, Naming, dagster_job_name, job_name

if TYPE_CHECKING:
    from openlineage.client.event_v2 import RunEvent
    from openlineage.client.facet_v2 import DatasetFacet, JobFacet, RunFacet

    from bridge.translate.events import DatasetRef, EventSpec


class JobNameRefused(BridgeError, ValueError):
    """A job name a translator gave breaks the ``{flow}.{step}`` shape DataHub and the lineage views read."""


class LineageTranslator:
    """How a project's runs are named and described in lineage. Subclass it, override what you need, and hand the
    class to :class:`~bridge.config.LineageBridge` (``translator=MyTranslator``); the bridge builds it over its
    naming policy.

    Jobs: a Dagster job's or a Metaflow flow's runs are one job (``monthly_ingestion``, ``TrainForecastModelFlow``),
    each step a job ``{that job}.{step}`` (:meth:`dagster_job`, :meth:`dagster_step_job`, :meth:`metaflow_flow_job`,
    :meth:`metaflow_step_job`). DataHub's flow is the part before the first dot, its job the rest, so a run's job
    name has no dot and a step's starts with its run's job name and a dot.

    Datasets: a Dagster asset (:meth:`asset_dataset`), which is a table (:meth:`table_dataset`) or a place where files
    are kept (:meth:`location_dataset`); what a Metaflow step recorded goes the same way, so a table is the same
    dataset from both tools. DataHub names each by :meth:`datahub_dataset_urn`.

    Facets: :meth:`run_facets`, :meth:`job_facets` and :meth:`dataset_facets` add facets to each event (none by
    default); one named as one of the bridge's replaces it.
    """

    def __init__(self, naming: Naming) -> None:
        self.naming = naming

    # Jobs

    def dagster_job(self, job: str, code_location: str) -> str:
        """The job of a Dagster job's runs: its name, or its code location's for a job Dagster made up to run a
        selection of assets (the UI's Materialize: ``__ASSET_JOB``)."""
        return dagster_job_name(job, code_location)

    def dagster_step_job(self, job: str, code_location: str, step: str, assets: Sequence[Sequence[str]]) -> str:
        """The job of one step of a Dagster job: ``{dagster_job}.{step}``.

        ``step`` is the step's key (an asset's step is named for its key: ``nyc_taxi__raw_yellow``), or
        ``{key}__checks`` for a job of the step's checks alone; ``assets`` are the paths of the assets it
        materializes, or else of those it checks.
        """
        return job_name(self.dagster_job(job, code_location), step)

    def metaflow_flow_job(self, flow: str) -> str:
        """The job of a Metaflow flow's runs: the flow's name."""
        return job_name(flow)

    def metaflow_step_job(self, flow: str, step: str) -> str:
        """The job of one step of a Metaflow flow: ``{metaflow_flow_job}.{step}``."""
        return job_name(self.metaflow_flow_job(flow), step)

    # Datasets

    def asset_dataset(self, asset_path: Sequence[str]) -> DatasetName:
        """A Dagster asset, by its key's path: the table it is (an asset of one of the naming policy's
        ``table_namespaces``), else the location the policy's ``locations`` give it."""
        identifier = self.naming.asset_table(asset_path)
        if identifier:
            return self.table_dataset(identifier)
        return self.location_dataset(self.naming.asset_location(asset_path))

    def table_dataset(self, identifier: str) -> DatasetName:
        """A table of the naming policy's catalog, by its identifier (``db.table``): at its storage location (or as
        Glue names it), with its identifier as its ``catalog_name`` (the ``symlinks`` facet, the DataHub name)."""
        return self.naming.table(identifier)

    def location_dataset(self, location: str) -> DatasetName:
        """A dataset known by where it is kept (a staging folder, a model in a datastore): ``file`` + absolute path,
        or ``scheme://authority`` + path."""
        return self.naming.location(location)

    def dataset_at(self, namespace: str, name: str) -> DatasetName:
        """A dataset known only by its OpenLineage namespace and name (an input of a column's lineage), with its table
        identifier when it is a table (the table at that location, as :meth:`table_dataset` names it). A subclass that
        moves tables to other locations answers for them here, so DataHub's column lineage points at the moved table."""
        identifier = self.naming.identifier_at(namespace, name)
        return self.table_dataset(identifier) if identifier else DatasetName(namespace, name)

    def datahub_dataset_urn(self, dataset: DatasetName) -> str:
        """A dataset's DataHub URN: a table by its identifier on its catalog's platform, anything else by location."""
        return self.naming.datahub_urn(dataset)

    @final
    def recorded_dataset(self, name: str, kind: str) -> DatasetName:
        """What a Metaflow step recorded: a table by its identifier, anything else by its asset key (``a/b``)."""
        return self.table_dataset(name) if kind == "table" else self.asset_dataset(name.split("/"))

    # Facets

    def run_facets(self, event: EventSpec) -> Mapping[str, RunFacet]:
        """Run facets to add to ``event`` (what the bridge translated: its state, job, integration ``DAGSTER`` or
        ``METAFLOW``, job type, inputs, outputs, and ``tool_run``, the run as its tool names it). None by default."""
        return {}

    def job_facets(self, event: EventSpec) -> Mapping[str, JobFacet]:
        """Job facets to add to ``event``. None by default."""
        return {}

    def dataset_facets(self, event: EventSpec, dataset: DatasetRef, output: bool) -> Mapping[str, DatasetFacet]:
        """Dataset facets to add to one of ``event``'s inputs, or (``output``) outputs. None by default."""
        return {}

    @final
    def event(self, spec: EventSpec) -> RunEvent:
        """The OpenLineage event ``spec`` describes, with the facets the hooks add."""
        # The OpenLineage client loads only when an event is built: bridge.config, which holds this class, stays light.
        from bridge.translate.events import AddedFacets, run_event

        added = AddedFacets(
            run=self.run_facets(spec),
            job=self.job_facets(spec),
            inputs=tuple(self.dataset_facets(spec, ref, False) for ref in spec.inputs),
            outputs=tuple(self.dataset_facets(spec, ref, True) for ref in spec.outputs),
        )
        return run_event(spec, added if added.any else None)


def as_translator(names: LineageTranslator | Naming) -> LineageTranslator:
    """``names`` as a translator: a naming policy alone translates as the bridge does by default."""
    return names if isinstance(names, LineageTranslator) else LineageTranslator(names)


def run_job_named(name: str, what: str) -> str:
    """``name``, the job of a run, when it has no dot (DataHub reads the flow as the part before the first)."""
    if "." in name:
        msg = (
            f"The lineage translator names the job of {what} {name!r}, with a dot: DataHub reads a job's flow as the "
            "part before the first dot. Return a name without one (a step's job is '{run's job}.{step}')"
        )
        raise JobNameRefused(msg)
    return name


def step_job_named(name: str, run_job: str, what: str) -> str:
    """``name``, the job of a step, when it is ``{run_job}.{leaf}``: DataHub finds the step's flow by that prefix."""
    if not name.startswith(f"{run_job}.") or name == f"{run_job}.":
        msg = (
            f"The lineage translator names the job of {what} {name!r}, not '{run_job}.<step>': a step's job is its "
            "run's job, a dot and the step, so DataHub puts it in its flow. Rename the run's job (dagster_job, "
            "metaflow_flow_job) to change the part before the dot"
        )
        raise JobNameRefused(msg)
    return name
