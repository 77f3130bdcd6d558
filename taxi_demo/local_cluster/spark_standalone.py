"""A Spark standalone master and workers on 127.0.0.1, started from the pyspark distribution's own ``spark-class``."""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taxi_demo.local_cluster.services import Service, ServiceFailed, free_port, port_is_free

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
START_SECONDS = 90.0


def spark_home() -> Path:
    import pyspark  # only to find its folder, when a cluster starts: the CLI's other commands skip py4j

    home = Path(pyspark.__file__).parent
    if not (home / "bin" / "spark-class").exists():
        raise ServiceFailed(f"{home} has no bin/spark-class: reinstall pyspark (the wheel ships it)")
    return home


@dataclass
class Worker:
    service: Service
    port: int
    webui_port: int

    @property
    def worker_id_suffix(self) -> str:
        """Master's ids for workers end in ``-127.0.0.1-PORT``."""
        return f"-127.0.0.1-{self.port}"


@dataclass
class SparkStandalone:
    """A master and ``workers`` workers of ``cores`` cores each, their work folders and logs in ``folder``."""

    folder: Path
    port: int = 7077
    webui_port: int = 8080
    workers: int = 2
    cores: int = 1
    memory: str = "2g"
    master: Service | None = None
    running_workers: list[Worker] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    @property
    def webui(self) -> str:
        return f"http://127.0.0.1:{self.webui_port}"

    def start(self) -> None:
        for port, what in ((self.port, "TAXI_CLUSTER_SPARK_PORT"), (self.webui_port, "TAXI_CLUSTER_SPARK_UI_PORT")):
            if not port_is_free(port):
                raise ServiceFailed(
                    f"the Spark master cannot listen on 127.0.0.1:{port}: the port is taken; set {what}"
                )
        home = spark_home()
        spark_class = str(home / "bin" / "spark-class")
        # Every process, web UIs included, binds to loopback (Spark binds its UIs to SPARK_LOCAL_IP).
        env = {"SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_PUBLIC_DNS": "127.0.0.1"}
        try:
            self.master = Service.start(
                "the Spark master",
                [spark_class, MASTER_CLASS, "--host", "127.0.0.1", "--port", str(self.port),
                 "--webui-port", str(self.webui_port)],
                self.folder / "master" / "master.log",
                env=env,
            )  # fmt: skip
            self.master.wait_until(self._master_alive, START_SECONDS, f"serving {self.webui}")
            for number in range(1, self.workers + 1):
                self.running_workers.append(self._start_worker(number, spark_class, env))
            self.master.wait_until(
                lambda: self.status().get("aliveworkers") == self.workers,
                START_SECONDS,
                f"joined by {self.workers} workers (see {self.folder}/worker-*/worker.log)",
            )
        except BaseException:
            self.stop()
            raise

    def _start_worker(self, number: int, spark_class: str, env: dict[str, str]) -> Worker:
        folder = self.folder / f"worker-{number}"
        port, webui_port = free_port(), free_port()
        service = Service.start(
            f"Spark worker {number}",
            [spark_class, WORKER_CLASS, self.url, "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(webui_port), "--cores", str(self.cores), "--memory", self.memory,
             "--work-dir", str(folder / "work")],
            folder / "worker.log",
            env=env | {"SPARK_LOCAL_DIRS": str(folder / "local")},
        )  # fmt: skip
        return Worker(service, port, webui_port)

    def status(self) -> dict[str, Any]:
        """The master's own summary (``/json``): workers, cores in use, applications."""
        try:
            with urllib.request.urlopen(f"{self.webui}/json/", timeout=2) as response:
                summary: dict[str, Any] = json.load(response)
                return summary
        except OSError:
            return {}

    def _master_alive(self) -> bool:
        return self.status().get("status") == "ALIVE"

    def busy_workers(self) -> list[Worker]:
        """The workers running an executor now."""
        busy = {entry["id"] for entry in self.status().get("workers", []) if entry.get("coresused")}
        return [worker for worker in self.running_workers if any(i.endswith(worker.worker_id_suffix) for i in busy)]

    def stop(self) -> None:
        for worker in self.running_workers:
            worker.service.stop()
        if self.master is not None:
            self.master.stop()
