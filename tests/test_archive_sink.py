"""The object-store archive, a third sink added as a plugin: every event in order, one object per batch, in a
real S3 API server on loopback (moto); a store that is away or misconfigured waits and loses nothing, and the
other sinks go on without it."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from bridge.config import SinkSpec
from bridge.outbox.health import FAILING, HEALTHY
from bridge.sinks.drain import BATCH
from bridge.sinks.openlineage_client import make_client
from bridge.sinks.registry import BUILT_IN, UnknownSinkKind, kinds, sink_class
from tests.dagster_ui import free_port
from tests.delivery_rig import fill, one_pass, rig_bridge
from tests.loopback_lineage import identity


def archive_bridge(folder, endpoint: str, url: str):
    spec = SinkSpec("object-store", {"url": url, "endpoint_url": endpoint}, name="archive")
    return replace(rig_bridge(folder, lite=False), sinks=(SinkSpec("openlineage"), spec))


def test_every_event_is_archived_in_order_one_object_per_batch(folder, s3):
    queued = fill(folder, copies=3)
    result = one_pass(archive_bridge(folder, s3.endpoint, f"s3://{s3.bucket}/events"), make_client(folder / "e.jsonl"))

    keys, events = s3.archived()
    assert result.health == HEALTHY and result.sink("archive").sent == len(queued)
    assert [identity(e) for e in events] == [identity(e) for e in queued]
    assert len(keys) == -(-len(queued) // BATCH)  # one object per batch of the drain
    assert result.sink("archive").detail == f"{len(keys)} objects written"
    assert result.sink("openlineage").sent == len(queued)  # the other sinks are unchanged by a third


def test_a_replay_archives_nothing_twice(folder, s3):
    queued = fill(folder)
    bridge = archive_bridge(folder, s3.endpoint, f"s3://{s3.bucket}/events")
    one_pass(bridge, make_client(folder / "events.jsonl"))
    again = one_pass(bridge, make_client(folder / "events.jsonl"))  # a new sink: its place read from the store
    _, events = s3.archived()
    assert again.sink("archive").sent == 0 and again.sink("archive").pending == 0
    assert len(events) == len(queued)


def test_a_store_that_is_away_waits_and_loses_nothing(folder, s3):
    queued = fill(folder)
    url = f"s3://{s3.bucket}/events"
    away = one_pass(archive_bridge(folder, f"http://127.0.0.1:{free_port()}", url), make_client(folder / "e.jsonl"))
    assert away.health == FAILING and away.sink("archive").sent == 0
    assert away.sink("archive").pending == len(queued) and "cannot be reached" in away.sink("archive").waiting_on
    assert away.sink("openlineage").sent == len(queued)  # the OpenLineage target is not held up by the archive

    back = one_pass(archive_bridge(folder, s3.endpoint, url), make_client(folder / "e.jsonl"))
    assert back.health == HEALTHY
    assert [identity(e) for e in s3.archived()[1]] == [identity(e) for e in queued]


def test_a_missing_bucket_names_the_fix(folder, s3):
    fill(folder)
    result = one_pass(archive_bridge(folder, s3.endpoint, "s3://no-such-bucket/x"), make_client(folder / "e.jsonl"))
    assert result.health == FAILING and result.sink("archive").dead_letters == 0
    assert "create the bucket no-such-bucket" in result.sink("archive").waiting_on


def test_the_project_archives_when_told_where(monkeypatch, tmp_path):
    from forecast_assets.lineage import taxi_bridge
    from taxi_core.settings import SettingsError, load_settings

    environ = {"TAXI_STATE_DIR": str(tmp_path), "TAXI_S3_ENDPOINT_URL": "http://127.0.0.1:9000"}
    sinks = taxi_bridge(load_settings(environ)).sinks
    assert [(spec.kind, spec.key) for spec in sinks] == [("openlineage", "openlineage"), ("datahub-lite", "datahub")]
    bridge = taxi_bridge(load_settings(environ | {"TAXI_LINEAGE_ARCHIVE": "s3://lineage/taxi"}))
    (archive,) = [spec for spec in bridge.sinks if spec.kind == "object-store"]
    assert archive.options["url"] == "s3://lineage/taxi" and archive.options["endpoint_url"] == "http://127.0.0.1:9000"
    with pytest.raises(SettingsError, match="TAXI_LINEAGE_ARCHIVE"):
        load_settings(environ | {"TAXI_LINEAGE_ARCHIVE": "/tmp/archive"})


def test_an_unknown_sink_kind_names_the_known_ones():
    known = sorted(kinds())
    assert set(BUILT_IN) <= set(known) and {"openlineage", "datahub-lite", "object-store"} <= set(known)
    with pytest.raises(UnknownSinkKind, match=re.escape(f"use one of {', '.join(known)}")):
        sink_class("kafka")
