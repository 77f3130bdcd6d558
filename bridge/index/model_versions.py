"""Model versions as their training runs saw them, and what changed between two: pure, over OpenLineage events.

A model version is the ``modelTraining`` facet of the run that trained it; its inputs are what that
run read, at the versions it read them (per-run truth, not the job's union over runs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from bridge.translate.partitions import partitions_in
from bridge.wording import listed, plural, short

# What a model's hyperparameters call the candidate a version is, and the columns of its lineage that are what it
# learned to predict (not features): the defaults; a project names its own (``LineageBridge.model_candidate_param``).
CANDIDATE_PARAM = "name"
TARGETS = ("target",)


class Writer(Protocol):
    """The run that wrote a dataset version, as the lineage index describes it."""

    def describe(self, brief: bool = False) -> str: ...


@dataclass(frozen=True)
class Source:
    """A dataset version at the bottom of a lineage: a source file at its fingerprint."""

    name: str
    version: str | None

    def text(self, brief: bool = False) -> str:
        return f"{self.name} @ {short(self.version) if brief else self.version}" if self.version else self.name


@dataclass(frozen=True)
class PartitionRead:
    """One partition a run read of a table, at the version that wrote it; ``written_by`` (the run that wrote it)
    and ``sources`` (the source files it was built from) come from the lineage index (:func:`with_provenance`)."""

    partition: str
    version: str
    rows: int | None = None
    written_by: Writer | None = None
    sources: tuple[Source, ...] = ()

    def built_from(self, brief: bool = False) -> str:
        return ", ".join(source.text(brief) for source in self.sources) or "no source recorded"

    def to_json(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "version": self.version,
            "rows": self.rows,
            "written_by": self.written_by.describe() if self.written_by else None,
            "sources": [{"name": s.name, "version": s.version} for s in self.sources],
        }


@dataclass(frozen=True)
class Input:
    name: str
    version: str | None
    partitions: tuple[PartitionRead, ...] = ()  # a partitioned table read whole: each partition as written

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.partitions:
            found["partitions"] = [p.to_json() for p in self.partitions]
        return found


@dataclass(frozen=True)
class TrainedVersion:
    """One model version: the run that trained it, what it read, what it learned."""

    version: str
    model: str
    job: str
    run_id: str
    trained_at: str
    inputs: tuple[Input, ...] = ()
    metrics: dict[str, float] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    # Each feature the model learned from, and the input columns (``db.table.column``) it is computed from.
    features: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # What it learned to predict, and the input columns that is computed from.
    targets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    candidate: str | None = None  # which of the flow's candidates this version is (its champion)

    @property
    def input_columns(self) -> set[str]:
        return {column for columns in (*self.features.values(), *self.targets.values()) for column in columns}

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "model": self.model,
            "candidate": self.candidate,
            "trained_by": {"job": self.job, "run_id": self.run_id, "finished": self.trained_at},
            "inputs": [i.to_json() for i in self.inputs],
            "input_columns": sorted(self.input_columns),
            "features": {name: list(columns) for name, columns in self.features.items()},
            "targets": {name: list(columns) for name, columns in self.targets.items()},
            "metrics": self.metrics,
            "params": self.params,
        }


def dataset_label(dataset: dict[str, Any]) -> str:
    """A dataset's catalog name when it has one (``nyc_taxi.raw_weather``), else its OpenLineage name."""
    symlinks = dataset.get("facets", {}).get("symlinks", {}).get("identifiers", [])
    label: str = symlinks[0]["name"] if symlinks else dataset["name"]
    return label


def trained_versions(
    events: Iterable[dict[str, Any]], candidate_param: str = CANDIDATE_PARAM, targets: Iterable[str] = TARGETS
) -> list[TrainedVersion]:
    """Every model version in ``events``, oldest first: each the candidate its hyperparameter ``candidate_param``
    names, learned from the features its model's column lineage names (less the ``targets`` it learned to predict).
    """
    targets = set(targets)
    found: list[TrainedVersion] = []
    for event in events:
        facet = event["run"]["facets"].get("modelTraining")
        if event["eventType"] != "COMPLETE" or not facet:
            continue
        inputs = tuple(sorted((_input(d) for d in event.get("inputs", [])), key=lambda i: i.name))
        columns = _features(event, facet["version"])
        params = dict(facet.get("params", {}))
        found.append(
            TrainedVersion(
                version=facet["version"],
                model=facet["model"],
                job=event["job"]["name"],
                run_id=event["run"]["runId"],
                trained_at=event["eventTime"],
                inputs=inputs,
                metrics=dict(facet.get("metrics", {})),
                params=params,
                features={name: origins for name, origins in columns.items() if name not in targets},
                targets={name: origins for name, origins in columns.items() if name in targets},
                candidate=params.get(candidate_param),
            )
        )
    return sorted(found, key=lambda v: v.trained_at)


def _features(event: dict[str, Any], version: str) -> dict[str, tuple[str, ...]]:
    """The model output's column lineage: each feature and the direct input columns it is computed from."""
    labels = {(d["namespace"], d["name"]): dataset_label(d) for d in (*event.get("inputs", []), *event["outputs"])}
    model = next((d for d in event.get("outputs", []) if _input(d).version == version), None)
    fields = (model or {}).get("facets", {}).get("columnLineage", {}).get("fields", {})
    return {
        feature: tuple(
            sorted(
                f"{labels.get((f['namespace'], f['name']), f['name'])}.{f['field']}"
                for f in spec.get("inputFields", [])
                if any(t.get("type") == "DIRECT" for t in f.get("transformations") or [{"type": "DIRECT"}])
            )
        )
        for feature, spec in sorted(fields.items())
    }


def find_version(versions: list[TrainedVersion], wanted: str) -> TrainedVersion | None:
    """A version by its name or a unique part of it (a Metaflow run id)."""
    exact = [v for v in versions if v.version == wanted]
    if exact:
        return exact[0]
    partial = [v for v in versions if wanted in v.version]
    return partial[0] if len(partial) == 1 else None


def learned(version: TrainedVersion, brief: bool = False) -> str:
    """Which candidate a version is and the features it learned from: what ``model`` and ``diff`` both say of it.

    ``brief`` sums up a long list of features; the JSON has every one."""
    names = sorted(version.features)
    features = listed(names, "feature", most=12) if brief else ", ".join(names)
    candidate = f"candidate {version.candidate}" if version.candidate else "candidate not recorded"
    return f"{candidate}; {plural(len(names), 'feature')}" + (f": {features}" if names else "")


def _shown(brief: bool) -> Callable[[str | None], str]:
    def shown(value: str | None) -> str:
        if value is None:
            return "unknown"
        return short(value) if brief else value

    return shown


def differences(before: TrainedVersion, after: TrainedVersion, brief: bool = False) -> list[str]:
    """What changed from ``before`` to ``after``, in sentences: first in short, then the candidates and their
    features, inputs added and removed, input versions, input columns, metrics and parameters.

    ``brief`` (for a person) shortens versions and run ids; the JSON's sentences carry them whole."""
    shown = _shown(brief)
    old = {i.name: i.version for i in before.inputs}
    new = {i.name: i.version for i in after.inputs}
    started, stopped = sorted(new.keys() - old.keys()), sorted(old.keys() - new.keys())
    moved = sorted(name for name in old.keys() & new.keys() if old[name] != new[name])
    lines = [f"{before.version}: {learned(before, brief)}.", f"{after.version}: {learned(after, brief)}."]
    lines += [
        f"{after.version} started reading {n} (version {shown(new[n])}); {before.version} did not read it."
        for n in started
    ]
    lines += [
        f"{after.version} stopped reading {n}, which {before.version} read (version {shown(old[n])})." for n in stopped
    ]
    partitions: dict[str, list[str]] = {"replaced": [], "added": [], "removed": []}
    inputs_before, inputs_after = {i.name: i for i in before.inputs}, {i.name: i for i in after.inputs}
    for name in sorted(old.keys() & new.keys()):
        how = f"read at version {shown(old[name])}, now at version" if name in moved else "both read version"
        lines.append(f"{name}: {how} {shown(new[name])}.")
        if bool(inputs_before[name].partitions) != bool(inputs_after[name].partitions):
            unrecorded = before if not inputs_before[name].partitions else after
            lines.append(f"  {unrecorded.version} has no record of the partitions it read of {name}.")
        elif inputs_before[name].partitions:
            partition_lines, changed = partition_changes(inputs_before[name], inputs_after[name], brief)
            lines += [f"  {line}" for line in partition_lines]
            for how_changed, names in changed.items():
                partitions[how_changed] += names
    # A table read whole moves version whenever any partition is written: its partitions say what changed.
    moved = [name for name in moved if not (inputs_before[name].partitions and inputs_after[name].partitions)]
    added = sorted(after.input_columns - before.input_columns)
    removed = sorted(before.input_columns - after.input_columns)
    if added:
        lines.append(f"{after.version} learned from new input columns: {', '.join(added)}.")
    if removed:
        lines.append(f"{after.version} no longer learned from: {', '.join(removed)}.")
    new_features = sorted(after.features.keys() - before.features.keys())
    gone_features = sorted(before.features.keys() - after.features.keys())
    if new_features:
        lines.append(f"New features: {', '.join(new_features)}.")
    if gone_features:
        lines.append(f"Features no longer used: {', '.join(gone_features)}.")
    metrics = sorted(before.metrics.keys() | after.metrics.keys())
    lines += [_metric_line(metric, before.metrics.get(metric), after.metrics.get(metric)) for metric in metrics]
    # The parameter that names the candidate is said above, as the candidate.
    params = sorted(
        p
        for p in before.params.keys() | after.params.keys()
        if before.params.get(p) != after.params.get(p)
        and not (before.params.get(p) == before.candidate and after.params.get(p) == after.candidate)
    )
    lines += [f"parameter {p}: {_value(before.params.get(p))} -> {_value(after.params.get(p))}." for p in params]
    short_lines = [f"candidate {before.candidate} -> {after.candidate}"] if before.candidate != after.candidate else []
    short_lines += [f"started reading {name}" for name in started] + [f"stopped reading {name}" for name in stopped]
    short_lines += [
        f"{_counted(len(names), 'partition', how)} ({', '.join(names)})" for how, names in partitions.items() if names
    ]
    short_lines += [
        _counted(len(moved), "input", "at a new version"),
        _counted(len(added) + len(removed), "input column"),
        _counted(len(new_features), "new feature", ""),
        _counted(len(gone_features), "feature", "no longer used"),
        _counted(sum(before.metrics.get(m) != after.metrics.get(m) for m in metrics), "metric"),
        _counted(len(params), "parameter"),
    ]
    said = [part for part in short_lines if part]
    return [
        f"In short: {'; '.join(said)}." if said else "No difference in inputs, versions, columns or metrics.",
        *lines,
    ]


def _value(value: str | None) -> str:
    return "not set" if value is None else value


def _metric_line(metric: str, was: float | None, now: float | None) -> str:
    if was == now:
        return f"{metric}: {now:g}, unchanged."
    if was is not None and now is not None:
        return f"{metric}: {was:g} -> {now:g} {now - was:+.4g}" + (f" ({(now - was) / was:+.1%})." if was else ".")
    return f"{metric}: {_number(was)} -> {_number(now)}."


def _number(value: float | None) -> str:
    return "not recorded" if value is None else f"{value:g}"


def _counted(count: int, noun: str, what: str = "changed") -> str:
    """``2 metrics changed``; empty for none."""
    if not count:
        return ""
    return plural(count, noun) + (f" {what}" if what else "")


def _input(dataset: dict[str, Any]) -> Input:
    parts = tuple(PartitionRead(p.partition, p.version, p.rows) for p in partitions_in(dataset))
    return Input(dataset_label(dataset), dataset.get("facets", {}).get("version", {}).get("datasetVersion"), parts)


# Who wrote a dataset version and the source versions it was built from: (the writing run; sources).
Provenance = Callable[[str, str], tuple[Writer | None, tuple[Source, ...]]]


def with_provenance(version: TrainedVersion, provenance: Provenance) -> TrainedVersion:
    """``version`` with each partition it read traced to the run that wrote it and its source files."""
    inputs = []
    for read in version.inputs:
        parts = []
        for part in read.partitions:
            written_by, sources = provenance(read.name, part.version)
            parts.append(replace(part, written_by=written_by, sources=sources))
        inputs.append(replace(read, partitions=tuple(parts)))
    return replace(version, inputs=tuple(inputs))


def _by_partition(read: Input) -> dict[str, tuple[PartitionRead, ...]]:
    grouped: dict[str, list[PartitionRead]] = {}
    for part in read.partitions:
        grouped.setdefault(part.partition, []).append(part)
    return {name: tuple(sorted(parts, key=lambda p: p.version)) for name, parts in grouped.items()}


def _at(parts: tuple[PartitionRead, ...], brief: bool) -> str:
    """``version V (from SOURCES)`` for each version of a partition."""
    shown = _shown(brief)
    return "; ".join(f"version {shown(p.version)} (from {p.built_from(brief)})" for p in parts)


def partition_changes(before: Input, after: Input, brief: bool = False) -> tuple[list[str], dict[str, list[str]]]:
    """Per partition of one input read by both versions: same, replaced, added or removed; and the partitions
    that changed, by how (for the summary)."""
    old, new = _by_partition(before), _by_partition(after)
    lines: list[str] = []
    changed: dict[str, list[str]] = {"replaced": [], "added": [], "removed": []}
    for partition in sorted(old.keys() | new.keys()):
        was, now = old.get(partition), new.get(partition)
        where = f"{after.name} [{partition}]"
        if was and now and [p.version for p in was] == [p.version for p in now]:
            lines.append(f"{where}: same, {_at(now, brief)}.")
        elif was and now:
            changed["replaced"].append(where)
            writers = "; ".join(sorted({p.written_by.describe(brief) for p in now if p.written_by}))
            by = f", written by {writers}" if writers else ""
            lines.append(f"{where}: replaced: {_at(was, brief)} -> {_at(now, brief)}{by}.")
        elif now:
            changed["added"].append(where)
            lines.append(f"{where}: added, {_at(now, brief)}.")
        elif was:
            changed["removed"].append(where)
            lines.append(f"{where}: removed: {_at(was, brief)} was read before, not now.")
    return lines, changed
