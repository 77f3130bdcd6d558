"""A month's audits as the Dagster checks of its table's asset: which are selected and accepted, their results on
the staged month or the published one, what holds the month back, and the results recorded with it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from dagster import AssetExecutionContext, Failure
from pyspark.sql import DataFrame

from forecast_assets.assets.month_write import MonthWrite
from forecast_assets.audit_run import judge_measured, measure
from forecast_assets.audits import WARN, Audit, AuditResult, Measured, holds_back
from forecast_assets.config import TableWriteConfig
from forecast_assets.lakehouse.snapshots import PublishedMonth, StagedMonth
from forecast_assets.lakehouse.tables import TableSpec

Judged = list[tuple[Audit, AuditResult]]
# A check's metadata: true when its result is the one recorded when the unchanged month was published.
REUSED = "reused_from_publication"
STAGING_ONLY = ("staged_branch", "read_staged_with")  # the branch is dropped once the month is published
ACCEPTED = "accepted"
ACCEPTED_PROPERTY, REASON_PROPERTY = "audit.accepted", "audit.accepted-reason"


def acceptance(spec: TableSpec, audits: Sequence[Audit], config: TableWriteConfig) -> set[str]:
    """The audits this run accepts, checked before anything is read: each must be one of the table's, with a
    reason."""
    accepted = set(config.accept)
    if not accepted:
        return accepted
    names = {audit.name for audit in audits}
    unknown = sorted(accepted - names)
    if unknown:
        msg = (
            f"accept names {', '.join(unknown)}, which {'is' if len(unknown) == 1 else 'are'} not an audit of "
            f"{spec.identifier}; its audits are {', '.join(sorted(names))}."
        )
        raise Failure(description=msg, allow_retries=False)
    if not config.reason.strip():
        msg = (
            f"accept lists {', '.join(sorted(accepted))} but gives no reason: add reason: '<why this month is "
            "right though its audits fail>', which is recorded with the published month and in the lineage."
        )
        raise Failure(description=msg, allow_retries=False)
    return accepted


def reason(audit: Audit, result: AuditResult) -> str:
    """What failed, in figures: the audit's own sentence, or its measurements where it has none."""
    if result.description:
        return result.description
    measured = ", ".join(f"{key} {value}" for key, value in result.metadata.items() if key not in STAGING_ONLY)
    return f"{audit.description} Measured: {measured}."


def judged_on(
    context: AssetExecutionContext,
    rows: DataFrame,
    month: MonthWrite,
    audited: str,
    extra: Mapping[str, Any] | None = None,
    measured: Measured | None = None,
) -> Judged:
    """The selected audits judged on ``rows``, each result's metadata saying what was audited; ``measured``, what
    was measured of the rows already (measured here if None)."""
    found = measure(rows, month.audits, month.facts) if measured is None else measured
    return [
        (audit, replace(result, metadata={**result.metadata, "audited": audited, **(extra or {})}))
        for audit, result in judge_measured(found, month.audits, month.facts)
    ]


@dataclass(frozen=True)
class Verdict:
    """The staged month's audits judged: what holds it back (nothing: it may be published), and its results as they
    stand once it is published and as they are recorded with it."""

    judged: Judged
    staged: StagedMonth

    @property
    def blocking(self) -> Judged:
        return [(audit, result) for audit, result in self.judged if holds_back(audit, result)]

    def published_as(self, snapshot_id: int) -> Judged:
        """The results once the month is published: its staging branch is dropped, so they name the snapshot
        published rather than the branch and how to read it."""
        staged_id = self.staged.write.snapshot_id
        # A fast-forward publishes the staged snapshot itself; a cherry-pick (another month published meanwhile), a
        # copy.
        audited = (
            f"snapshot {staged_id}, staged then published"
            if staged_id == snapshot_id
            else f"staged snapshot {staged_id}, published as {snapshot_id}"
        )
        return [
            (audit, replace(result, metadata={**without_staging(result.metadata), "audited": audited}))
            for audit, result in self.judged
        ]

    def record(self, snapshot_id: int) -> dict[str, dict[str, Any]]:
        """The results kept with the month published as ``snapshot_id``, for an unchanged month's run to reuse."""
        return {audit.name: asdict(result) for audit, result in self.published_as(snapshot_id)}


def staged_verdict(
    context: AssetExecutionContext,
    month: MonthWrite,
    staged: StagedMonth,
    rows: DataFrame,
    measured: Measured,
    accepted: set[str],
    why: str,
) -> Verdict:
    """The selected audits judged on the staged month; an accepted audit that would hold it back warns instead,
    saying who accepted it and ``why``. Every failed audit that does not hold it back is logged."""
    where = f"staged snapshot {staged.write.snapshot_id} on branch {staged.branch}"
    extra = {"staged_branch": staged.branch, "read_staged_with": staged.how_to_read}
    judged = []
    for audit, result in judged_on(context, rows, month, where, extra, measured):
        if audit.name in accepted and holds_back(audit, result):
            result = replace(
                result,
                severity=WARN,
                description=f"Accepted by run {context.run.run_id[:8]}: {why}. {reason(audit, result)}",
                metadata={**result.metadata, ACCEPTED: why},
            )
        if not result.passed and not holds_back(audit, result):
            context.log.warning(f"{month.spec.identifier} {month.label}: {audit.name}: {reason(audit, result)}")
        judged.append((audit, result))
    return Verdict(judged, staged)


def reused(
    context: AssetExecutionContext,
    month: MonthWrite,
    record: Mapping[str, dict[str, Any]] | None,
    published: PublishedMonth,
) -> Judged | None:
    """The selected audits' results the unchanged month was published with, marked as reused; None if any is
    missing (the month was published before results were kept, or by other audits)."""
    if record is None or any(audit.name not in record for audit in month.audits):
        return None
    by = published.properties.get("dagster.run-id", "")[:8]
    judged = []
    for audit in month.audits:
        result = AuditResult(**record[audit.name])
        kept = without_staging(result.metadata)
        audited = (
            f"at publication, the {kept.get('audited', 'month')} (run {by}); the month is unchanged since "
            f"(snapshot {published.snapshot_id}), so it is not audited again"
        )
        judged.append((audit, replace(result, metadata={**kept, "audited": audited, REUSED: True})))
    return judged


def without_staging(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in metadata.items() if key not in STAGING_ONLY}
