"""What a demo changed, and `taxi undo`, which puts it back: every table at its version from before the demo, and
the settings file as it was.

A demo records each table's current snapshot before its first run. When it fails after changing a table, it
saves that record in the state folder and names the command; ``undo`` moves each table's ``main`` back to the
recorded snapshot (Iceberg keeps the later ones in its history), drops a table the demo created, and writes the
settings file back. Dagster's runs and the lineage keep their record of what the demo did.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import date

from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError

from taxi_core.catalog import CatalogConfig, open_catalog
from taxi_core.files import write_atomically
from taxi_core.names import ACTUALS, NAMESPACE
from taxi_core.settings import Settings

UNDO_COMMAND = "./run taxi undo"
UNDO_FILE = "undo.json"  # in the state folder's demo/ folder
EPOCH_YEAR = 1970  # Iceberg's month transform counts months from 1970-01


@dataclass(frozen=True)
class Before:
    """Each table's current snapshot before the demo (``None``: none yet) and the settings file's text."""

    tables: dict[str, int | None]
    settings_file: str | None

    def changes(self, settings: Settings) -> list[str]:
        """One line per table whose current snapshot is no longer the recorded one."""
        now = table_versions(_catalog(settings))
        lines = []
        for name in sorted(set(now) | set(self.tables)):
            was, is_now = self.tables.get(name), now.get(name)
            if was != is_now:
                lines.append(f"{name}: snapshot {is_now or 'none'} (before the demo: {was or 'no table'})")
        return lines


def _catalog(settings: Settings) -> Catalog:
    return open_catalog(CatalogConfig.from_settings(settings))


def table_versions(catalog: Catalog) -> dict[str, int | None]:
    """Every table of the project's namespace by name, and its current snapshot."""
    if (NAMESPACE,) not in catalog.list_namespaces():
        return {}
    versions = {}
    for identifier in catalog.list_tables(NAMESPACE):
        snapshot = catalog.load_table(identifier).current_snapshot()
        versions[".".join(identifier)] = snapshot.snapshot_id if snapshot else None
    return versions


def record(settings: Settings) -> Before:
    file = settings.settings_file
    return Before(table_versions(_catalog(settings)), file.read_text() if file.is_file() else None)


def published_actuals_months(settings: Settings) -> set[str]:
    """The months ``YYYY-MM`` the hourly actuals table holds rows of (none before its first publication)."""
    catalog = _catalog(settings)
    try:
        table = catalog.load_table(ACTUALS)
    except NoSuchTableError:
        return set()
    if table.current_snapshot() is None:
        return set()
    months = set()
    for partition in table.inspect.partitions().to_pylist():
        if partition["record_count"] > 0:
            since_epoch = next(iter(partition["partition"].values()))
            months.add(f"{EPOCH_YEAR + since_epoch // 12}-{since_epoch % 12 + 1:02d}")
    return months


def save(before: Before, settings: Settings) -> None:
    write_atomically(settings.path("demo") / UNDO_FILE, json.dumps(asdict(before) | {"saved": f"{date.today()}"}))


def undo(settings: Settings) -> int:
    """Put back what the last failed demo changed; say what it did. Exit 1 when there is nothing to undo."""
    saved = settings.path("demo") / UNDO_FILE
    if not saved.is_file():
        print(f"Nothing to undo: no failed demo left a record in {saved.parent}")
        return 1
    found = json.loads(saved.read_text())
    before = Before({name: version for name, version in found["tables"].items()}, found["settings_file"])
    catalog = _catalog(settings)
    for name, now in table_versions(catalog).items():
        was = before.tables.get(name)
        if name not in before.tables:
            catalog.drop_table(name)
            print(f"{name}: dropped (the demo created it)")
        elif was != now and was is not None:
            catalog.load_table(name).manage_snapshots().set_current_snapshot(snapshot_id=was).commit()
            print(f"{name}: back to snapshot {was} (was {now})")
        elif was != now:
            print(f"{name}: has no snapshot before the demo; left at {now}")
    if before.settings_file is None:
        settings.settings_file.unlink(missing_ok=True)
    else:
        write_atomically(settings.settings_file, before.settings_file)
    print(f"{settings.settings_file}: as before the demo")
    saved.unlink()
    return 0
