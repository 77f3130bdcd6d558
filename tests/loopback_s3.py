"""A real S3 API (moto's server) on 127.0.0.1 with a bucket of its own, for the tests that write to S3."""

from __future__ import annotations

import gzip
import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import boto3

from tests.dagster_ui import free_port

# Credentials only the loopback server accepts: nothing can reach a real account with them.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}


@dataclass(frozen=True)
class Store:
    endpoint: str
    client: object
    bucket: str

    def keys(self, prefix: str = "") -> list[str]:
        listing = self.client.list_objects_v2(Bucket=self.bucket, Prefix=prefix).get("Contents", [])
        return sorted(item["Key"] for item in listing)

    def archived(self, prefix: str = "events/") -> tuple[list[str], list[dict]]:
        """The lineage archive's objects, by key, and the events they hold in key order."""
        keys = self.keys(prefix)
        events = []
        for key in keys:
            body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
            events += [json.loads(line) for line in gzip.decompress(body).decode().splitlines()]
        return keys, events


@contextmanager
def s3_bucket() -> Iterator[Store]:
    """The server, started on a free port, and a new bucket in it (the credentials above must be set)."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client("s3", endpoint_url=endpoint)
    bucket = f"taxi-{uuid.uuid4().hex[:12]}"  # moto keeps its buckets per process, not per server
    client.create_bucket(Bucket=bucket)
    try:
        yield Store(endpoint, client, bucket)
    finally:
        server.stop()
