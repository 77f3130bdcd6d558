"""The sources the code location ingests: one line each, naming the module that declares it as ``SOURCE``."""

from __future__ import annotations

from functools import cache
from importlib import import_module

from forecast_assets.source_specs.spec import SourceSpec
from taxi_core.errors import PipelineError

SOURCES = (
    "yellow_trips",
    "green_trips",
    "noaa_weather",
    "taxi_zones",
)


class SourceNameTaken(PipelineError):
    """Two registered sources share a name, and with it a base-URL setting and a staging folder."""


class NoSuchSource(KeyError, PipelineError):
    """No registered source has the name asked for."""


@cache
def registered_sources() -> tuple[SourceSpec, ...]:
    """Every registered source's declaration, imported on first use (in registration order)."""
    sources = tuple(import_module(f"{__package__}.{module}").SOURCE for module in SOURCES)
    names = [source.name for source in sources]
    if len(set(names)) != len(names):
        twice = sorted({name for name in names if names.count(name) > 1})
        msg = (
            f"Two registered sources are named {', '.join(twice)} (in {__name__}.SOURCES): each name is a source's "
            "base-URL setting and staging folder, so give each declaration's SourceSpec a name of its own"
        )
        raise SourceNameTaken(msg)
    return sources


def source_named(name: str) -> SourceSpec:
    for source in registered_sources():
        if source.name == name:
            return source
    known = ", ".join(source.name for source in registered_sources())
    raise NoSuchSource(f"No registered source is named {name!r}; the sources are {known} ({__name__}.SOURCES)")
