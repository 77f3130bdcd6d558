"""An S3-compatible object store as an archive of the events: one gzipped JSON-lines object per batch.

The archive keeps its own place: objects are named by the outbox they come from and the range of
queue positions they hold (``{prefix}/{outbox id}/{first:012d}-{last:012d}.jsonl.gz``), so the
sink's place is the highest range written, read back from the store. An object is written whole or
not at all, so what was sent and the place move together; a replay writes the same object again.
A rebuilt outbox (a new id) is archived again in full, under its own folder. The place is also noted
in the outbox, so the idle check needs no request to the store.
"""

from __future__ import annotations

import gzip
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pydantic import field_validator

from bridge.errors import BridgeError
from bridge.outbox.queue import QueuedEvent
from bridge.sinks.contract import Sink, SinkConfig, SinkContext

log = logging.getLogger(__name__)

CREDENTIALS_SETTING = (
    "the AWS credentials boto3 finds (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE or an instance role)"
)
OBJECT_NAME = re.compile(r"(\d{12})-(\d{12})\.jsonl\.gz$")


class NotAnArchiveUrl(BridgeError, ValueError):
    """An archive's URL that names no bucket (a ValueError too, so the sink's options refuse it by name)."""


class ObjectStoreError(BridgeError):
    """The store refused or failed a request; ``status`` is its HTTP status, for :mod:`bridge.sinks.failures`."""

    def __init__(self, message: str, status: int | None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ArchiveLocation:
    bucket: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> ArchiveLocation:
        parts = urlsplit(url)
        if parts.scheme != "s3" or not parts.netloc:
            msg = f"lineage archive {url!r}: use s3://bucket/prefix (an S3 or S3-compatible bucket)"
            raise NotAnArchiveUrl(msg)
        return cls(parts.netloc, parts.path.strip("/"))

    def folder(self, outbox_id: str) -> str:
        return "/".join(part for part in (self.prefix, outbox_id) if part) + "/"

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")


class ObjectStoreConfig(SinkConfig):
    url: str  # s3://bucket/prefix
    endpoint_url: str = ""  # an S3-compatible store's endpoint; empty: AWS
    region: str = ""

    @field_validator("url")
    @classmethod
    def _an_s3_url(cls, url: str) -> str:
        ArchiveLocation.parse(url)
        return url


class ObjectStoreSink(Sink[ObjectStoreConfig]):
    """Batches of events as objects in a bucket (see the module), through a boto3 S3 client made on first use."""

    Config = ObjectStoreConfig
    credentials_setting = CREDENTIALS_SETTING
    target_setting = "the archive's URL and endpoint (TAXI_LINEAGE_ARCHIVE, S3_ENDPOINT_URL)"

    def __init__(self, config: ObjectStoreConfig, context: SinkContext) -> None:
        super().__init__(config, context)
        self.location = ArchiveLocation.parse(config.url)
        self.folder = self.location.folder(self.outbox.id)
        self.name = f"object-store {self.location}"
        endpoint_url = config.endpoint_url
        self.target = f"object store {self.location}" + (f" at {endpoint_url}" if endpoint_url else "")
        self._client: Any = None
        self._durable: int | None = None
        self._buffer: list[str] = []
        self._first: int | None = None
        self._last: int | None = None
        self._objects = 0

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = _s3_client(self.config)
        return self._client

    def position(self) -> int:
        if self._durable is None:
            self._durable = self._last_written()
        return self._durable

    def advance(self, seq: int) -> None:
        self._first = seq if self._first is None else self._first
        self._last = seq

    def _last_written(self) -> int:
        last = 0
        for page in self._call("list", self.client.get_paginator("list_objects_v2").paginate,
                               Bucket=self.location.bucket, Prefix=self.folder):  # fmt: skip
            for item in page.get("Contents", []):
                found = OBJECT_NAME.search(item["Key"])
                if found:
                    last = max(last, int(found.group(2)))
        return last

    def send(self, event: QueuedEvent, seconds_left: float) -> bool:
        self._buffer.append(event.payload)
        self._first = event.seq if self._first is None else self._first
        return True

    def flush(self) -> None:
        if self._last is None or self._last <= self.position():
            self._reset()
            return
        key = f"{self.folder}{self._first:012d}-{self._last:012d}.jsonl.gz"
        body = gzip.compress("".join(line + "\n" for line in self._buffer).encode(), mtime=0)
        try:
            self._call("write", self.client.put_object, Bucket=self.location.bucket, Key=key, Body=body,
                       ContentType="application/x-ndjson", ContentEncoding="gzip")  # fmt: skip
        finally:
            sent_up_to = self._last
            self._reset()
        self._durable = sent_up_to
        self.outbox.places.move(self.name, sent_up_to)
        self._objects += 1

    def _reset(self) -> None:
        self._buffer, self._first, self._last = [], None, None

    def _call(self, what: str, request: Callable[..., Any], **arguments: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError  # boto3 loads only for a configured archive

        try:
            return request(**arguments) if what == "write" else list(request(**arguments))
        except ClientError as err:
            status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            code = err.response.get("Error", {}).get("Code", "")
            missing = code == "NoSuchBucket"
            hint = f"; create the bucket {self.location.bucket} or fix the archive URL" if missing else ""
            msg = f"{self.target} refused to {what} ({code}: {err}){hint}"
            # A missing bucket is a setting to fix, not an event to park: the whole sink waits for it.
            raise ObjectStoreError(msg, None if missing else status) from err
        except BotoCoreError as err:
            raise ObjectStoreError(f"{self.target} cannot be reached to {what}: {err}", None) from err

    @classmethod
    def set_aside(cls, config: ObjectStoreConfig, context: SinkContext, name: str) -> str:
        """An archive is never deleted from: its place is read back from the store, so what it holds stays."""
        super().set_aside(config, context, name)
        return f"{name} keeps the objects it holds (an archive is never deleted from); what it lacks is written next"

    def detail(self) -> str:
        return f"{self._objects} objects written" if self._objects else ""

    def close(self) -> None:
        self._reset()


def _s3_client(config: ObjectStoreConfig) -> Any:
    import boto3  # loads only when an archive is configured: a pass without one never imports it
    from botocore.config import Config  # with boto3

    # One attempt per request: the drain judges failures and retries with its own backoff.
    settings = Config(retries={"total_max_attempts": 1}, connect_timeout=5, read_timeout=60)
    return boto3.client(
        "s3", endpoint_url=config.endpoint_url or None, region_name=config.region or None, config=settings
    )
