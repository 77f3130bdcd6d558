"""Two Dagster assets over CSV files (orders -> daily totals) and the model a Metaflow flow trains on them."""

import csv
import hashlib
from pathlib import Path

from dagster import AssetExecutionContext, AssetKey, AssetSpec, DataVersion, Definitions, MaterializeResult, asset

from bridge.config import LineageBridge, SinkSpec
from bridge.run.sensor import lineage_sensor
from bridge.translate.naming import Naming

FLOW = "ScoreFlow"
MODEL = "scores_model"


def naming(root: Path) -> Naming:
    """Every dataset of this project is a file under ``root``: named by its location."""
    return Naming(
        locations={
            "shop/orders": f"{root}/orders.csv",
            "shop/daily_totals": f"{root}/daily_totals.csv",
            MODEL: f"{root}/models/{MODEL}",
        },
        job_namespace="shop",
    )


def shop_bridge(root: Path) -> LineageBridge:
    return LineageBridge(
        naming=naming(root),
        lineage_dir=root / "lineage",
        flows=(FLOW,),
        code_location="shop",
        sinks=(SinkSpec("openlineage"), SinkSpec("datahub-lite", {"path": root / "lite.sqlite"}, "datahub")),
    )


def definitions(root: Path) -> Definitions:
    @asset(key=["shop", "orders"])
    def orders(context: AssetExecutionContext) -> MaterializeResult:
        """Orders placed, one row each."""
        rows = [("2026-01-01", 3), ("2026-01-01", 4), ("2026-01-02", 5)]
        with (root / "orders.csv").open("w", newline="") as handle:
            csv.writer(handle).writerows([("day", "amount"), *rows])
        return MaterializeResult(metadata={"dagster/row_count": len(rows)}, data_version=_version(rows))

    @asset(key=["shop", "daily_totals"], deps=[orders])
    def daily_totals(context: AssetExecutionContext) -> MaterializeResult:
        """The sum of each day's orders."""
        with (root / "orders.csv").open(newline="") as handle:
            totals: dict[str, int] = {}
            for row in csv.DictReader(handle):
                totals[row["day"]] = totals.get(row["day"], 0) + int(row["amount"])
        with (root / "daily_totals.csv").open("w", newline="") as handle:
            csv.writer(handle).writerows([("day", "total"), *sorted(totals.items())])
        return MaterializeResult(metadata={"dagster/row_count": len(totals)}, data_version=_version(totals.items()))

    model = AssetSpec(MODEL, deps=[daily_totals], description="Scores trained by ScoreFlow (Metaflow).")
    return Definitions(assets=[orders, daily_totals, model], sensors=[lineage_sensor(shop_bridge(root))])


def _version(rows) -> DataVersion:
    return DataVersion(hashlib.sha256(repr(sorted(rows)).encode()).hexdigest()[:12])


# The shop's two tables, and the instance setting that keeps its event log in one SQLite file (the tests
# compare it with Dagster's default, a file per run).
TABLES = [AssetKey(["shop", "orders"]), AssetKey(["shop", "daily_totals"])]
CONSOLIDATED = """
event_log_storage:
  module: dagster._core.storage.event_log
  class: ConsolidatedSqliteEventLogStorage
  config:
    base_dir: {home}/history
"""
