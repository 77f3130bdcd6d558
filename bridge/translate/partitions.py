"""The partitions a run read of a table version, each at the version that wrote it. Pure.

OpenLineage names a dataset per table, so a reader of many partitions reads one dataset; which
partitions, and at which versions, ride on that input as two facets: the official ``subset`` facet
(a partition condition naming each partition and its dimensions), which any consumer understands,
and ``partitionVersions`` (schema in ``bridge/spec``), which gives each partition the version that
wrote it, since the spec has no place for that. This module reads them back from an event's JSON
(the lineage index imports no OpenLineage client); :mod:`bridge.translate.events` builds them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PartitionVersion:
    """One partition of a table version and one version (snapshot) that wrote files into it.

    ``partition`` is the table format's name for it (``pickup_hour_month=2024-12``), ``dimensions``
    each partition field's value as a person reads it, ``rows`` the rows of those files. A partition
    written by several snapshots (appended twice) appears once per snapshot.
    """

    partition: str
    version: str
    rows: int | None = None  # unknown when the reader did not count them
    dimensions: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "version": self.version,
            "rows": self.rows,
            "dimensions": dict(self.dimensions),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PartitionVersion:
        dimensions = data.get("dimensions") or {}
        return cls(
            str(data["partition"]), str(data["version"]), _count(data.get("rows")), tuple(sorted(dimensions.items()))
        )


def _count(value: Any) -> int | None:
    return None if value is None else int(value)


def in_order(partitions: Iterable[PartitionVersion]) -> list[PartitionVersion]:
    """By partition, then version."""
    return sorted(partitions, key=lambda p: (p.partition, p.version))


def partitions_in(dataset: dict[str, Any]) -> list[PartitionVersion]:
    """The partitions an input (as JSON) says were read, each at the version that wrote it."""
    facets = dataset.get("inputFacets", {})
    dimensions = {
        p.get("identifier"): tuple(sorted((p.get("dimensions") or {}).items()))
        for p in facets.get("subset", {}).get("inputCondition", {}).get("partitions", [])
    }
    return [
        PartitionVersion(p["identifier"], str(p["version"]), _count(p.get("rows")), dimensions.get(p["identifier"], ()))
        for p in facets.get("partitionVersions", {}).get("partitions", [])
    ]
