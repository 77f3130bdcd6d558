"""What goes wrong for a user of the bridge is a bridge error naming the thing and the fix, of its built-in kind."""

import pytest
from dagster import build_sensor_context
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import NestedField, StringType

from bridge.config import SinkSpec
from bridge.errors import BridgeError
from bridge.outbox.letters import describe_event
from bridge.outbox.queue import UnreadableEvent, event_document
from bridge.run.sensor import SensorWithoutRepository, _asset_graph
from bridge.sinks.contract import SinkMisconfigured
from bridge.sinks.object_store import ArchiveLocation, NotAnArchiveUrl
from bridge.sinks.registry import config_of
from bridge.sources.iceberg_contents import SnapshotNotFound, partitions_read

EVENT = '{"eventType": "START", "run": {"runId": "r1"}, "job": {"namespace": "shop", "name": "orders"}}'


@pytest.mark.parametrize("payload", ["", "not json", "[1, 2]", '"text"', '{"run": {"runId": "r1"}}', '{"run": []}'])
def test_a_queued_payload_that_is_not_a_run_event_is_unreadable(payload):
    with pytest.raises(UnreadableEvent, match="not an OpenLineage run event") as raised:
        event_document(payload)
    assert isinstance(raised.value, BridgeError) and isinstance(raised.value, ValueError)
    assert describe_event(payload) == "? (unreadable event) run ?"


def test_a_run_event_is_read_with_its_run_and_job():
    assert event_document(EVENT)["job"]["name"] == "orders"
    assert describe_event(EVENT) == "START shop/orders run r1"


def test_an_archive_url_that_names_no_bucket_is_refused_by_its_option():
    with pytest.raises(NotAnArchiveUrl, match="use s3://bucket/prefix"):
        ArchiveLocation.parse("https://example.com/lineage")
    with pytest.raises(SinkMisconfigured, match="option url: .*use s3://bucket/prefix"):
        config_of(SinkSpec("object-store", {"url": "lineage"}))


def test_a_sensor_evaluated_without_its_repository_says_how_to_give_it_one():
    with pytest.raises(SensorWithoutRepository, match=r"build_sensor_context\(instance=\.\.\., definitions=defs\)"):
        _asset_graph(build_sensor_context())


def test_a_snapshot_the_table_does_not_have_is_named_with_the_table(tmp_path):
    catalog = SqlCatalog("lake", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=tmp_path.as_uri())
    catalog.create_namespace("shop")
    schema = Schema(NestedField(1, "day", StringType(), required=False))
    spec = PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "day"))
    table = catalog.create_table("shop.orders", schema, partition_spec=spec)
    with pytest.raises(SnapshotNotFound, match="shop.orders has no snapshot 42: pass the snapshot the scan read"):
        partitions_read(table, 42)
