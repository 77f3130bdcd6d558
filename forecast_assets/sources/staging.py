"""The staging store for downloaded files: a local folder, or an S3 prefix."""

from __future__ import annotations

import tempfile
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from forecast_assets.sources.download import FetchRecord, copy_atomically
from taxi_core.files import write_atomically

RECORD_SUFFIX = ".fetch.json"


class Staging(ABC):
    """Staged files by name (``taxi/yellow_tripdata_2024-01.parquet``), each with its fetch record."""

    @abstractmethod
    def record(self, name: str) -> FetchRecord | None: ...

    @abstractmethod
    def put(self, local_file: Path, name: str, record: FetchRecord) -> None:
        """Store the file, then its record: a reader never sees a record without its file."""

    @abstractmethod
    def spark_path(self, name: str) -> str: ...

    @abstractmethod
    def local_copy(self, name: str, workdir: Path) -> Path: ...


class LocalStaging(Staging):
    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, name: str) -> Path:
        return self.root / name

    def record(self, name: str) -> FetchRecord | None:
        record_path = self._path(name + RECORD_SUFFIX)
        if not record_path.exists() or not self._path(name).exists():
            return None
        return FetchRecord.from_json(record_path.read_text())

    def put(self, local_file: Path, name: str, record: FetchRecord) -> None:
        copy_atomically(local_file, self._path(name))
        record_path = self._path(name + RECORD_SUFFIX)
        write_atomically(record_path, record.to_json())

    def spark_path(self, name: str) -> str:
        return self._path(name).resolve().as_uri()

    def local_copy(self, name: str, workdir: Path) -> Path:
        return self._path(name)


class S3Staging(Staging):
    def __init__(self, client: Any, bucket: str, prefix: str) -> None:  # a boto3 S3 client (boto3 ships no types)
        self.client, self.bucket, self.prefix = client, bucket, prefix.strip("/")

    def _key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def record(self, name: str) -> FetchRecord | None:
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self._key(name + RECORD_SUFFIX))["Body"]
        except self.client.exceptions.NoSuchKey:
            return None
        return FetchRecord.from_json(body.read().decode())

    def put(self, local_file: Path, name: str, record: FetchRecord) -> None:
        self.client.upload_file(str(local_file), self.bucket, self._key(name))
        self.client.put_object(Bucket=self.bucket, Key=self._key(name + RECORD_SUFFIX), Body=record.to_json().encode())

    def spark_path(self, name: str) -> str:
        return f"s3a://{self.bucket}/{self._key(name)}"

    def local_copy(self, name: str, workdir: Path) -> Path:
        target = Path(tempfile.mkdtemp(dir=workdir)) / Path(name).name
        self.client.download_file(self.bucket, self._key(name), str(target))
        return target


def parse_s3_location(location: str) -> tuple[str, str]:
    bucket, _, prefix = location.removeprefix("s3://").partition("/")
    return bucket, prefix
