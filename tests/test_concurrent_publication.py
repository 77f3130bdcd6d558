"""Several writers publishing months of one Iceberg table at once, on a PostgreSQL catalog.

Each writer is its own process with its own Spark session, as concurrent Dagster runs are; the table
starts absent, so the first rounds also race to create it. Every round must land exactly once. The race runs
in the background lane (:mod:`tests.publication_race`, :mod:`tests.end_to_end`); here its catalog is started again
on the data it left, and read.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from forecast_assets.lakehouse.commits import LOST_COMMIT_RACE
from forecast_assets.lakehouse.snapshots import CHERRY_PICK_SOURCE, PARTITION_PROPERTY
from taxi_core.catalog import CatalogConfig, open_catalog
from taxi_core.names import NAMESPACE
from taxi_demo.local_cluster.postgres_server import LocalPostgres
from taxi_demo.local_cluster.services import free_port
from tests.cluster_rig import settings_in
from tests.end_to_end import Race
from tests.publication_race import CATALOG_DATABASE, MONTHS, ROUNDS, TABLE, catalog_environment
from tests.publication_writer import ROWS_PER_ROUND, round_values

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

ICEBERG_RETRY = "Retrying task after failure"


@pytest.fixture(scope="module")
def race(end_to_end) -> Race:
    outcome: Race = end_to_end.outcome("publication-race")
    yield outcome
    shutil.rmtree(outcome.home, ignore_errors=True)


@pytest.fixture(scope="module")
def catalog_env(race):
    """The race's catalog, its PostgreSQL started again on the data the race left."""
    postgres = LocalPostgres(race.home / "postgres", free_port())
    server = postgres.start([CATALOG_DATABASE])
    try:
        yield catalog_environment(race.home, postgres)
    finally:
        postgres.stop(server)


def _writers(race: Race) -> list[subprocess.CompletedProcess]:
    return [
        subprocess.CompletedProcess([], writer["returncode"], writer["stdout"], writer["stderr"])
        for writer in race.writers
    ]


def test_writers_racing_on_one_table_each_publish_every_round_once(race, catalog_env):
    writers = _writers(race)

    for writer in writers:
        assert writer.returncode == 0, _what_failed(writer.stderr)
    rounds = [[json.loads(line) for line in writer.stdout.splitlines()] for writer in writers]
    assert [len(published) for published in rounds] == [ROUNDS] * len(MONTHS)

    table = open_catalog(CatalogConfig.from_settings(settings_in(catalog_env))).load_table(f"{NAMESPACE}.{TABLE}")
    # Each month holds exactly its writer's last round: none lost, none doubled, no other month touched.
    rows = table.scan().to_arrow().to_pylist()
    for writer, month in enumerate(MONTHS):
        values = sorted(row["value"] for row in rows if f"{row['date']:%Y-%m}" == month)
        assert values == round_values(writer, ROUNDS - 1), month
    assert len(rows) == ROWS_PER_ROUND * len(MONTHS)

    # main's history holds every publication once, as the snapshot its writer reported.
    main_history = []
    snapshot = table.current_snapshot()
    while snapshot is not None:
        main_history.append(snapshot.snapshot_id)
        snapshot = table.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    published = [entry["published"] for writer in rounds for entry in writer]
    assert len(set(published)) == len(published) == len(MONTHS) * ROUNDS
    assert set(published) <= set(main_history)
    writes_on_main = [
        snapshot_id
        for snapshot_id in main_history
        if {PARTITION_PROPERTY, CHERRY_PICK_SOURCE} & _properties(table, snapshot_id).keys()
    ]
    assert sorted(writes_on_main) == sorted(published)
    # No staged branch is left behind.
    assert set(table.metadata.refs) == {"main"}

    ours = sum(writer.stderr.count(LOST_COMMIT_RACE) for writer in writers)
    iceberg = sum(writer.stderr.count(ICEBERG_RETRY) for writer in writers)
    print(
        f"\n{len(MONTHS)} writers x {ROUNDS} rounds on one table: {len(published)} publications landed; "
        f"retried after a lost race: {ours} branch operations (by the project), {iceberg} data commits (by Iceberg)"
    )


def _properties(table, snapshot_id: int) -> dict[str, str]:
    return table.snapshot_by_id(snapshot_id).summary.additional_properties or {}


def _what_failed(stderr: str) -> str:
    """The Python frames and the Java exceptions of a writer's traceback, without the JVM's stack frames."""
    return "\n".join(line for line in stderr.splitlines() if not line.startswith(("\tat ", "\t... ")))[-6000:]
