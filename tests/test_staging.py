"""Where downloaded files are staged: on S3, each file and its fetch record land in the bucket, read back as written."""

import os

from forecast_assets.resources import StagingResource
from forecast_assets.sources.download import FetchRecord
from forecast_assets.sources.staging import RECORD_SUFFIX


def test_staging_on_s3_keeps_each_file_and_its_fetch_record_in_the_bucket(s3, tmp_path):
    staging = StagingResource(location=f"s3://{s3.bucket}/staging", s3_endpoint_url=s3.endpoint).store()
    name = "yellow/yellow_tripdata_2025-01.parquet"
    local = tmp_path / "downloaded.parquet"
    local.write_bytes(os.urandom(64 * 1024))
    record = FetchRecord(
        url="https://d37ci6vzurychx.cloudfront.net/trip-data/yellow_tripdata_2025-01.parquet",
        fingerprint="sha256:" + "0" * 64,
        size=local.stat().st_size,
        etag='"0f1e2d"',
        last_modified="Sat, 01 Mar 2025 00:00:00 GMT",
        fetched_at="2026-11-26T12:00:00+00:00",
        rows=1200,
    )
    assert staging.record(name) is None  # nothing staged yet: the next fetch downloads it

    staging.put(local, name, record)

    assert s3.keys() == [f"staging/{name}", f"staging/{name}{RECORD_SUFFIX}"]
    assert staging.record(name) == record
    assert staging.local_copy(name, tmp_path).read_bytes() == local.read_bytes()
    assert staging.spark_path(name) == f"s3a://{s3.bucket}/staging/{name}"
