"""The sources the code location ingests: one line each, naming the module that declares it as ``SOURCE``."""

from __future__ import annotations

from functools import cache
from importlib import import_module

from forecast_assets.source_specs.spec import SourceSpec

SOURCES = (
    "yellow_trips",
    "noaa_weather",
    "taxi_zones",
)


@cache
def registered_sources() -> tuple[SourceSpec, ...]:
    """Every registered source's declaration, imported on first use (in registration order)."""
    sources = tuple(import_module(f"{__package__}.{module}").SOURCE for module in SOURCES)
    names = [source.name for source in sources]
    if len(set(names)) != len(names):
        raise ValueError(f"Two registered sources share a name in {names}: each names its own base-URL setting")
    return sources


def source_named(name: str) -> SourceSpec:
    for source in registered_sources():
        if source.name == name:
            return source
    raise KeyError(f"No registered source is named {name!r}: see {__name__}.SOURCES")
