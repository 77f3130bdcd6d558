"""What an Iceberg table version holds, from Iceberg's own metadata: each partition and the snapshot that wrote it.

A snapshot of a partitioned table holds partitions written by different snapshots (one month by one
run, the next by another). Its manifests list every live data and delete file with its partition and
the snapshot that added it; :func:`partitions_read` keeps those a scan reads. A reader of the whole
table is then built from every partition at the version that wrote it, not from the snapshot that
happened to be written last.
"""

from __future__ import annotations

import logging

from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.manifest import DataFile, ManifestContent
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table

from bridge.errors import BridgeError
from bridge.translate.partitions import PartitionVersion, in_order

log = logging.getLogger(__name__)


class SnapshotNotFound(BridgeError, LookupError):
    """A table has no snapshot of the id asked for (never had it, or it expired)."""


def partitions_read(
    table: Table, snapshot_id: int, row_filter: str | BooleanExpression | None = None
) -> tuple[PartitionVersion, ...]:
    """The partitions a scan of ``table`` at ``snapshot_id`` with ``row_filter`` reads, each with the snapshot(s) that
    wrote the files it reads; empty for an unpartitioned table (its version is the snapshot itself)."""
    if all(spec.is_unpartitioned() for spec in table.specs().values()):
        return ()
    snapshot = table.snapshot_by_id(snapshot_id)
    if snapshot is None:
        msg = (
            f"{'.'.join(table.name())} has no snapshot {snapshot_id}: pass the snapshot the scan read "
            "(table.current_snapshot().snapshot_id when it read the current one), before it expires"
        )
        raise SnapshotNotFound(msg)
    scan = table.scan(row_filter=AlwaysTrue() if row_filter is None else row_filter, snapshot_id=snapshot_id)
    tasks = list(scan.plan_files())
    read = {task.file.file_path for task in tasks} | {d.file_path for task in tasks for d in task.delete_files}
    specs, schema = table.specs(), table.schema()
    rows: dict[tuple[str, str, tuple[tuple[str, str], ...]], int] = {}
    for manifest in snapshot.manifests(table.io):
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            if entry.data_file.file_path not in read:
                continue
            name, dimensions = _partition(specs[entry.data_file.spec_id], schema, entry.data_file)
            key = (name, str(entry.snapshot_id), dimensions)
            added = entry.data_file.record_count if manifest.content == ManifestContent.DATA else 0
            rows[key] = rows.get(key, 0) + added
    return tuple(
        in_order(PartitionVersion(name, version, count, dims) for (name, version, dims), count in rows.items())
    )


def _partition(spec: PartitionSpec, schema: Schema, data_file: DataFile) -> tuple[str, tuple[tuple[str, str], ...]]:
    """Iceberg's path-style name of a file's partition and each field's human-readable value."""
    fields = spec.partition_type(schema).fields
    dimensions = tuple(
        (field.name, field.transform.to_human_string(fields[position].field_type, data_file.partition[position]))
        for position, field in enumerate(spec.fields)
    )
    return spec.partition_to_path(data_file.partition, schema), dimensions


def partitions_for_lineage(
    table: Table, snapshot_id: int, row_filter: str | BooleanExpression | None = None
) -> tuple[PartitionVersion, ...]:
    """:func:`partitions_read` for a step recording its read: when the table's metadata cannot say (a manifest
    unreadable, the snapshot expired meanwhile), the read is recorded without its partitions and the step goes
    on; lineage never fails the work it records."""
    try:
        return partitions_read(table, snapshot_id, row_filter)
    except Exception:  # whatever pyiceberg raises, the step must not fail for its lineage; it is logged
        log.warning(
            "Could not tell which partitions of %s snapshot %s were read; its lineage names the snapshot alone",
            ".".join(table.name()),
            snapshot_id,
            exc_info=True,
        )
        return ()
