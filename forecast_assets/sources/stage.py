"""Download, verify and stage one source file; a file whose source is unchanged is not fetched again."""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from forecast_assets.sources.download import (
    BASE_URL_SETTING,
    DEFAULT_RETRY,
    FetchRecord,
    Progress,
    RetryPolicy,
    fetch_if_changed,
)
from forecast_assets.sources.staging import Staging
from taxi_core.progress import reporting_while


def combined_fingerprint(fingerprints: list[str]) -> str:
    """One version for a set of staged files (a month's weather files), from their fingerprints in order."""
    return f"sha256:{hashlib.sha256(''.join(fingerprints).encode()).hexdigest()}"


@dataclass(frozen=True)
class StagedFile:
    name: str
    record: FetchRecord
    downloaded: bool
    content_changed: bool
    facts: Any = None


def stage_file(
    url: str,
    name: str,
    staging: Staging,
    verify: Callable[[Path], Any],
    workdir: Path,
    progress: Progress,
    policy: RetryPolicy = DEFAULT_RETRY,
    setting: str = BASE_URL_SETTING,
) -> StagedFile:
    """``verify`` raises on a bad file and returns facts with a ``rows`` attribute on a good one.

    A bad file never reaches staging, so what was staged before stays in place. ``setting`` names the
    setting of the source's base URL in what a failed download says.
    """
    previous = staging.record(name)
    workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp, reporting_while(progress, f"Staging {name}", ends=False):
        fetched = fetch_if_changed(url, previous, Path(tmp), progress, policy, setting)
        if fetched is None:
            if previous is None:  # an invariant: a fetch is skipped only when a staged copy is as published
                raise RuntimeError(f"{name} was not fetched, yet nothing is staged")
            progress(f"{name} unchanged at {url}; keeping the staged copy ({previous.fingerprint})")
            return StagedFile(name, previous, downloaded=False, content_changed=False)
        facts = verify(fetched.path)
        record = replace(fetched.record, rows=facts.rows)
        staging.put(fetched.path, name, record)
    changed = previous is None or previous.fingerprint != record.fingerprint
    progress(f"Staged {name}: {record.size / 1e6:.1f} MB, {facts.rows} rows, {record.fingerprint}")
    return StagedFile(name, record, downloaded=True, content_changed=changed, facts=facts)
