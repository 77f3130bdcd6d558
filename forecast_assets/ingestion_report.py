"""What writing one month of a table did, in figures: the files and rows it read, the rows it wrote, its audits,
what a user should hear about and where the time went (as DataHub's ``SourceReport`` for an ingestion run).

The report is shown in Dagster's metadata, one entry a figure under ``report/`` (Dagster plots the counts and
seconds over the month's materializations), and travels into the lineage as the step's ``stepReport`` run facet, so
a slow or surprising month is told by the same figures in both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from forecast_assets.audits import Audit, AuditResult, holds_back

# The prefix of the materialization's metadata keys the lineage bridge reads a step's report from.
REPORT_PREFIX = "report/"


@dataclass(frozen=True)
class SourceRead:
    """The files a month was read from: how many, their bytes and the rows they hold (None: not counted)."""

    files: int
    bytes: int
    rows: int | None


@dataclass(frozen=True)
class IngestionReport:
    table: str
    partition: str
    outcome: str  # published, unchanged or held back
    rows_written: int | None
    read: SourceRead | None
    passed: tuple[str, ...]
    warned: tuple[str, ...]
    failed: tuple[str, ...]
    # Whether the audits' results are those the unchanged month was published with (not judged again).
    reused: bool
    warnings: tuple[str, ...]
    # Seconds by phase: reading how the month is published, writing it to a staging branch, auditing, publishing.
    seconds: Mapping[str, float] = field(default_factory=dict)

    @property
    def counts(self) -> dict[str, int]:
        counts = {
            "audits_passed": len(self.passed),
            "audits_warned": len(self.warned),
            "audits_failed": len(self.failed),
        }
        if self.rows_written is not None:
            counts["rows_written"] = self.rows_written
        if self.read is not None:
            counts |= {"files_read": self.read.files, "bytes_read": self.read.bytes}
            if self.read.rows is not None:
                counts["rows_in_files"] = self.read.rows
        return counts

    def figures(self) -> dict[str, int | float | str | bool]:
        """The report's figures by name (``report/<name>`` in the metadata): counts, seconds by phase, the outcome,
        the audits that warned or failed, and what a user should hear about."""
        figures: dict[str, int | float | str | bool] = {"outcome": self.outcome, **self.counts}
        figures |= {f"seconds_{phase}": round(seconds, 2) for phase, seconds in self.seconds.items()}
        figures["audits_reused"] = self.reused
        if self.warned:
            figures["warned"] = ", ".join(self.warned)
        if self.failed:
            figures["failed"] = ", ".join(self.failed)
        if self.warnings:
            figures["warnings"] = "\n".join(f"- {warning}" for warning in self.warnings)
        return figures


def reported(
    table: str,
    partition: str,
    outcome: str,
    judged: Sequence[tuple[Audit, AuditResult]],
    *,
    rows_written: int | None,
    read: SourceRead | None,
    seconds: Mapping[str, float],
    reused: bool = False,
) -> IngestionReport:
    """The month's report from its audits' results: a failed audit that does not block (or an accepted one) warns."""
    passed = tuple(audit.name for audit, result in judged if result.passed)
    failed = tuple(audit.name for audit, result in judged if holds_back(audit, result))
    warned = tuple(audit.name for audit, result in judged if not result.passed and audit.name not in failed)
    warnings = tuple(
        f"{audit.name}: {result.description}" for audit, result in judged if audit.name in warned and result.description
    )
    return IngestionReport(
        table, partition, outcome, rows_written, read, passed, warned, failed, reused, warnings, seconds
    )
