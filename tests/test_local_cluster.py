"""The cluster profile's servers, without a JVM: how a service that fails to start is reported."""

from __future__ import annotations

import socket
import sys

import pytest

from taxi_core.catalog import CatalogConfig
from taxi_core.settings import load_settings
from taxi_demo.local_cluster.services import Service, ServiceFailed
from taxi_demo.local_cluster.spark_standalone import SparkStandalone


def test_a_service_that_dies_while_starting_is_named_with_its_log(tmp_path):
    log = tmp_path / "server.log"
    service = Service.start(
        "the test server", [sys.executable, "-c", "print('port 5 is mine'); raise SystemExit(3)"], log
    )
    with pytest.raises(ServiceFailed) as failure:
        service.wait_until(lambda: False, seconds=30, what="listening")
    message = str(failure.value)
    assert message.startswith("the test server exited with code 3 before it was listening")
    assert str(log) in message and "port 5 is mine" in message


def test_a_service_that_never_gets_ready_is_stopped_by_the_caller_and_named(tmp_path):
    service = Service.start(
        "the slow server", [sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "s.log"
    )
    try:
        with pytest.raises(ServiceFailed, match=r"the slow server was not ready after 0 s"):
            service.wait_until(lambda: False, seconds=0.3, what="ready")
    finally:
        service.stop()
    assert not service.alive()


def test_a_taken_port_names_the_setting_that_moves_it(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ServiceFailed, match=f"127.0.0.1:{port}: the port is taken; set TAXI_CLUSTER_SPARK_PORT"):
            SparkStandalone(tmp_path, port=port).start()


def test_the_postgres_catalog_comes_from_the_settings(tmp_path):
    settings = load_settings(
        environ={"TAXI_STATE_DIR": str(tmp_path), "TAXI_CATALOG": "postgres",
                 "TAXI_CATALOG_URL": "postgresql://taxi@127.0.0.1:54320/iceberg"}
    )  # fmt: skip
    config = CatalogConfig.from_settings(settings)
    assert (config.kind, config.url, config.warehouse) == (
        "postgres",
        "postgresql://taxi@127.0.0.1:54320/iceberg",
        str(tmp_path / "warehouse"),
    )
