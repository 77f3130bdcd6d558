"""What one load of an Iceberg table's metadata answers, whoever loaded it.

Two readings satisfy :class:`TableReading`: Spark's catalog (:mod:`table_state`, for the steps that write) and
pyiceberg (:mod:`metadata_reading`, for deciding before any JVM starts whether there is anything to write). The
readings of snapshots in :mod:`snapshots` are written once, over this protocol.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: int
    parent_id: int | None
    summary: dict[str, str]  # the snapshot's summary, as the ``snapshots`` metadata table shows it (no operation)


class TableReading(Protocol):
    def ref(self, name: str) -> int | None:
        """The snapshot the branch or tag ``name`` points at; None if there is no such ref."""
        ...

    def branches(self, prefix: str = "") -> list[str]:
        """The table's branches whose names start with ``prefix``, sorted."""
        ...

    def snapshot(self, snapshot_id: int) -> Snapshot | None: ...

    def schema_json(self) -> str:
        """The current schema as Iceberg's JSON."""
        ...

    def property(self, key: str) -> str | None:
        """A table property, as written."""
        ...


def column_docs(reading: TableReading) -> dict[str, str | None]:
    """Each top-level column's comment (its Iceberg ``doc``)."""
    return {field["name"]: field.get("doc") for field in json.loads(reading.schema_json())["fields"]}


def column_types(reading: TableReading) -> dict[str, str]:
    """Each top-level column's Iceberg type, as its JSON names it (``timestamptz``, ``long``...)."""
    return {field["name"]: str(field["type"]) for field in json.loads(reading.schema_json())["fields"]}
