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
from datahub.metadata.schema_classes import SystemMetadataClass


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
            "aspect": {"json": pre_json_transform(self.aspect.to_obj())},
        }
        if self.systemMetadata is not None:
            obj["systemMetadata"] = json.loads(_serialized_system(self.systemMetadata))
        return obj


_last_system: list[tuple[SystemMetadataClass, str]] = []  # the latest system metadata serialized, and its JSON


def _serialized_system(system: SystemMetadataClass) -> str:
    """The JSON of ``system``, serialized once while the same object comes again (the aspects of one event)."""
    if _last_system and _last_system[0][0] is system:
        return _last_system[0][1]
    serialized = json.dumps(system.to_obj())
    _last_system[:] = [(system, serialized)]
    return serialized


def reindex_written(lite: SqliteLite, urns: Iterable[str]) -> None:
    """The entity-level browse edges of the entities ``urns``, from every aspect Lite holds of each."""
    for urn in sorted(urns):
        rows = lite.sqlite_client.execute(
            "SELECT aspect_name, metadata FROM metadata_aspect_v2 WHERE urn = ? AND version = 0 ORDER BY aspect_name",
            (urn,),
        ).fetchall()
        aspects = {
            name: ASPECT_MAP[name].from_obj(post_json_transform(json.loads(metadata))) for name, metadata in rows
        }
        if aspects:
            lite.global_post_update_hook(urn, aspects)
