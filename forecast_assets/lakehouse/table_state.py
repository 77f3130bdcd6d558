"""An Iceberg table's refs, snapshots and properties as Spark's catalog holds them now.

Read from the table object Spark's catalog loads (a catalog lookup and one metadata file: a few
milliseconds), not by querying the ``refs`` and ``snapshots`` metadata tables, each of which is a
Spark job of 30-50 ms; write-audit-publish asks a dozen times per month. Values cross from the JVM
in small answers: a py4j answer over about 8 KB waits some 40 ms on the socket, so a snapshot is
fetched as its own JSON, never the table's whole metadata.
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from forecast_assets.lakehouse.table_reading import Snapshot

NOT_FOUND = ("TABLE_OR_VIEW_NOT_FOUND", "SCHEMA_NOT_FOUND")


class TableState:
    """One load of a table through Spark's catalog: what its metadata said at that moment (a :class:`TableReading`)."""

    def __init__(self, spark: SparkSession, table: Any) -> None:
        self._jvm = jvm(spark)
        self._table = table

    def refresh(self) -> TableState:
        """Read the table's metadata again after a commit, through the table already loaded: no catalog lookup."""
        self._table.refresh()
        return self

    def ref(self, name: str) -> int | None:
        """The snapshot the branch or tag ``name`` points at; None if there is no such ref."""
        ref = self._table.refs().get(name)
        return None if ref is None else int(ref.snapshotId())

    def branches(self, prefix: str = "") -> list[str]:
        """The table's branches whose names start with ``prefix``, sorted."""
        refs = self._table.refs()
        names = str(self._jvm.java.lang.String.join("\n", refs.keySet())).split("\n")
        return sorted(name for name in names if name.startswith(prefix) and refs.get(name).isBranch())

    def snapshot(self, snapshot_id: int) -> Snapshot | None:
        found = self._table.snapshot(snapshot_id)
        if found is None:
            return None
        data = json.loads(self._jvm.org.apache.iceberg.SnapshotParser.toJson(found))
        summary = {key: value for key, value in data.get("summary", {}).items() if key != "operation"}
        return Snapshot(int(data["snapshot-id"]), data.get("parent-snapshot-id"), summary)

    def schema_json(self) -> str:
        """The current schema as Iceberg's JSON, in one answer."""
        return str(self._jvm.org.apache.iceberg.SchemaParser.toJson(self._table.schema()))

    def property(self, key: str) -> str | None:
        """A table property, as written: Spark's ``SHOW TBLPROPERTIES`` hides any value mentioning a token."""
        value = self._table.properties().get(key)
        return None if value is None else str(value)


def jvm(spark: SparkSession) -> Any:
    """The session's JVM gateway (py4j, untyped); a session built in this process always has one."""
    gateway = spark._jvm
    if gateway is None:  # an invariant: only a Spark Connect session has no JVM, and this project never builds one
        raise RuntimeError("This Spark session has no JVM gateway")
    return gateway


def table_state(spark: SparkSession, identifier: str) -> TableState | None:
    """The table ``identifier`` as the session's catalog loads it now; None if it does not exist."""
    try:
        table = jvm(spark).org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, identifier)
    except AnalysisException as error:
        if any(reason in str(error) for reason in NOT_FOUND):
            return None
        raise
    return TableState(spark, table)
