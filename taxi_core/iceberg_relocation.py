"""One Iceberg table's metadata files, rewritten in place so the paths they hold under an old folder name the new one.

In the order that keeps the table whole at every step: the manifests, then the manifest lists that name them
(with each manifest's new length: readers such as Trino trust ``manifest_length``, which Iceberg 1.10's own
``rewrite_table_path`` leaves stale, apache/iceberg#13719), then the metadata JSON files. Each file keeps its name and
every value but its paths, and is replaced whole (its Hadoop checksum file, now wrong, removed first). A file
that names nothing under the old folder is left alone, so running this again does nothing. The data files hold no
paths and are not touched.
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taxi_core.errors import PipelineError
from taxi_core.files import atomic_path, write_atomically
from taxi_core.relocation import Move, local_path

if TYPE_CHECKING:
    from pyiceberg.io import FileIO
    from pyiceberg.schema import Schema
    from pyiceberg.typedef import Record

# Iceberg's field ids (the spec's "Manifest Lists" and "Manifests" tables).
MANIFEST_PATH, MANIFEST_LENGTH = 500, 501
CONTENT = 134
POSITION_DELETES = 1
GZIP_MAGIC = b"\x1f\x8b"
AVRO_SCHEMA_KEY = "avro.schema"


class TableNotRelocatable(PipelineError):
    """A table's files hold paths this project cannot move by rewriting its metadata."""


@dataclass
class AvroMetadataFile:
    """An Iceberg manifest or manifest list, read whole: its schema, its header's metadata and its records."""

    path: Path
    schema: Schema
    record_name: str
    meta: dict[str, str]
    records: list[Record]

    @property
    def is_manifest_list(self) -> bool:
        return any(field.field_id == MANIFEST_PATH for field in self.schema.fields)

    def position(self, field_id: int) -> int:
        return [field.field_id for field in self.schema.fields].index(field_id)


def relocate_metadata_folder(folder: Path, move: Move, table: str) -> int:
    """Rewrite the manifests, manifest lists and metadata JSON files in ``folder`` that name ``move.old``; how many."""
    # pyiceberg and pyarrow load only when a folder moved, not on every opening of the catalog.
    from pyiceberg.io.pyarrow import PyArrowFileIO

    io = PyArrowFileIO()
    avro = [read_avro(io, path) for path in sorted(folder.glob("*.avro"))]
    rewritten = 0
    for manifest in (file for file in avro if not file.is_manifest_list):
        refuse_position_deletes(manifest, table)
        rewritten += write_relocated(io, manifest, move)
    for manifest_list in (file for file in avro if file.is_manifest_list):
        rewritten += write_relocated(io, manifest_list, move)
    for path in sorted(folder.glob("*.metadata.json")):
        rewritten += relocate_json(path, move)
    return rewritten


def read_avro(io: FileIO, path: Path) -> AvroMetadataFile:
    # pyiceberg's Avro reader loads with it, only when a folder moved.
    from pyiceberg.avro.file import AvroFile
    from pyiceberg.typedef import Record

    with AvroFile[Record](io.new_input(str(path))) as reader:
        records = list(reader)
        meta = dict(reader.header.meta)
        schema = reader.schema
    record_name = str(json.loads(meta.pop(AVRO_SCHEMA_KEY))["name"])
    return AvroMetadataFile(path, schema, record_name, meta, records)


def refuse_position_deletes(manifest: AvroMetadataFile, table: str) -> None:
    """Position delete files name the data files they delete from: moving them means rewriting them, not done here."""
    if manifest.meta.get("content") != "deletes":
        return
    content = manifest.schema.accessor_for_field(CONTENT)
    if any(content.get(record) == POSITION_DELETES for record in manifest.records):
        msg = (
            f"{table} has position delete files ({manifest.path}), which name data files by their old path, so its "
            "state folder cannot be moved by rewriting its metadata. Open the table where it was, compact it "
            "(CALL system.rewrite_data_files) and copy the state folder again"
        )
        raise TableNotRelocatable(msg)


def write_relocated(io: FileIO, file: AvroMetadataFile, move: Move) -> int:
    """``file`` rewritten with its paths moved (and, a manifest list, its manifests' lengths); 1, or 0 if unchanged."""
    # pyiceberg's Avro writer loads with it, only when a folder moved.
    from pyiceberg.avro.file import AvroOutputFile
    from pyiceberg.typedef import Record

    records = [relocated_record(record, move) for record in file.records]
    if file.is_manifest_list:
        path_at, length_at = file.position(MANIFEST_PATH), file.position(MANIFEST_LENGTH)
        for record in records:
            manifest = local_path(record[path_at])
            if manifest is not None and os.path.isfile(manifest):
                record[length_at] = os.path.getsize(manifest)
    if records == file.records:
        return 0
    drop_checksum(file.path)
    with atomic_path(file.path) as part:
        output = io.new_output(str(part))
        with AvroOutputFile[Record](output, file.schema, file.record_name, metadata=file.meta) as writer:
            writer.write_block(records)
    return 1


def relocated_record(value: Any, move: Move) -> Any:
    """A copy of an Avro value (records, lists, maps, strings) with every path under ``move.old`` moved."""
    # The reader builds plain records; their type is imported only when a folder moved.
    from pyiceberg.typedef import Record

    if isinstance(value, Record):
        return Record(*(relocated_record(value[index], move) for index in range(len(value))))
    if isinstance(value, list):
        return [relocated_record(item, move) for item in value]
    if isinstance(value, dict):
        return {key: relocated_record(item, move) for key, item in value.items()}
    if isinstance(value, str):
        return move.moved(value) or value
    return value


def relocate_json(path: Path, move: Move) -> int:
    """A metadata JSON file (gzipped or not) rewritten with its paths moved; 1, or 0 if it names none."""
    raw = path.read_bytes()
    packed = raw.startswith(GZIP_MAGIC)
    metadata = json.loads(gzip.decompress(raw) if packed else raw)
    moved = move.relocated(metadata)
    if moved == metadata:
        return 0
    text = json.dumps(moved).encode()
    drop_checksum(path)
    write_atomically(path, gzip.compress(text) if packed else text)
    return 1


def drop_checksum(path: Path) -> None:
    """Remove the ``.crc`` file Hadoop's local file system keeps beside a file it wrote, before the file changes.

    Hadoop checks a file against that checksum when it reads it (Spark fails with a ChecksumException), and reads a
    file that has none as it is. Removed first, so a rewrite cut short never leaves a checksum that no longer fits.
    """
    path.with_name(f".{path.name}.crc").unlink(missing_ok=True)
