"""Long Spark work reports its progress while it runs, in Dagster's log."""

import time

import pytest
from pyspark.sql import SparkSession

from forecast_assets.lakehouse.spark_progress import reporting_progress

pytestmark = pytest.mark.integration


def test_a_month_write_logs_its_start_and_its_duration(pipeline):
    result = pipeline.first_runs["2024-12"]
    messages = [entry.user_message for entry in pipeline.instance.all_logs(result.run_id) if not entry.is_dagster_event]
    write = [message for message in messages if message.startswith("Writing nyc_taxi.raw_yellow 2024-12")]
    assert write[0].endswith("started"), write
    assert "done in" in write[-1], write


def test_a_long_spark_action_reports_its_stages_and_tasks(pipeline):
    spark = SparkSession.builder.getOrCreate()
    lines = []
    with reporting_progress(spark.sparkContext, lines.append, "Slow job", every=0.1):
        spark.sparkContext.parallelize(range(8), 8).foreach(lambda _: time.sleep(0.5))
    assert lines[0] == "Slow job: started" and lines[-1].startswith("Slow job: done in")
    assert any("tasks" in line and "/8 tasks" in line for line in lines[1:-1]), lines
