"""What a copied state folder costs when first opened, and what opening it costs once nothing moved.

    ./run python benchmarks/state_move.py [STATE_DIR] [REPEATS]

Copies STATE_DIR's catalog, warehouse and Metaflow datastore (by default the settings' state folder) into a new
folder REPEATS times (default 3), and times, in this process: the catalog's relocation (its metadata files
rewritten, then its rows), the Metaflow records', then the checks every later opening makes (median of 50). The
state folder itself is only read.
"""

from __future__ import annotations

import logging
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from harness import timed

from taxi_core.catalog import CatalogConfig
from taxi_core.catalog_relocation import relocate_catalog
from taxi_core.metaflow_relocation import relocate_metaflow_records
from taxi_core.settings import load_settings

COPIED = ("catalog.sqlite", "catalog.sqlite-wal", "warehouse", "metaflow/.metaflow")


def seconds(work: Callable[..., object], *arguments: object) -> float:
    return timed(lambda: work(*arguments))[0]


def copy(state: Path, into: Path) -> Path:
    for name in COPIED:
        source = state / name
        if source.is_dir():
            shutil.copytree(source, into / name, symlinks=True)
        elif source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


def main(state: Path, repeats: int) -> None:
    metadata = (path for path in (state / "warehouse").rglob("*") if path.parent.name == "metadata")
    files = sum(1 for path in metadata if not path.name.startswith("."))  # not Hadoop's checksums
    print(f"{state}: {files} files in the tables' metadata folders")
    with tempfile.TemporaryDirectory(prefix="state-move-") as scratch:
        for attempt in range(repeats):
            copied = copy(state, Path(scratch) / str(attempt))
            config = CatalogConfig.from_settings(load_settings({"TAXI_STATE_DIR": str(copied)}))
            catalog, warehouse, sysroot = Path(config.sqlite_path), Path(config.warehouse), copied / "metaflow"
            tables, records = seconds(relocate_catalog, catalog, warehouse), seconds(relocate_metaflow_records, sysroot)
            print(f"first opening of copy {attempt + 1}: catalog {tables:.2f} s, Metaflow records {records:.2f} s")
        opened = [seconds(config.prepare_sqlite) for _ in range(50)]
        checked = [seconds(relocate_catalog, catalog, warehouse) for _ in range(50)]
        noted = [seconds(relocate_metaflow_records, sysroot) for _ in range(50)]
    print(f"nothing moved, median of 50: the catalog's check {statistics.median(checked) * 1000:.2f} ms")
    print(f"  (its whole opening step, WAL mode included: {statistics.median(opened) * 1000:.2f} ms)")
    print(f"  the Metaflow records' check {statistics.median(noted) * 1000:.3f} ms")


if __name__ == "__main__":
    logging.basicConfig(level=logging.ERROR)  # the relocations' own lines would repeat the figures
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else load_settings().state_dir
    main(folder, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
