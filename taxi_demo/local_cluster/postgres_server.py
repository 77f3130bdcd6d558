"""A PostgreSQL server on 127.0.0.1 with its data directory in the state folder: Dagster's storage and the catalog."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import psycopg2

from taxi_demo.local_cluster.services import Service, ServiceFailed, port_is_free

USER = "taxi"
# Debian's server binaries are not on PATH; the newest installed major version is used.
DEBIAN_BINARIES = Path("/usr/lib/postgresql")
INSTALL_HINT = "install PostgreSQL's server (Debian: apt-get install postgresql; `./run` does it for the profile)"
# PostgreSQL refuses to run as root; as root the profile runs it as the account Debian's package creates.
SERVER_ACCOUNT_FOR_ROOT = "postgres"
START_SECONDS = 60.0


def server_binaries() -> Path:
    found = shutil.which("postgres") or shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    versions = sorted(DEBIAN_BINARIES.glob("*/bin/postgres"), key=lambda path: int(path.parts[-3]))
    if versions:
        return versions[-1].parent
    raise ServiceFailed(f"PostgreSQL's server binaries (postgres, initdb) were not found: {INSTALL_HINT}")


@dataclass
class LocalPostgres:
    """One server: ``initdb`` on first use, then ``postgres`` on ``port``, reachable over TCP on 127.0.0.1 only."""

    folder: Path
    port: int

    @property
    def data_dir(self) -> Path:
        return self.folder / "data"

    @property
    def log(self) -> Path:
        return self.folder / "postgres.log"

    def url(self, database: str, scheme: str = "postgresql") -> str:
        return f"{scheme}://{USER}@127.0.0.1:{self.port}/{database}"

    def start(self, databases: Iterable[str]) -> Service:
        binaries = server_binaries()
        account = _server_account()
        if not port_is_free(self.port):
            msg = (
                f"PostgreSQL cannot listen on 127.0.0.1:{self.port}: the port is taken; set TAXI_CLUSTER_POSTGRES_PORT"
            )
            raise ServiceFailed(msg)
        self.folder.mkdir(parents=True, exist_ok=True)
        if not (self.data_dir / "PG_VERSION").exists():
            self._initdb(binaries, account)
        server = Service.start(
            "PostgreSQL",
            [
                str(binaries / "postgres"),
                "-D", str(self.data_dir),
                "-c", "listen_addresses=127.0.0.1",
                "-c", f"port={self.port}",
                # TCP only: no socket file in /var/run/postgresql, which a user may not write.
                "-c", "unix_socket_directories=",
            ],
            self.log,
            user=account,
        )  # fmt: skip
        try:
            server.wait_until(self._accepts_connections, START_SECONDS, f"accepting connections on port {self.port}")
            self._create_databases(databases)
        except BaseException:
            self.stop(server)
            raise
        return server

    @staticmethod
    def stop(server: Service) -> None:
        server.stop(signal.SIGINT)  # PostgreSQL's "fast" shutdown: roll back open transactions, then stop

    def _initdb(self, binaries: Path, account: str | None) -> None:
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        if account:
            _hand_over(self.folder, account)
        command = [
            str(binaries / "initdb"),
            "-D", str(self.data_dir),
            "-U", USER,
            # Connections come from 127.0.0.1 only (listen_addresses); a shared server would use passwords.
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
            "--no-instructions",
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, user=account, check=False)
        if done.returncode != 0:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            raise ServiceFailed(f"initdb of {self.data_dir} failed: {(done.stderr or done.stdout).strip()}")

    def _connect(self, database: str = "postgres") -> psycopg2.extensions.connection:
        return psycopg2.connect(host="127.0.0.1", port=self.port, user=USER, dbname=database, connect_timeout=2)

    def _accepts_connections(self) -> bool:
        try:
            self._connect().close()
        except psycopg2.OperationalError:
            return False
        return True

    def _create_databases(self, databases: Iterable[str]) -> None:
        connection = self._connect()
        connection.autocommit = True  # CREATE DATABASE cannot run in a transaction
        try:
            with connection.cursor() as cursor:
                for database in databases:
                    cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,))
                    if cursor.fetchone() is None:
                        cursor.execute(f'CREATE DATABASE "{database}"')
        finally:
            connection.close()


def _server_account() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SERVER_ACCOUNT_FOR_ROOT)
    except KeyError:
        msg = (
            f"PostgreSQL refuses to run as root and there is no {SERVER_ACCOUNT_FOR_ROOT!r} account to run it as: "
            f"run as a normal user, or {INSTALL_HINT}"
        )
        raise ServiceFailed(msg) from None
    return SERVER_ACCOUNT_FOR_ROOT


def _hand_over(folder: Path, account: str) -> None:
    """Give the server's folder to ``account`` and check it can reach it through every parent."""
    entry = pwd.getpwnam(account)
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, entry.pw_uid, entry.pw_gid)
    for parent in folder.parents:
        if not os.stat(parent).st_mode & 0o001:
            msg = (
                f"PostgreSQL runs as {account!r} (it refuses root), and {account!r} cannot enter {parent}: "
                f"run as a normal user, keep the state folder where other accounts can pass (chmod o+x {parent}), "
                "or set TAXI_STATE_DIR"
            )
            raise ServiceFailed(msg)
