"""The sources the code location ingests: one line each, naming the module that declares it as ``SOURCE``.

Another package adds a source through the ``taxi_forecast.sources`` entry-point group, naming its declaration,
with no edit here (as lineage sinks and forecast candidates are added)::

    [project.entry-points."taxi_forecast.sources"]
    fhvhv_trip = "my_package.high_volume_trips:SOURCE"
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from importlib.metadata import entry_points

from forecast_assets.source_specs.spec import SourceSpec
from taxi_core.errors import PipelineError

ENTRY_POINT_GROUP = "taxi_forecast.sources"
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


class NotASource(TypeError, PipelineError):
    """An installed entry point that names something other than a source's declaration."""


@cache
def registered_sources() -> tuple[SourceSpec, ...]:
    """Every registered source's declaration, imported on first use: the built-in ones in registration order, then
    those installed packages register."""
    sources = tuple(import_module(f"{__package__}.{module}").SOURCE for module in SOURCES) + _installed()
    names = [source.name for source in sources]
    if len(set(names)) != len(names):
        twice = sorted({name for name in names if names.count(name) > 1})
        msg = (
            f"Two registered sources are named {', '.join(twice)} (in {__name__}.SOURCES or the {ENTRY_POINT_GROUP} "
            "entry points): each name is a source's base-URL setting and staging folder, so give each declaration's "
            "SourceSpec a name of its own"
        )
        raise SourceNameTaken(msg)
    return sources


def _installed() -> tuple[SourceSpec, ...]:
    found = []
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda point: point.name):
        source = point.load()
        if not isinstance(source, SourceSpec):
            msg = (
                f"The entry point {point.name} = {point.value} ({ENTRY_POINT_GROUP}) names a "
                f"{type(source).__name__}, not a source's declaration: point it at the module's SourceSpec"
            )
            raise NotASource(msg)
        found.append(source)
    return tuple(found)


def source_named(name: str) -> SourceSpec:
    for source in registered_sources():
        if source.name == name:
            return source
    known = ", ".join(source.name for source in registered_sources())
    raise NoSuchSource(f"No registered source is named {name!r}; the sources are {known} ({__name__}.SOURCES)")
