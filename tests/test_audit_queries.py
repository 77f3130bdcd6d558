"""The audits' Spark queries against the same question answered by pyarrow on the same rows."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from forecast_assets.audits import Repeats, repeats

pytestmark = pytest.mark.integration

KEYS = ["zone", "hour", "fare"]
SCHEMA = "zone int, hour bigint, fare double"


@pytest.fixture(scope="module")
def spark():
    from forecast_assets.definitions import resources_for
    from taxi_core.settings import load_settings

    return resources_for(load_settings())["spark"].session


def _rows(seed: int, count: int, distinct_per_key: int, null_share: float) -> pa.Table:
    generator = np.random.default_rng(seed)

    def column(kind: pa.DataType) -> pa.Array:
        values = generator.integers(0, distinct_per_key, count)
        return pa.array(values, mask=generator.random(count) < null_share).cast(kind)

    return pa.table({"zone": column(pa.int32()), "hour": column(pa.int64()), "fare": column(pa.float64())})


def _pyarrow_repeats(rows: pa.Table) -> Repeats:
    counts = rows.group_by(KEYS, use_threads=False).aggregate([([], "count_all")])["count_all"]
    repeated = pc.filter(counts, pc.greater(counts, 1))
    return Repeats(len(repeated), pc.sum(repeated).as_py() or 0)


@pytest.mark.parametrize(
    ("seed", "distinct_per_key", "null_share"),
    [(1, 30, 0.0), (2, 12, 0.05), (3, 1_000_000, 0.0), (4, 2, 0.5)],
    ids=["some-repeats", "repeats-and-null-keys", "no-repeats", "nearly-all-repeats"],
)
def test_repeated_keys_are_counted_as_pyarrow_counts_them(spark, seed, distinct_per_key, null_share):
    rows = _rows(seed, 20_000, distinct_per_key, null_share)
    expected = _pyarrow_repeats(rows)
    as_spark = spark.createDataFrame(list(zip(*(c.to_pylist() for c in rows.columns), strict=True)), SCHEMA)
    assert repeats(as_spark, KEYS) == expected
