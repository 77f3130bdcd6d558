"""A range of months as one step: each month's own events, recorded per partition, in one run.

A monthly asset runs a whole partition range in one run (its backfill policy is Dagster's single run): one
process, one Spark session, each month still written, audited and published on its own. A one-month run yields
the month's events as they are. A range's step records each month's materialization with that month's own
metadata (and its version, which Dagster's one data version per step cannot carry) and each check's result for
its month; a month that fails (held back by its audits, not staged, or an error of its own) fails alone: the
months after it still run, the months published keep their materializations, and the step then fails with every
such month's message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from dagster import (
    AssetCheckEvaluation,
    AssetCheckResult,
    AssetExecutionContext,
    AssetKey,
    AssetMaterialization,
    Failure,
    MaterializeResult,
    MetadataValue,
    Output,
)
from dagster._core.definitions.data_version import CODE_VERSION_TAG, DATA_VERSION_TAG

from bridge.translate.dagster_inputs import DATA_VERSION

MonthEvent = MaterializeResult[Any] | AssetCheckResult
RangeEvent = MaterializeResult[Any] | AssetCheckResult | AssetCheckEvaluation | AssetMaterialization | Output[None]


@dataclass
class _Made:
    """One month's materialization as its events left it."""

    metadata: dict[str, Any]
    data_version: str | None


@dataclass
class _Range:
    context: AssetExecutionContext
    asset_key: AssetKey
    made: dict[str, _Made] = field(default_factory=dict)
    failed: list[tuple[str, str]] = field(default_factory=list)

    def month_events(self, key: str, events: Iterator[MonthEvent]) -> Iterator[RangeEvent]:
        for event in events:
            checks: Sequence[AssetCheckResult] = ()
            if isinstance(event, MaterializeResult):
                version = event.data_version.value if event.data_version is not None else None
                self.made[key] = _Made(dict(event.metadata or {}), version)
                checks = event.check_results or ()
            else:
                checks = (event,)
            yield from (self.evaluation(check, key) for check in checks)

    def evaluation(self, check: AssetCheckResult, key: str) -> AssetCheckEvaluation:
        return AssetCheckEvaluation(
            asset_key=check.asset_key or self.asset_key,
            check_name=check.check_name or "",
            passed=check.passed,
            metadata=dict(check.metadata or {}),
            severity=check.severity,
            description=check.description,
            blocking=self.blocking(check),
            partition=key,
        )

    def blocking(self, check: AssetCheckResult) -> bool:
        assets = self.context.assets_def
        for spec in assets.check_specs:
            if spec.name == check.check_name:
                return bool(spec.blocking)
        return False

    def checks_ran(self) -> Iterator[Output[None]]:
        """Each selected check's output, once its result for every month is recorded: what tells Dagster the
        blocking checks ran (else it warns that what runs after proceeds without them)."""
        assets = self.context.assets_def
        for check_key in self.context.selected_asset_check_keys:
            yield Output(None, output_name=assets.get_output_name_for_asset_check_key(check_key))

    def metadata(self, key: str) -> dict[str, Any]:
        made = self.made[key]
        version = {DATA_VERSION: made.data_version} if made.data_version is not None else {}
        return {**made.metadata, **version}

    def ended(self) -> Iterator[RangeEvent]:
        """Every month's materialization; then, when a month failed, the step's failure naming each."""
        if self.asset_key not in self.context.selected_asset_keys:
            return  # the checks alone: each month's results are all there is
        if not self.failed:
            for key in self.made:
                self.context.add_asset_metadata(self.metadata(key), asset_key=self.asset_key, partition_key=key)
            # One result for the range: Dagster records a materialization per month, each with its own metadata.
            yield MaterializeResult(asset_key=self.asset_key)
            yield from self.checks_ran()
            return
        # The step fails: no output (it would record every month of the range as materialized, the failed ones
        # too), each month that materialized recorded as itself.
        code_version = self.context.assets_def.code_versions_by_key.get(self.asset_key)
        for key, made in self.made.items():
            tags = {CODE_VERSION_TAG: code_version} if code_version else {}
            if made.data_version is not None:
                tags[DATA_VERSION_TAG] = made.data_version
            yield AssetMaterialization(self.asset_key, partition=key, metadata=self.metadata(key), tags=tags)
        months = ", ".join(key[:7] for key, _ in self.failed)
        done = [key[:7] for key in self.made if key not in dict(self.failed)]
        others = f"The range's other months ran: {', '.join(done)}." if done else "No month of the range ran."
        said = "\n\n".join(f"{key[:7]}: {message}" for key, message in self.failed)
        message = (
            f"{len(self.failed)} of {len(self.failed) + len(done)} months failed ({months}); {others}\n\n{said}\n\n"
            "Launch the range again once each is fixed: its months already published are found unchanged in seconds."
        )
        raise Failure(description=message, metadata={"failed_months": MetadataValue.text(months)})


def over_months(
    context: AssetExecutionContext, asset_key: AssetKey, one_month: Callable[[str], Iterator[MonthEvent]]
) -> Iterator[RangeEvent]:
    """``one_month(key)``'s events for the run's month, or for each month of its range (see the module)."""
    keys = list(context.partition_keys)  # its one partition, or every month of its range, in order
    if len(keys) == 1 and context.has_partition_key:
        yield from one_month(keys[0])
        return
    months = _Range(context, asset_key)
    for n, key in enumerate(keys, start=1):
        context.log.info(f"Month {n} of {len(keys)}: {key[:7]}")
        try:
            yield from months.month_events(key, one_month(key))
        except Failure as failure:
            context.log.error(f"{asset_key.to_user_string()} {key[:7]}: {failure.description}")
            months.failed.append((key, failure.description or str(failure)))
        except Exception as error:  # noqa: BLE001 - a month's error (a bad file, a Spark job) is that month's alone
            # The months published before it keep their materializations (and so their lineage); it fails alone.
            context.log.exception(f"{asset_key.to_user_string()} {key[:7]} failed")
            months.failed.append((key, f"{type(error).__name__}: {error}"))
    yield from months.ended()
