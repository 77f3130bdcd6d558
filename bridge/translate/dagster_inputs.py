"""What a materialization says it read and which code made it, as Dagster asset metadata: written by an asset,
read by the bridge.

An asset that knows the version of each input it read (an Iceberg snapshot, a file's fingerprint) says so
under ``lineage/input_versions``: ``{parent asset key (a/b): the version read}``. It is the truest record of
a run's inputs; the bridge prefers it to Dagster's provenance pointers (:mod:`bridge.translate.dagster`).
An asset that knows the code it ran (the git commit of the checkout, the file in it) says so under
``code/commit`` and ``code/path``: the step's ``sourceCodeLocation``.
A step that materializes a range of partitions in one run has one Dagster data version for all of them: each
partition's own version rides under ``lineage/data_version``, which the bridge prefers to the data version tag.
Light on purpose: the assets import it, and it loads neither the OpenLineage client nor the translators.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dagster import MetadataValue

INPUT_VERSIONS = "lineage/input_versions"
DATA_VERSION = "lineage/data_version"


def input_versions_metadata(read: Mapping[str, str]) -> dict[str, Any]:
    """The metadata entry saying which version of each parent (by its key's user string) was ``read``."""
    return {INPUT_VERSIONS: MetadataValue.json(dict(read))}


CODE_COMMIT, CODE_PATH, CODE_BRANCH = "code/commit", "code/path", "code/branch"


def code_metadata(commit: str | None, path: str | None, branch: str | None = None) -> dict[str, Any]:
    """The metadata entries naming the code that made a materialization: none without a commit and a path."""
    if not commit or not path:
        return {}
    return {CODE_COMMIT: commit, CODE_PATH: path} | ({CODE_BRANCH: branch} if branch else {})
