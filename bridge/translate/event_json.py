"""A translated event as JSON: the OpenLineage client's own serialization (``Serde.to_json``), in one walk.

``Serde.to_json`` turns the typed event into dictionaries (``attr.asdict``), walks them again to drop
nulls and turn enums, dates and UUIDs into strings, then dumps them with sorted keys. A pass queues
every event it translates, so this does the same in one walk over the typed event: the same rules,
the same bytes (a test holds it to ``Serde.to_json`` on every golden event). The datasets and facets the
translation shares between events are walked once.
"""

from __future__ import annotations

import datetime
import json
import uuid
from enum import Enum
from typing import Any

import attr
from openlineage.client.event_v2 import InputDataset, OutputDataset, RunEvent
from openlineage.client.facet_v2 import BaseFacet

_NAMES: dict[type, tuple[str, ...]] = {}  # each attrs class's field names, looked up once
SHARED = (InputDataset, OutputDataset, BaseFacet)  # what the translation shares between events
_MADE: dict[int, tuple[Any, Any]] = {}  # by identity: the object (kept, so its identity is not reused), its plain form
KEEP_MADE = 8192


def _names(kind: type) -> tuple[str, ...]:
    names = _NAMES.get(kind)
    if names is None:
        names = _NAMES[kind] = tuple(field.name for field in attr.fields(kind))
    return names


def _plain(value: Any) -> Any:
    """``remove_nulls_and_enums(attr.asdict(value))``: an attrs instance, dict, list or tuple as plain JSON values."""
    if value is None or isinstance(value, (str, int, float, bool)) and not isinstance(value, Enum):
        return value
    if isinstance(value, SHARED):
        # The translation builds a dataset or facet once for all the events that name it the same way
        # (bridge.translate.events): its plain form is made once too, while it is remembered here.
        known = _MADE.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        if len(_MADE) >= KEEP_MADE:
            _MADE.clear()
        made = _MADE[id(value)] = (value, _attrs_plain(value))
        return made[1]
    if attr.has(type(value)):
        return _attrs_plain(value)
    return _other_plain(value)


def _attrs_plain(value: Any) -> dict[str, Any]:
    plain = {}
    for name in _names(type(value)):
        item = _plain(getattr(value, name))
        if item is not None:
            plain[name] = item
    return plain


def _other_plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {_plain(key): item for key, item in ((k, _plain(v)) for k, v in value.items()) if item is not None}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = (_plain(item) for item in value if item is not None)
        return [item for item in items if item is not None and item != {}]
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if type(value).__name__ == "int64":  # numpy's, as the client's Serde takes it
        return int(value)
    return value


def event_json(event: RunEvent | dict[str, Any]) -> str:
    """``Serde.to_json(event)`` (a typed event, or one as a dictionary), in one walk."""
    return json.dumps(_plain(event), sort_keys=True, default=lambda o: f"<<non-serializable: {type(o).__qualname__}>>")
