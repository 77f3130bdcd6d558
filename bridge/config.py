"""What a project hands the bridge: its naming policy, the flows to follow, where lineage state lives, DataHub.

Plain values: the project reads its own settings and builds a :class:`LineageBridge` once; the
bridge reads no environment of its own (the OpenLineage client keeps its own configuration).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from bridge.translate.naming import Naming

if TYPE_CHECKING:
    from dagster import AssetKey
    from dagster._core.definitions.metadata import RawMetadataValue

DataHubKind = Literal["lite", "rest", "file", "off"]
# Extra metadata for the materializations reported for a Metaflow run made outside Dagster, by asset.
ReportMetadata = Callable[[str], Mapping["AssetKey", Mapping[str, "RawMetadataValue"]]]
# The checks a Metaflow run evaluated on what it wrote, by asset: (check name, passed, metadata) each.
ReportChecks = Callable[[str], Mapping["AssetKey", Sequence[tuple[str, bool, Mapping[str, "RawMetadataValue"]]]]]


@dataclass(frozen=True)
class SinkSpec:
    """One sink as configured: its registered ``kind`` and that kind's options."""

    kind: str
    options: Mapping[str, str] = field(default_factory=dict)
    name: str = ""  # its key in a pass's results; the kind when empty (two of a kind need names)

    @property
    def key(self) -> str:
        return self.name or self.kind


@dataclass(frozen=True)
class DataHubTarget:
    """Where DataHub metadata goes: DataHub Lite (a file), a GMS over REST, a metadata file, or nowhere."""

    kind: DataHubKind = "lite"
    lite_path: Path | None = None
    gms_url: str = ""
    gms_token: str | None = field(default=None, repr=False)
    file: Path | None = None

    def __post_init__(self) -> None:
        if self.kind == "rest" and not self.gms_url:
            raise ValueError("DataHub over REST needs the GMS URL (DATAHUB_GMS_URL), and a token if GMS has auth")
        if self.kind == "lite" and self.lite_path is None:
            raise ValueError("DataHub Lite needs the path of its file")
        if self.kind == "file" and self.file is None:
            raise ValueError("A DataHub metadata file needs its path")


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
    for the next. ``answer_seconds`` is how long a request already sent to an HTTP target is waited on (at
    least the client's configured timeout): giving up sooner could send the event twice.
    ``repair_command`` is how a user runs the bridge's command line (``taxi-lineage``), named in
    the messages about damaged state. ``watch_command`` starts this project's watcher (:mod:`bridge.run.watch`),
    which the sensor keeps running for delivery within seconds; empty, the sensor alone delivers.
    ``dagster_home`` is the Dagster instance the command line reads (``None``: ``DAGSTER_HOME``, as Dagster's own
    commands). ``sinks`` are where events go, each a registered kind (:mod:`bridge.sinks.registry`) with its options.
    """

    naming: Naming
    lineage_dir: Path
    flows: tuple[str, ...] = ()
    code_location: str = ""
    workspace_file: Path | None = None
    datahub: DataHubTarget = field(default_factory=lambda: DataHubTarget(kind="off"))
    report_metadata: ReportMetadata | None = None
    report_checks: ReportChecks | None = None
    launcher_kinds: tuple[str, ...] = ("metaflow",)
    how_to_fill_graph: str = "run a lineage pass after Dagster or Metaflow runs"
    pass_seconds: float = 40.0
    answer_seconds: float = 60.0
    watch_command: tuple[str, ...] = ()
    repair_command: str = "the bridge's command line"
    sinks: tuple[SinkSpec, ...] = (SinkSpec("openlineage"), SinkSpec("datahub"))
    dagster_home: Path | None = None

    @property
    def outbox_path(self) -> Path:
        return self.lineage_dir / "outbox.sqlite"

    @property
    def index_path(self) -> Path:
        return self.lineage_dir / "index.sqlite"

    @property
    def events_file(self) -> Path:
        return self.lineage_dir / "openlineage_events.jsonl"
