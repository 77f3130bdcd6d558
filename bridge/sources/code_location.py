"""Load a code location's asset graph from ``workspace.yaml`` in this process, as Dagster's CLI loads a module.

Each ``load_from`` entry names a ``python_module`` or ``python_file``, an optional ``attribute`` and
``working_directory``, and its ``location_name``; the attribute may be ``Definitions``, a
``@definitions`` function, or a repository.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from dagster import Definitions, RepositoryDefinition

from bridge.sources.dagster import AssetGraph
from bridge.sources.workspace import CodeLocationNotFound, find_location

__all__ = ["CodeLocationNotFound", "find_location", "load_asset_graph"]


def load_asset_graph(workspace_file: Path, location_name: str) -> AssetGraph:
    """The asset graph of ``location_name`` in ``workspace_file``."""
    kind, entry = find_location(workspace_file, location_name)
    base = workspace_file.parent
    working_directory = base / entry.get("working_directory", ".")
    if str(working_directory) not in sys.path:
        sys.path.insert(0, str(working_directory))
    try:
        if kind == "python_module":
            module = importlib.import_module(entry["module_name"])
        else:
            path = base / entry["relative_path"]
            spec = importlib.util.spec_from_file_location(path.stem, path)
            if spec is None or spec.loader is None:  # caught below: CodeLocationNotFound names the location and file
                raise ImportError(f"{path} is not a Python module")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
    except Exception as err:
        msg = f"The code location {location_name} in {workspace_file} failed to load: {err}"
        raise CodeLocationNotFound(msg) from err
    return _graph(getattr(module, entry.get("attribute") or "defs"), location_name)


def _graph(loadable: object, location_name: str) -> AssetGraph:
    if callable(loadable) and not isinstance(loadable, (Definitions, RepositoryDefinition)):
        loadable = loadable()  # a @definitions function
    if isinstance(loadable, Definitions):
        return loadable.resolve_asset_graph()
    if isinstance(loadable, RepositoryDefinition):
        return loadable.asset_graph
    msg = f"The code location {location_name} holds {type(loadable).__name__}, not Definitions"
    raise CodeLocationNotFound(msg)
