"""Writing DataHub Lite through the SDK, without the work its write repeats for every aspect.

Imported only by a pass that writes Lite (it loads DataHub's SDK).

- Lite's ``write`` asks each proposal for itself as an object (``to_obj(simplified_structure=True)``)
  and reads two parts of it: the aspect's JSON and the system metadata. The SDK builds that object
  by serializing the aspect, then the whole proposal (validated again against the Avro schema), then
  parsing the aspect back: :class:`OnceSerialized` gives the same two parts from one serialization.
- Lite's ``close`` rebuilds its browse index from every entity of the graph, so a pass cost grows with
  the whole history. Each write already adds its aspect's own edges; :func:`reindex_written` adds the
  entity-level ones (browse paths, platform and container) for the entities this pass wrote, as the
  full rebuild does for each.
- Runs repeat the same aspects (a job's, a dataset's): an aspect written again the same way reuses the
  JSON serialized the first time.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import fields
from typing import Any

from datahub.emitter.aspect import ASPECT_MAP
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.emitter.serialization_helper import post_json_transform, pre_json_transform
from datahub.lite.sqlite_lite import SqliteLite
from datahub.metadata.schema_classes import (
    ContainerClass,
    DataPlatformInstanceClass,
    SubTypesClass,
    SystemMetadataClass,
    _Aspect,
)


class OnceSerialized(MetadataChangeProposalWrapper):
    """A proposal whose simplified object form serializes the aspect once (see the module's docstring).

    The aspects of one event share one system metadata (the event's time): serialized once per event,
    each proposal gets its own copy (Lite adds the aspect's version to it).
    """

    @classmethod
    def of(cls, mcp: MetadataChangeProposalWrapper) -> OnceSerialized:
        return cls(**{field.name: getattr(mcp, field.name) for field in fields(mcp)})

    def to_obj(self, tuples: bool = False, simplified_structure: bool = False) -> dict[str, Any]:
        if tuples or not simplified_structure or self.aspect is None or self.entityKeyAspect is not None:
            obj: dict[str, Any] = super().to_obj(tuples, simplified_structure)
            return obj
        obj = {
            "entityType": self.entityType,
            "entityUrn": self.entityUrn,
            "changeType": self.changeType,
            "aspectName": self.aspectName,
            "aspect": {"json": _aspect_json(self.aspect)},
        }
        if self.systemMetadata is not None:
            obj["systemMetadata"] = _serialized_system(self.systemMetadata)
        return obj


_ASPECTS: dict[str, Any] = {}  # an aspect's JSON by its representation: runs repeat a job's, a dataset's aspects
KEEP_ASPECTS = 4096


def _aspect_json(aspect: _Aspect) -> Any:
    """The aspect's JSON as the SDK makes it; an aspect written again the same way (its representation names its
    class and every value with its type) takes the JSON made the first time. Lite only reads it."""
    key = repr(aspect)
    found = _ASPECTS.get(key)
    if found is None:
        if len(_ASPECTS) >= KEEP_ASPECTS:
            _ASPECTS.clear()
        found = _ASPECTS[key] = pre_json_transform(aspect.to_obj())
    return found


_last_system: list[tuple[SystemMetadataClass, dict[str, Any]]] = []  # the latest system metadata serialized


def _serialized_system(system: SystemMetadataClass) -> dict[str, Any]:
    """``system`` as an object, serialized once while the same object comes again (the aspects of one event); each
    caller gets its own copy of it and of its properties, which Lite adds the aspect's version to."""
    if not _last_system or _last_system[0][0] is not system:
        _last_system[:] = [(system, system.to_obj())]
    serialized = _last_system[0][1]
    copied = dict(serialized)
    if isinstance(serialized.get("properties"), dict):
        copied["properties"] = dict(serialized["properties"])
    return copied


# What Lite's entity-level hook reads of an entity, by the aspect name it looks each up by.
_BROWSE = [next(name for name, kind in ASPECT_MAP.items() if kind is wanted) for wanted in
           (ContainerClass, SubTypesClass, DataPlatformInstanceClass)]  # fmt: skip


def reindex_written(lite: SqliteLite, urns: Iterable[str]) -> None:
    """The entity-level browse edges of the entities ``urns``, from the aspects Lite's hook reads of each."""
    marks = ",".join("?" * len(_BROWSE))
    for urn in sorted(urns):
        connection = lite.sqlite_client
        if not connection.execute("SELECT 1 FROM metadata_aspect_v2 WHERE urn = ? AND version = 0", (urn,)).fetchone():
            continue
        rows = connection.execute(
            f"SELECT aspect_name, metadata FROM metadata_aspect_v2 WHERE urn = ? AND version = 0 "
            f"AND aspect_name IN ({marks})",
            (urn, *_BROWSE),
        ).fetchall()
        aspects = {
            name: ASPECT_MAP[name].from_obj(post_json_transform(json.loads(metadata))) for name, metadata in rows
        }
        lite.global_post_update_hook(urn, aspects)
