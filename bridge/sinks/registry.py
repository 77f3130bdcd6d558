"""The sink kinds, built-in and installed, and building a pass's sinks from configuration.

A kind is a :class:`~bridge.sinks.contract.Sink` subclass. Built-in kinds are named here as
``module:Class`` and imported only when used, so a pass loads no SDK it does not send to. Another
package adds a kind through the ``lineage_bridge.sinks`` entry-point group, the way DataHub
registers its sinks::

    [project.entry-points."lineage_bridge.sinks"]
    my-catalog = "my_package.lineage:MyCatalogSink"
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any

from pydantic import ValidationError

from bridge.config import SinkSpec
from bridge.redaction import redact
from bridge.sinks.contract import Sink, SinkConfig, SinkContext, SinkMisconfigured

ENTRY_POINT_GROUP = "lineage_bridge.sinks"
BUILT_IN = {
    "openlineage": "bridge.sinks.openlineage:OpenLineageSink",
    "datahub-lite": "bridge.sinks.datahub:LiteSink",
    "datahub-rest": "bridge.sinks.datahub:RestSink",
    "datahub-file": "bridge.sinks.datahub:FileSink",
    "object-store": "bridge.sinks.object_store:ObjectStoreSink",
    "sqlite-table": "bridge.sinks.sqlite_table:SqliteTableSink",
}


class UnknownSinkKind(SinkMisconfigured):
    """No built-in or installed sink has this kind."""


def kinds() -> dict[str, str]:
    """Every kind that can be configured, with where its class lives."""
    return _installed() | BUILT_IN  # a package cannot replace a built-in kind


@cache
def _installed() -> dict[str, str]:
    """The kinds installed packages register, read once per process: finding them reads every installed
    package's metadata (about ten milliseconds, most of an idle pass when the watcher ran it twice a pass)."""
    return {point.name: point.value for point in entry_points(group=ENTRY_POINT_GROUP)}


def sink_class(kind: str) -> type[Sink[Any]]:
    where = kinds().get(kind)
    if where is None:
        known = ", ".join(sorted(kinds()))
        msg = f"no lineage sink of kind {kind!r}: use one of {known}, or install a package that registers it"
        raise UnknownSinkKind(msg)
    module, _, name = where.partition(":")
    found: type[Sink[Any]] = getattr(import_module(module), name)
    return found


def config_of(spec: SinkSpec, kind: type[Sink[Any]] | None = None) -> SinkConfig:
    """``spec``'s options as its kind's typed configuration; :class:`SinkMisconfigured` names the option."""
    config_class = (kind or sink_class(spec.kind)).Config
    if isinstance(spec.options, config_class):
        return spec.options
    try:
        return config_class.model_validate(dict(spec.options))
    except ValidationError as err:
        problems = "; ".join(
            f"option {'.'.join(str(part) for part in error['loc']) or '(all)'}: {error['msg']}"
            for error in err.errors(include_url=False, include_input=False)
        )
        raise SinkMisconfigured(redact(problems)) from None


def build_sink(spec: SinkSpec, context: SinkContext) -> Sink[Any]:
    kind = sink_class(spec.kind)
    return kind(config_of(spec, kind), context)
