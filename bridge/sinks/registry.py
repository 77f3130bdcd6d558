"""The sink kinds, built-in and installed, and building a pass's sinks from configuration.

A kind is a factory ``(spec, context) -> Sink | None`` (``None``: configured off). Built-in kinds are
named here as ``module:function`` and imported only when used, so a pass loads no SDK it does not
send to. Another package adds a kind through the ``lineage_bridge.sinks`` entry-point group, the way
DataHub registers its sinks::

    [project.entry-points."lineage_bridge.sinks"]
    my-catalog = "my_package.lineage:my_catalog_sink"
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib import import_module
from importlib.metadata import entry_points

from bridge.config import SinkSpec
from bridge.errors import BridgeError
from bridge.sinks.contract import Sink, SinkContext

ENTRY_POINT_GROUP = "lineage_bridge.sinks"
BUILT_IN = {
    "openlineage": "bridge.sinks.openlineage:openlineage_sink",
    "datahub": "bridge.sinks.datahub:datahub_sink_of",
    "object-store": "bridge.sinks.object_store:object_store_sink",
}
Factory = Callable[[SinkSpec, SinkContext], Sink | None]


class UnknownSinkKind(ValueError, BridgeError):
    """No built-in or installed sink has this kind."""


def kinds() -> dict[str, str]:
    """Every kind that can be configured, with where its factory lives."""
    return _installed() | BUILT_IN  # a package cannot replace a built-in kind


@cache
def _installed() -> dict[str, str]:
    """The kinds installed packages register, read once per process: finding them reads every installed
    package's metadata (about ten milliseconds, most of an idle pass when the watcher ran it twice a pass)."""
    return {point.name: point.value for point in entry_points(group=ENTRY_POINT_GROUP)}


def factory(kind: str) -> Factory:
    where = kinds().get(kind)
    if where is None:
        known = ", ".join(sorted(kinds()))
        msg = f"no lineage sink of kind {kind!r}: use one of {known}, or install a package that registers it"
        raise UnknownSinkKind(msg)
    module, _, name = where.partition(":")
    built: Factory = getattr(import_module(module), name)
    return built


def build_sink(spec: SinkSpec, context: SinkContext) -> Sink | None:
    return factory(spec.kind)(spec, context)
