"""Drive the Dagster ingestion job against a served sample source, as the tests need it."""

from __future__ import annotations

from dataclasses import dataclass, field

from dagster import AssetKey, DagsterInstance
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from forecast_assets.definitions import build_definitions, resources_for
from forecast_assets.resources import SourceResource
from taxi_core.settings import Settings
from taxi_demo.sample_source import source_folders


@dataclass
class Pipeline:
    instance: DagsterInstance
    base_url: str
    settings: Settings
    first_runs: dict = field(default_factory=dict)

    def definitions(self, base_url: str | None = None, **source_settings):
        base = base_url or self.base_url
        resources = resources_for(self.settings)
        source = SourceResource(
            base_urls={name: f"{base}/{folder}" for name, folder in source_folders().items()},
            download_dir=resources["source"].download_dir,
            **source_settings,
        )
        return build_definitions(self.settings, resources | {"source": source})

    def run(self, partition_key: str, base_url: str | None = None, run_config: dict | None = None, **source_settings):
        return self.run_job("monthly_ingestion", partition_key, base_url, run_config, **source_settings)

    def run_job(
        self,
        job_name: str,
        partition_key: str | None = None,
        base_url: str | None = None,
        run_config: dict | None = None,
        **source_settings,
    ):
        job = self.definitions(base_url, **source_settings).resolve_job_def(job_name)
        return job.execute_in_process(
            partition_key=partition_key, instance=self.instance, run_config=run_config, raise_on_error=False
        )

    def run_range(self, first: str, last: str, base_url: str | None = None, run_config: dict | None = None):
        """One run of ``monthly_ingestion`` over every month from ``first`` to ``last`` (partition keys), as a
        single-run backfill launches it."""
        job = self.definitions(base_url).resolve_job_def("monthly_ingestion")
        tags = {ASSET_PARTITION_RANGE_START_TAG: first, ASSET_PARTITION_RANGE_END_TAG: last}
        return job.execute_in_process(tags=tags, instance=self.instance, run_config=run_config, raise_on_error=False)

    def latest_metadata(self, key: str) -> dict:
        event = self.instance.get_latest_materialization_event(AssetKey(key.replace(".", "/").split("/")))
        return event.asset_materialization.metadata
