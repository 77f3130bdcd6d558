"""The Dagster features in beta or preview the project relies on knowingly, and their warnings kept out of what users
read: each definition load (the code server, every run's process) printed them again, 30 lines a demo.

Only these warnings, and only while our definitions are built: a beta feature we start using later still warns."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from dagster import BetaWarning, PreviewWarning

RELIED_ON: tuple[tuple[type[Warning], str], ...] = (
    # One run materializes a range of days (the daily assets' backfills): dagster.BackfillPolicy.single_run.
    (BetaWarning, r"Parameter `backfill_policy`"),
    # Checks judged per partition (a month's audits, a day's alarms).
    (PreviewWarning, r"Specifying a partitions_def on an AssetCheckSpec"),
)


@contextmanager
def previews_relied_on() -> Iterator[None]:
    """Build definitions without the warnings of the previews this project chose (``RELIED_ON``)."""
    with warnings.catch_warnings():
        for category, message in RELIED_ON:
            warnings.filterwarnings("ignore", message=message, category=category)
        yield
