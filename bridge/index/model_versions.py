"""Model versions as their training runs saw them, and what changed between two: pure, over OpenLineage events.

A model version is the ``modelTraining`` facet of the run that trained it; its inputs are what that
run read, at the versions it read them (per-run truth, not the job's union over runs).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Input:
    name: str
    version: str | None


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

    @property
    def input_columns(self) -> set[str]:
        return {column for columns in self.features.values() for column in columns}

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "model": self.model,
            "trained_by": {"job": self.job, "run_id": self.run_id, "finished": self.trained_at},
            "inputs": [{"name": i.name, "version": i.version} for i in self.inputs],
            "input_columns": sorted(self.input_columns),
            "features": {name: list(columns) for name, columns in self.features.items()},
            "metrics": self.metrics,
            "params": self.params,
        }


def dataset_label(dataset: dict[str, Any]) -> str:
    """A dataset's catalog name when it has one (``nyc_taxi.raw_weather``), else its OpenLineage name."""
    symlinks = dataset.get("facets", {}).get("symlinks", {}).get("identifiers", [])
    label: str = symlinks[0]["name"] if symlinks else dataset["name"]
    return label


def trained_versions(events: Iterable[dict[str, Any]]) -> list[TrainedVersion]:
    """Every model version in ``events``, oldest first."""
    found: list[TrainedVersion] = []
    for event in events:
        facet = event["run"]["facets"].get("modelTraining")
        if event["eventType"] != "COMPLETE" or not facet:
            continue
        inputs = tuple(
            sorted(
                (Input(dataset_label(d), d.get("facets", {}).get("version", {}).get("datasetVersion"))
                 for d in event.get("inputs", [])),
                key=lambda i: i.name,
            )
        )  # fmt: skip
        found.append(
            TrainedVersion(
                version=facet["version"],
                model=facet["model"],
                job=event["job"]["name"],
                run_id=event["run"]["runId"],
                trained_at=event["eventTime"],
                inputs=inputs,
                metrics=dict(facet.get("metrics", {})),
                params=dict(facet.get("params", {})),
                features=_features(event, facet["version"]),
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


def differences(before: TrainedVersion, after: TrainedVersion) -> list[str]:
    """What changed from ``before`` to ``after``, in sentences: first in short, then inputs added and removed, input
    versions, input columns, features, metrics and parameters."""
    old = {i.name: i.version for i in before.inputs}
    new = {i.name: i.version for i in after.inputs}
    started, stopped = sorted(new.keys() - old.keys()), sorted(old.keys() - new.keys())
    moved = sorted(name for name in old.keys() & new.keys() if old[name] != new[name])
    lines = [
        f"{after.version} started reading {n} (version {new[n]}); {before.version} did not read it." for n in started
    ]
    lines += [f"{after.version} stopped reading {n}, which {before.version} read (version {old[n]})." for n in stopped]
    for name in sorted(old.keys() & new.keys()):
        how = f"read at version {old[name]}, now at version" if name in moved else "both read version"
        lines.append(f"{name}: {how} {new[name]}.")
    added = sorted(after.input_columns - before.input_columns)
    removed = sorted(before.input_columns - after.input_columns)
    if added:
        lines.append(f"{after.version} learned from new input columns: {', '.join(added)}.")
    if removed:
        lines.append(f"{after.version} no longer learned from: {', '.join(removed)}.")
    new_features = sorted(after.features.keys() - before.features.keys())
    if new_features:
        lines.append(f"New features: {', '.join(new_features)}.")
    metrics = sorted(before.metrics.keys() | after.metrics.keys())
    lines += [_metric_line(metric, before.metrics.get(metric), after.metrics.get(metric)) for metric in metrics]
    params = sorted(
        p for p in before.params.keys() | after.params.keys() if before.params.get(p) != after.params.get(p)
    )
    lines += [f"parameter {p}: {before.params.get(p)} -> {after.params.get(p)}." for p in params]
    short = [f"started reading {name}" for name in started] + [f"stopped reading {name}" for name in stopped]
    short += [
        _counted(len(moved), "input", "at a new version"),
        _counted(len(added) + len(removed), "input column"),
        _counted(len(new_features), "new feature", ""),
        _counted(sum(before.metrics.get(m) != after.metrics.get(m) for m in metrics), "metric"),
        _counted(len(params), "parameter"),
    ]
    said = [part for part in short if part]
    return [
        f"In short: {'; '.join(said)}." if said else "No difference in inputs, versions, columns or metrics.",
        *lines,
    ]


def _metric_line(metric: str, was: float | None, now: float | None) -> str:
    if was == now:
        return f"{metric}: {now:g}, unchanged."
    if was is not None and now is not None:
        return f"{metric}: {was:g} -> {now:g} {now - was:+.4g}" + (f" ({(now - was) / was:+.1%})." if was else ".")
    return f"{metric}: {was} -> {now}."


def _counted(count: int, noun: str, what: str = "changed") -> str:
    """``2 metrics changed``; empty for none."""
    if not count:
        return ""
    return f"{count} {noun}{'s' if count > 1 else ''}" + (f" {what}" if what else "")


def _input(dataset: dict[str, Any]) -> Input:
    return Input(dataset_label(dataset), dataset.get("facets", {}).get("version", {}).get("datasetVersion"))
