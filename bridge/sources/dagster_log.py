"""Read a Dagster event log in bulk: Dagster's own SQLite files directly where the instance keeps them, else its APIs.

A pass reads many runs at once. Through the instance's APIs every run, every upstream lookup and
every provenance pointer is a query built by SQLAlchemy (about a millisecond each before SQLite does
anything) and, with Dagster's default storage, a new engine per run shard. With the instance's
SQLite storage (consolidated, or sharded by run) the same rows are read with plain ``sqlite3``: the
records of every run of a pass in one query (or one per shard), each upstream asset's
materializations once per pass, the provenance pointers of the pass in one query. Each row becomes
the same :class:`~dagster.EventLogRecord` Dagster builds from it (the event deserialized with
Dagster's own ``deserialize_value``), so what is translated does not depend on the way it was read.
Any other storage (Postgres, MySQL, a storage of one's own) is read through the instance's APIs.
"""

from __future__ import annotations

import bisect
import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence, Sized
from pathlib import Path
from time import time
from typing import Protocol

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    DagsterEventType,
    DagsterInstance,
    EventLogEntry,
    EventLogRecord,
)
from dagster_shared.serdes import deserialize_values

UPSTREAM_WINDOW = 200  # an upstream asset's newest materializations fetched at once, per pass (through the APIs)
MATERIALIZATION = DagsterEventType.ASSET_MATERIALIZATION.value
# The newest materializations of an asset (of some partitions) when fetched, the records, whether that is all.
Window = tuple[float, Sequence[EventLogRecord], bool]


class EventLog(Protocol):
    """What the Dagster source reads of an event log, whatever stores it."""

    def records_for_runs(self, run_ids: Sequence[str], kinds: set[DagsterEventType]) -> dict[str, list[EventLogRecord]]:
        """The records of ``kinds`` of each run, in storage-id order."""

    def latest_before(self, asset: AssetKey, partitions: list[str] | None, before: float) -> EventLogRecord | None:
        """The newest materialization of ``asset`` (in ``partitions``) stored before the time ``before``."""

    def materializations(self, asset: AssetKey, storage_ids: set[int]) -> list[EventLogRecord]:
        """The materializations of ``asset`` with these storage ids (as its asset records number them)."""

    def close(self) -> None:
        """Let go of what the reader opened."""


def event_log(instance: DagsterInstance) -> EventLog:
    """The fastest reader of ``instance``'s event log: its SQLite files when it keeps them so, else its APIs."""
    files = sqlite_files(instance)
    return SqliteEventLog(*files) if files else InstanceEventLog(instance)


def sqlite_files(instance: DagsterInstance) -> tuple[Path, Path | None] | None:
    """Where ``instance`` keeps its events in SQLite: the file of asset and run-status records, and the folder of
    run shards (``None`` when one file holds every run); ``None`` for any other storage."""
    # The storage classes are Dagster's own SQLite ones (imported here: their module loads SQLAlchemy's SQLite dialect).
    from dagster._core.storage.event_log import ConsolidatedSqliteEventLogStorage, SqliteEventLogStorage

    storage = instance.event_log_storage
    if type(storage) is ConsolidatedSqliteEventLogStorage:
        return Path(storage.get_db_path()), None  # type: ignore[no-untyped-call]  # Dagster leaves it unannotated
    if type(storage) is SqliteEventLogStorage:
        index = Path(storage.path_for_shard("index"))
        return index, index.parent
    return None


def deserialized_records(rows: Sequence[tuple[int, str]]) -> list[EventLogRecord]:
    """Rows of storage ids and events as Dagster's records, deserialized together (Dagster enters its
    deserialization context once for them all, not once per event)."""
    entries = deserialize_values([event for _, event in rows], EventLogEntry)
    return [EventLogRecord(storage_id=row[0], event_log_entry=entry) for row, entry in zip(rows, entries, strict=True)]


_TIMESTAMP = '"timestamp": '
_LAST_AFTER_TIMESTAMP = ', "user_message": '


def stored_at(event: str) -> float:
    """The time of a serialized event log entry, read without parsing the whole entry.

    Dagster writes an entry with sorted keys, so its own ``timestamp`` is the last one in the text,
    followed only by ``user_message`` (a string) and the entry's end; a materialization's metadata (a
    forecast's plot) can make the entry hundreds of kilobytes. An entry laid out otherwise is parsed whole.
    """
    at = event.rfind(_TIMESTAMP)
    if at >= 0:
        start = at + len(_TIMESTAMP)
        end = min((i for i in (event.find(",", start), event.find("}", start)) if i >= 0), default=-1)
        if event.startswith(_LAST_AFTER_TIMESTAMP, end) or event[end:] == "}":  # the entry's own, at the top
            try:
                return float(event[start:end])
            except ValueError:  # float()'s own answer to text that is not a number: the entry is parsed whole below
                pass
    return float(json.loads(event)["timestamp"])


def _marks(values: Sized) -> str:
    return ",".join("?" * len(values))


class _Materializations:
    """One asset's materializations (of some partitions), newest first, read as far back as a question needs.

    ``latest_before`` is the first of them, newest first, stored before a moment: the running minimum of
    their times, newest first, never rises, so the first one under the moment is found by bisection.
    """

    def __init__(self, rows: Iterator[tuple[int, str]], wiped_at: float | None) -> None:
        self.rows, self.wiped_at = rows, wiped_at
        self.ids: list[int] = []
        self.events: list[str] = []
        self.low: list[float] = []  # the running minimum of the times, negated (ascending, for bisect)
        self.done = False

    def _read_until(self, before: float) -> None:
        while not self.done and (not self.low or -self.low[-1] >= before):
            row = next(self.rows, None)
            if row is None:
                self.done = True
                break
            stored = stored_at(row[1])
            if self.wiped_at is not None and stored <= self.wiped_at:
                continue  # materialized before the asset was wiped: Dagster no longer counts it
            self.ids.append(row[0])
            self.events.append(row[1])
            self.low.append(max(-stored, self.low[-1]) if self.low else -stored)

    def latest_before(self, before: float) -> tuple[int, str] | None:
        self._read_until(before)
        index = bisect.bisect_right(self.low, -before)
        return (self.ids[index], self.events[index]) if index < len(self.ids) else None


class SqliteEventLog:
    """An instance's SQLite event log read with ``sqlite3``: ``index`` holds asset and run-status records (and,
    without ``shards``, every record); ``shards`` is the folder of one file per run."""

    def __init__(self, index: Path, shards: Path | None) -> None:
        self.index_path, self.shards = index, shards
        self._index: sqlite3.Connection | None = None
        self._assets: dict[tuple[AssetKey, tuple[str, ...] | None], _Materializations] = {}
        self._records: dict[int, EventLogRecord] = {}  # asset records by storage id, deserialized once per pass

    @staticmethod
    def _open(path: Path) -> sqlite3.Connection:
        return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30, check_same_thread=False)

    @property
    def index(self) -> sqlite3.Connection:
        if self._index is None:
            self._index = self._open(self.index_path)
        return self._index

    def records_for_runs(self, run_ids: Sequence[str], kinds: set[DagsterEventType]) -> dict[str, list[EventLogRecord]]:
        types = [kind.value for kind in kinds]
        found: dict[str, list[EventLogRecord]] = {run_id: [] for run_id in run_ids}
        if self.shards is None:
            for chunk in _chunks(list(run_ids), 500):
                rows = self.index.execute(
                    f"SELECT id, run_id, event, dagster_event_type FROM event_logs WHERE run_id IN ({_marks(chunk)}) "
                    f"AND dagster_event_type IN ({_marks(types)}) ORDER BY id",
                    [*chunk, *types],
                ).fetchall()
                # One file numbers runs' and assets' records alike: a run's materialization is also
                # an upstream version or a provenance pointer of a later run of the same pass.
                materialized = self._cached([(i, event) for i, _, event, kind in rows if kind == MATERIALIZATION])
                other = deserialized_records([(i, event) for i, _, event, kind in rows if kind != MATERIALIZATION])
                by_id = {record.storage_id: record for record in [*materialized, *other]}
                for storage_id, run_id, _, _ in rows:
                    found[run_id].append(by_id[storage_id])
            return found
        for run_id in run_ids:
            shard = self.shards / f"{run_id}.db"
            if not shard.exists():
                continue
            connection = self._open(shard)
            try:
                rows = connection.execute(
                    f"SELECT id, event FROM event_logs WHERE dagster_event_type IN ({_marks(types)}) ORDER BY id", types
                ).fetchall()
            finally:
                connection.close()
            found[run_id] = deserialized_records(rows)
        return found

    def _wiped_at(self, asset: AssetKey) -> float | None:
        try:
            row = self.index.execute(
                "SELECT asset_details FROM asset_keys WHERE asset_key = ?", (asset.to_string(),)
            ).fetchone()
        except sqlite3.OperationalError:  # an event log from before asset details were kept
            return None
        if not row or not row[0]:
            return None
        wiped = json.loads(row[0]).get("last_wipe_timestamp")
        return float(wiped) if wiped else None

    def latest_before(self, asset: AssetKey, partitions: list[str] | None, before: float) -> EventLogRecord | None:
        key = (asset, tuple(partitions) if partitions else None)
        history = self._assets.get(key)
        if history is None:
            query = "SELECT id, event FROM event_logs WHERE asset_key = ? AND dagster_event_type = ?"
            parameters: list[str] = [asset.to_string(), MATERIALIZATION]
            if partitions:
                query += f" AND partition IN ({_marks(partitions)})"
                parameters += partitions
            rows = self.index.execute(query + " ORDER BY id DESC", parameters)
            history = self._assets[key] = _Materializations(iter(rows), self._wiped_at(asset))
        found = history.latest_before(before)
        return self._cached([found])[0] if found else None

    def _cached(self, rows: Sequence[tuple[int, str]]) -> list[EventLogRecord]:
        """Asset records by storage id, each deserialized once per pass (those not yet read, together)."""
        unread = [row for row in rows if row[0] not in self._records]
        self._records |= {record.storage_id: record for record in deserialized_records(unread)}
        return [self._records[storage_id] for storage_id, _ in rows]

    def materializations(self, asset: AssetKey, storage_ids: set[int]) -> list[EventLogRecord]:
        ids = sorted(storage_ids)
        rows = self.index.execute(
            f"SELECT id, event FROM event_logs WHERE id IN ({_marks(ids)}) AND asset_key = ? "
            "AND dagster_event_type = ? ORDER BY id DESC",
            [*ids, asset.to_string(), MATERIALIZATION],
        ).fetchall()
        wiped_at = self._wiped_at(asset)
        records = self._cached(rows)
        return [r for r in records if wiped_at is None or r.timestamp > wiped_at]

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None


def _chunks(values: list[str], size: int) -> Iterable[list[str]]:
    return (values[start : start + size] for start in range(0, len(values), size))


class InstanceEventLog:
    """Any event log, through the instance's public APIs."""

    def __init__(self, instance: DagsterInstance) -> None:
        self.instance = instance
        self._windows: dict[tuple[AssetKey, tuple[str, ...] | None], Window] = {}

    def records_for_runs(self, run_ids: Sequence[str], kinds: set[DagsterEventType]) -> dict[str, list[EventLogRecord]]:
        return {run_id: list(self.instance.get_records_for_run(run_id, of_type=kinds).records) for run_id in run_ids}

    def latest_before(self, asset: AssetKey, partitions: list[str] | None, before: float) -> EventLogRecord | None:
        """Answered from one window of the asset's newest materializations per pass, fetched after every record
        this pass reads was read (so nothing stored before any of them can be missing from it); a moment older
        than the window asks the instance."""
        key = (asset, tuple(partitions) if partitions else None)
        window = self._windows.get(key)
        if window is None or before > window[0]:
            fetched_at = time()
            result = self.instance.fetch_materializations(
                AssetRecordsFilter(asset_key=asset, asset_partitions=partitions), limit=UPSTREAM_WINDOW
            )
            window = self._windows[key] = (fetched_at, result.records, len(result.records) < UPSTREAM_WINDOW)
        fetched_at, records, whole_history = window
        if before <= fetched_at:
            for record in records:  # newest first
                if record.timestamp < before:
                    return record
            if whole_history:
                return None
        result = self.instance.fetch_materializations(
            AssetRecordsFilter(asset_key=asset, asset_partitions=partitions, before_timestamp=before), limit=1
        )
        return result.records[0] if result.records else None

    def materializations(self, asset: AssetKey, storage_ids: set[int]) -> list[EventLogRecord]:
        result = self.instance.fetch_materializations(
            AssetRecordsFilter(asset_key=asset, storage_ids=sorted(storage_ids)), limit=len(storage_ids)
        )
        return list(result.records)

    def close(self) -> None:
        """Nothing of its own to let go: the instance is the caller's."""
