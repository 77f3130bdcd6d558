"""Model versions as their training runs saw them, and what changed between two: pure, over OpenLineage events.

A model version is the ``modelTraining`` facet of the run that trained it; its inputs are what that
run read, at the versions it read them (per-run truth, not the job's union over runs).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


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

    def to_json(self) -> dict:
        return {
            "version": self.version,
            "model": self.model,
            "trained_by": {"job": self.job, "run_id": self.run_id, "finished": self.trained_at},
            "inputs": [{"name": i.name, "version": i.version} for i in self.inputs],
            "metrics": self.metrics,
            "params": self.params,
        }


def dataset_label(dataset: dict) -> str:
    """A dataset's catalog name when it has one (``nyc_taxi.raw_weather``), else its OpenLineage name."""
    symlinks = dataset.get("facets", {}).get("symlinks", {}).get("identifiers", [])
    return symlinks[0]["name"] if symlinks else dataset["name"]


def trained_versions(events: Iterable[dict]) -> list[TrainedVersion]:
    """Every model version in ``events``, oldest first."""
    found = []
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
            )
        )
    return sorted(found, key=lambda v: v.trained_at)


def find_version(versions: list[TrainedVersion], wanted: str) -> TrainedVersion | None:
    """A version by its name or a unique part of it (a Metaflow run id)."""
    exact = [v for v in versions if v.version == wanted]
    if exact:
        return exact[0]
    partial = [v for v in versions if wanted in v.version]
    return partial[0] if len(partial) == 1 else None


def differences(before: TrainedVersion, after: TrainedVersion) -> list[str]:
    """What changed from ``before`` to ``after``, in sentences: inputs added and removed, input versions, metrics."""
    old = {i.name: i.version for i in before.inputs}
    new = {i.name: i.version for i in after.inputs}
    lines = []
    for name in sorted(new.keys() - old.keys()):
        lines.append(f"{after.version} started reading {name} (version {new[name]}); {before.version} did not read it.")
    for name in sorted(old.keys() - new.keys()):
        lines.append(f"{after.version} stopped reading {name}, which {before.version} read (version {old[name]}).")
    for name in sorted(old.keys() & new.keys()):
        if old[name] != new[name]:
            lines.append(f"{name}: read at version {old[name]}, now at version {new[name]}.")
        else:
            lines.append(f"{name}: both read version {new[name]}.")
    for metric in sorted(before.metrics.keys() | after.metrics.keys()):
        was, now = before.metrics.get(metric), after.metrics.get(metric)
        if was is not None and now is not None:
            change = f"{now - was:+.4g}" + (f" ({(now - was) / was:+.1%})" if was else "")
            lines.append(f"{metric}: {was:g} -> {now:g} {change}.")
        else:
            lines.append(f"{metric}: {was} -> {now}.")
    for param in sorted(before.params.keys() | after.params.keys()):
        if before.params.get(param) != after.params.get(param):
            lines.append(f"parameter {param}: {before.params.get(param)} -> {after.params.get(param)}.")
    return lines


def run_tree(events: list[dict], version: TrainedVersion) -> list[tuple[str, list[Input], list[Input]]]:
    """The steps of the run that trained ``version``, in order, each with what it read and wrote (and versions)."""
    steps = {}
    for event in events:
        parent = event["run"]["facets"].get("parent", {}).get("run", {}).get("runId")
        if parent != version.run_id or event["eventType"] != "COMPLETE":
            continue
        steps[event["run"]["runId"]] = (
            event["eventTime"],
            event["job"]["name"],
            [_input(d) for d in event.get("inputs", [])],
            [_input(d) for d in event.get("outputs", [])],
        )
    return [(job, reads, writes) for _, job, reads, writes in sorted(steps.values())]


def _input(dataset: dict) -> Input:
    return Input(dataset_label(dataset), dataset.get("facets", {}).get("version", {}).get("datasetVersion"))
