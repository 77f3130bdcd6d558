"""The downloader over real HTTP on loopback and over file://: skip unchanged, name what is missing."""

import pytest

from forecast_assets.sources.download import SourceMissing, fetch_if_changed, source_version
from forecast_assets.sources.stage import stage_file
from forecast_assets.sources.staging import LocalStaging
from forecast_assets.sources.tlc_format import trip_file_name
from forecast_assets.sources.verify import verify_trip_file


def _stage(url, staging, tmp_path):
    return stage_file(
        url,
        "taxi/" + url.rsplit("/", 1)[-1],
        staging,
        lambda p: verify_trip_file(p, url),
        tmp_path / "work",
        progress=lambda message: None,
    )


def test_http_download_is_skipped_when_the_source_is_unchanged(sample_server, tmp_path):
    staging = LocalStaging(tmp_path / "staging")
    url = f"{sample_server}/trip-data/{trip_file_name('2025-01')}"
    first = _stage(url, staging, tmp_path)
    second = _stage(url, staging, tmp_path)
    assert first.downloaded and first.content_changed and first.record.rows > 0
    assert not second.downloaded
    assert second.record == first.record


def test_file_url_download_is_skipped_when_unchanged(sample_source, tmp_path):
    staging = LocalStaging(tmp_path / "staging")
    url = f"{sample_source.trip_base_url}/{trip_file_name('2024-12')}"
    assert _stage(url, staging, tmp_path).downloaded
    assert not _stage(url, staging, tmp_path).downloaded


def test_a_changed_source_is_fetched_again(sample_source, tmp_path):
    staging = LocalStaging(tmp_path / "staging")
    url = f"{sample_source.trip_base_url}/{trip_file_name('2024-12')}"
    first = _stage(url, staging, tmp_path)
    previous = first.record.__class__(**{**first.record.__dict__, "last_modified": "Mon, 01 Jan 2024 00:00:00 GMT"})
    refetched = fetch_if_changed(url, previous, tmp_path / "again")
    assert refetched is not None and refetched.record.fingerprint == first.record.fingerprint


@pytest.mark.parametrize("scheme", ["http", "file"])
def test_a_missing_month_raises_source_missing(scheme, sample_server, sample_source, tmp_path):
    base = sample_server + "/trip-data" if scheme == "http" else sample_source.trip_base_url
    url = f"{base}/{trip_file_name('2031-05')}"
    with pytest.raises(SourceMissing, match="yellow_tripdata_2031-05.parquet"):
        fetch_if_changed(url, None, tmp_path)
    assert source_version(url) is None


def test_source_version_sees_a_published_file(sample_server):
    assert source_version(f"{sample_server}/trip-data/{trip_file_name('2025-01')}")
