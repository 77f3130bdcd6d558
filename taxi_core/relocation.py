"""Absolute paths a record holds into a folder that was copied or moved, turned into paths where it is now.

Iceberg's metadata and Metaflow's records name files by absolute path, spelled three ways: a plain path
(``/a/b``), Hadoop's URI (``file:/a/b``, Spark's) or a full URI (``file:///a/b``, pyiceberg's, percent-encoded
as ``Path.as_uri`` writes it). A :class:`Move` turns each spelling under the old folder into the same spelling
under the new one, and leaves everything else as it is.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, unquote

FULL_URI, HADOOP_URI = "file://", "file:"


@dataclass(frozen=True)
class Move:
    """The folder records name (``old``) and where that folder is now (``new``), both absolute paths."""

    old: str
    new: str

    def _spellings(self) -> Iterator[tuple[str, str]]:
        for scheme in (FULL_URI, HADOOP_URI, ""):
            yield scheme + self.old, scheme + self.new
        if quote(self.old) != self.old:
            yield FULL_URI + quote(self.old), FULL_URI + quote(self.new)

    def moved(self, text: str) -> str | None:
        """``text`` under the new folder, spelled as it was, when it names the old folder or a path inside it."""
        for old, new in self._spellings():
            if text.startswith(old) and text[len(old) : len(old) + 1] in ("", "/"):
                return new + text[len(old) :]
        return None

    def relocated(self, value: Any) -> Any:
        """``value`` (a string, or lists and mappings of them as JSON holds) with every path it names moved."""
        if isinstance(value, str):
            return self.moved(value) or value
        if isinstance(value, list):
            return [self.relocated(item) for item in value]
        if isinstance(value, dict):
            return {key: self.relocated(item) for key, item in value.items()}
        return value

    def is_alias(self) -> bool:
        """Both names reach one folder (a symbolic link, another spelling): nothing moved."""
        try:
            return os.path.samefile(self.old, self.new)
        except OSError:  # the old folder is gone (a move) or unreadable: it is not this one
            return False


def local_path(location: str) -> PurePosixPath | None:
    """The path on this machine that ``location`` names, in any of the three spellings; None for another scheme."""
    if location.startswith(FULL_URI):
        path = unquote(location[len(FULL_URI) :])
    elif location.startswith(HADOOP_URI):
        path = location[len(HADOOP_URI) :]
    else:
        path = location
    return PurePosixPath(path) if path.startswith("/") and not path.startswith("//") else None


def inside(location: str, folder: Path) -> bool:
    """``location`` names ``folder`` or a path inside it."""
    return Move(str(folder), str(folder)).moved(location) is not None


def find_move(location: str, folder: Path) -> Move | None:
    """The move that takes ``location`` (a file outside ``folder``) to ``folder``'s copy of that file, if it has one.

    The copy is found by the shortest tail of the path that names a file in ``folder``: for
    ``/old/warehouse/ns/t/metadata/v1.metadata.json`` and a warehouse holding ``ns/t/metadata/v1.metadata.json``,
    the old folder is ``/old/warehouse``. Iceberg's file names carry UUIDs, so no other tail matches by chance.
    """
    path = local_path(location)
    if path is None:
        return None
    parts = path.parts
    for start in range(len(parts) - 1, 1, -1):
        if folder.joinpath(*parts[start:]).is_file():
            return Move(str(PurePosixPath(*parts[:start])), str(folder))
    return None
