"""Several writers publishing months of one Iceberg table at once, on a PostgreSQL catalog of their own.

    ./run python -m tests.publication_race HOME OUT.json

Starts PostgreSQL in ``HOME``, runs one :mod:`tests.publication_writer` per month at once (each its own process
and Spark session, as concurrent Dagster runs are; the table starts absent, so the first rounds also race to create
it), stops PostgreSQL and writes each writer's exit code, output and errors to OUT.json. The catalog's data stays in
``HOME``: :mod:`tests.test_concurrent_publication` starts PostgreSQL on it again to read what landed. A Ctrl-C (the
lane's SIGINT to the process group) reaches the writers too, and PostgreSQL is stopped on the way out.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from taxi_core.settings import PROJECT_ROOT
from taxi_demo.local_cluster.postgres_server import LocalPostgres
from taxi_demo.local_cluster.services import free_port
from tests.cluster_rig import profile_environment

TABLE = "publication_race"
MONTHS = ["2024-05", "2024-06", "2024-07"]
ROUNDS = 12
CATALOG_DATABASE = "iceberg"
WRITER_SECONDS = 900


def catalog_environment(home: Path, postgres: LocalPostgres) -> dict[str, str]:
    """The environment of a process on the race's catalog: the writers', and the test's reading it afterwards."""
    catalog = {"TAXI_CATALOG": "postgres", "TAXI_CATALOG_URL": postgres.url(CATALOG_DATABASE)}
    # One core each: the writers race on the catalog, not for the machine's cores.
    return profile_environment(home) | catalog | {"TAXI_SPARK_MASTER": "local[1]"}


def race(home: Path) -> list[dict[str, object]]:
    postgres = LocalPostgres(home / "postgres", free_port())
    server = postgres.start([CATALOG_DATABASE])
    try:
        env = catalog_environment(home, postgres)
        writers = [
            subprocess.Popen(
                [sys.executable, "-m", "tests.publication_writer", TABLE, month, str(writer), str(ROUNDS)],
                env=env,
                cwd=PROJECT_ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for writer, month in enumerate(MONTHS)
        ]
        done = []
        for writer in writers:
            stdout, stderr = writer.communicate(timeout=WRITER_SECONDS)
            done.append({"returncode": writer.returncode, "stdout": stdout, "stderr": stderr})
        return done
    finally:
        postgres.stop(server)


if __name__ == "__main__":
    found = race(Path(sys.argv[1]))
    Path(sys.argv[2]).write_text(json.dumps(found))
