"""What a project hands the bridge: its naming policy and translator, the flows to follow, where lineage state lives,
its sinks.

Plain values: the project reads its own settings and builds a :class:`LineageBridge` once; the
bridge reads no environment of its own (the OpenLineage client keeps its own configuration).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.index.model_versions import CANDIDATE_PARAM, TARGETS
from bridge.translate.naming import Naming
from bridge.translate.translator import LineageTranslator

if TYPE_CHECKING:
    from dagster import AssetKey
    from dagster._core.definitions.metadata import RawMetadataValue

# Extra metadata for the materializations reported for a Metaflow run made outside Dagster, by asset.
ReportMetadata = Callable[[str], Mapping["AssetKey", Mapping[str, "RawMetadataValue"]]]
# The checks a Metaflow run evaluated on what it wrote, by asset: (check name, passed, metadata) each.
ReportChecks = Callable[[str], Mapping["AssetKey", Sequence[tuple[str, bool, Mapping[str, "RawMetadataValue"]]]]]
# Each model version's accuracy since it served (its forecasts scored against the actuals), by version: figures by name.
LiveAccuracy = Callable[[], Mapping[str, Mapping[str, float]]]


@dataclass(frozen=True)
class SinkSpec:
    """One sink as configured: its registered ``kind`` and that kind's options (a mapping its ``Config`` validates,
    or a ``Config`` itself: :mod:`bridge.sinks.registry`)."""

    kind: str
    options: Any = field(default_factory=dict)
    name: str = ""  # its key in a pass's results; the kind when empty (two of a kind need names)

    @property
    def key(self) -> str:
        return self.name or self.kind


@dataclass(frozen=True)
class LineageBridge:
    """One project's bridge.

    ``lineage_dir`` holds the outbox and, when the OpenLineage client has no configuration of its own,
    the JSON-lines file events go to. ``code_location`` is the Dagster code location (in
    ``workspace_file``) whose asset graph the command line loads, and the location of runs executed
    in-process. ``flows`` are the Metaflow flows to follow. ``report_metadata`` adds a project's
    metadata to the materializations reported for flow runs made outside Dagster; ``report_checks`` the
    asset checks such a run evaluated on what it wrote (reported as check evaluations). An asset whose Dagster
    kinds include one of ``launcher_kinds`` is made by a run the step launches: that step is the run's
    parent in lineage, not a producer of the asset. ``how_to_fill_graph``
    is what the command line tells a user who reads an empty graph.
    ``pass_seconds`` bounds a pass (well inside Dagster's 60 s sensor tick); what is left waits, in order,
    for the next; each sink delivers in a thread of its own, so a slow target never starves another.
    ``repair_command`` is how a user runs the bridge's command line (``taxi-lineage``), named in
    the messages about damaged state. ``watch_command`` starts this project's watcher (:mod:`bridge.run.watch`),
    which the sensor keeps running for delivery within seconds; empty, the sensor alone delivers.
    ``dagster_home`` is the Dagster instance the command line reads (``None``: ``DAGSTER_HOME``, as Dagster's own
    commands). ``sinks`` are where events go, each a registered kind (:mod:`bridge.sinks.registry`) with its options.
    ``model_candidate_param`` is the model hyperparameter that names which candidate a model version is, and
    ``model_targets`` the columns of a model's column lineage that are what it learned to predict, not features.
    ``live_accuracy`` gives each model version's scores since it served, which ``model`` and ``diff`` show beside
    the backtest. ``translator`` is how jobs and datasets are named and which facets events carry: a subclass of
    :class:`~bridge.translate.translator.LineageTranslator` (the default), built over ``naming``.
    """

    naming: Naming
    lineage_dir: Path
    flows: tuple[str, ...] = ()
    code_location: str = ""
    workspace_file: Path | None = None
    report_metadata: ReportMetadata | None = None
    report_checks: ReportChecks | None = None
    launcher_kinds: tuple[str, ...] = ("metaflow",)
    how_to_fill_graph: str = "run a lineage pass after Dagster or Metaflow runs"
    pass_seconds: float = 40.0
    watch_command: tuple[str, ...] = ()
    repair_command: str = "the bridge's command line"
    sinks: tuple[SinkSpec, ...] = (SinkSpec("openlineage"),)
    dagster_home: Path | None = None
    model_candidate_param: str = CANDIDATE_PARAM
    model_targets: tuple[str, ...] = TARGETS
    live_accuracy: LiveAccuracy | None = None
    translator: Callable[[Naming], LineageTranslator] = LineageTranslator

    @cached_property
    def translation(self) -> LineageTranslator:
        """The translator every translation uses: ``translator`` over ``naming``."""
        return self.translator(self.naming)

    def sink_spec(self, key: str) -> SinkSpec | None:
        """The sink configured under ``key`` (its name, or its kind when it has none)."""
        return next((spec for spec in self.sinks if spec.key == key), None)

    @property
    def outbox_path(self) -> Path:
        return self.lineage_dir / "outbox.sqlite"

    @property
    def index_path(self) -> Path:
        return self.lineage_dir / "index.sqlite"

    @property
    def picture_path(self) -> Path:
        """Where ``picture`` draws the whole graph."""
        return self.lineage_dir / "lineage_graph.svg"

    @property
    def pictures_dir(self) -> Path:
        """Where ``picture`` draws each dataset's own picture (its neighbourhood), one file per dataset."""
        return self.lineage_dir / "pictures"

    @property
    def asset_jobs(self) -> frozenset[str]:
        """What lineage names Dagster's asset jobs (the UI's Materialize) in ``code_location``."""
        return frozenset({self.translation.dagster_job("__ASSET_JOB", self.code_location)})

    @property
    def events_file(self) -> Path:
        return self.lineage_dir / "openlineage_events.jsonl"
