"""One lineage pass at a time: a lease in the outbox that expires, so a crashed pass never blocks the next.

A pass takes the lease (holder, a fencing token, an expiry), renews it as it works and gives it
back at the end. A second pass waits briefly for it, then says who holds it. A holder that died is
detected at once on the same machine (its process is gone), and elsewhere once the lease expires.
Every write that moves a sink checks the token (:meth:`bridge.outbox.database.Database.fenced`,
:meth:`bridge.outbox.places.SinkPlaces.move`).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from bridge.errors import BridgeError
from bridge.outbox.outbox import Outbox


class PassRunning(RuntimeError, BridgeError):
    """Another pass holds the lease."""


@dataclass(frozen=True)
class Holder:
    host: str
    pid: int
    nonce: str  # two passes in one process (overlapping sensor ticks) are two holders
    purpose: str

    @classmethod
    def me(cls, purpose: str) -> Holder:
        return cls(socket.gethostname(), os.getpid(), uuid.uuid4().hex[:8], purpose)

    @classmethod
    def parse(cls, text: str) -> Holder:
        host, pid, nonce, purpose = text.split(":", 3)
        return cls(host, int(pid), nonce, purpose)

    def __str__(self) -> str:
        return f"{self.host}:{self.pid}:{self.nonce}:{self.purpose}"

    def gone(self) -> bool:
        """True when the holder ran on this machine and its process no longer exists."""
        if self.host != socket.gethostname():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False


class PassLease:
    def __init__(self, outbox: Outbox, seconds: float, purpose: str) -> None:
        self.outbox, self.seconds, self.me = outbox, seconds, Holder.me(purpose)
        self.token: int | None = None

    def try_take(self) -> Holder | None:
        """Take the lease; the current holder when it is held and alive."""
        connection = self.outbox.connection
        now = time.time()
        connection.execute("BEGIN IMMEDIATE")
        try:
            row = connection.execute("SELECT holder, token, expires_at FROM lease WHERE name = 'pass'").fetchone()
            if row is not None:
                holder = Holder.parse(row[0])
                if row[2] > now and not holder.gone():
                    connection.execute("ROLLBACK")
                    return holder
            token = (row[1] if row else 0) + 1
            connection.execute(
                "INSERT INTO lease (name, holder, token, expires_at) VALUES ('pass', ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET holder = excluded.holder, token = excluded.token, "
                "expires_at = excluded.expires_at",
                (str(self.me), token, now + self.seconds),
            )
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        self.token = token
        self.outbox.fence = token
        return None

    def renew(self) -> None:
        self.renew_with(self.outbox)

    def renew_with(self, outbox: Outbox) -> None:
        """Renew through ``outbox``'s own connection (each sink's thread has one)."""
        expires = time.time() + self.seconds
        query = "UPDATE lease SET expires_at = ? WHERE name = 'pass' AND token = ?"
        outbox.connection.execute(query, (expires, self.token))

    def release(self) -> None:
        self.outbox.connection.execute("DELETE FROM lease WHERE name = 'pass' AND token = ?", (self.token,))
        self.outbox.fence = None


@contextmanager
def one_pass_at_a_time(outbox: Outbox, seconds: float, purpose: str, wait: float = 0.0) -> Iterator[PassLease]:
    """Hold the pass lease for the block; wait up to ``wait`` seconds for it, then :class:`PassRunning`."""
    lease = PassLease(outbox, seconds, purpose)
    give_up = time.monotonic() + wait
    while (holder := lease.try_take()) is not None:
        if time.monotonic() >= give_up:
            msg = f"another lineage pass is running ({holder.purpose}, process {holder.pid} on {holder.host})"
            raise PassRunning(msg)
        time.sleep(0.1)  # polling the lease: SQLite has no way to wait for a row to change
    try:
        if outbox.set_aside is not None:  # opened just before `rebuild` moved it: the new outbox is the one
            raise PassRunning(f"the outbox {outbox.path} was just set aside by a rebuild (as {outbox.set_aside})")
        yield lease
    finally:
        lease.release()
