"""One writer of a shared Iceberg table: stage and publish its month again and again, as runs would.

Run as ``python -m tests.publication_writer TABLE MONTH WRITER ROUNDS`` with the catalog in the
environment (``TAXI_CATALOG``, ``TAXI_CATALOG_URL``); prints one JSON line per published round.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from datetime import timedelta

from forecast_assets.definitions import resources_for
from forecast_assets.lakehouse.publication import Publication
from forecast_assets.source_specs.noaa_weather import RAW_WEATHER
from taxi_core.months import MonthWindow
from taxi_core.settings import load_settings

ROWS_PER_ROUND = 3


def round_values(writer: int, round_number: int) -> list[float]:
    return [float(writer * 10_000 + round_number * 10 + row) for row in range(ROWS_PER_ROUND)]


def main(table: str, month: str, writer: int, rounds: int) -> None:
    spark = resources_for(load_settings())["spark"].session
    spec = replace(RAW_WEATHER, name=table)
    schema = ", ".join(f"{name} {kind}" for name, kind in spec.columns.items())
    window = MonthWindow.from_partition_key(f"{month}-01")
    for round_number in range(rounds):
        day = (window.start + timedelta(days=round_number % 28)).date()
        rows = spark.createDataFrame(
            [("36061", day, "PRCP", value) for value in round_values(writer, round_number)], schema
        )
        properties = {"dagster.partition": f"{month}-01", "writer": str(writer), "round": str(round_number)}
        publication = Publication.open(spark, spec, window, f"{month}-01")
        staged = publication.stage(rows, f"w{writer}r{round_number:03d}", properties)
        write = publication.publish(staged, lambda snapshot_id: {}).write
        print(json.dumps({"round": round_number, "staged": staged.write.snapshot_id, "published": write.snapshot_id}))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
