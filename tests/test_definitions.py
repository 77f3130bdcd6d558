"""The code location loads, and its names follow the project's conventions."""

import re

import pandas as pd
import pytest
from dagster import AssetKey, build_sensor_context

from forecast_assets.automation import months_to_look_for, new_source_months_sensor, source_months_selection
from forecast_assets.config import ActualsConfig
from forecast_assets.definitions import build_definitions, defs, monthly_partitions
from forecast_assets.lakehouse.spark_session import SparkOptions, spark_conf
from forecast_assets.resources import SourceResource
from forecast_assets.source_specs.registry import registered_sources
from taxi_core.catalog import CatalogConfig, CatalogConfigError
from taxi_core.months import MonthWindow
from taxi_core.settings import load_settings
from taxi_demo.sample_source import SampleSource

# Every registered source's table, and the hourly actuals built from the yellow trips.
TABLES = [*(source.table.identifier for source in registered_sources()), "nyc_taxi.yellow_rides_hourly_actuals"]
MONTHLY = [source for source in registered_sources() if source.monthly]


@pytest.fixture(scope="module")
def definitions():
    return defs()


def test_table_asset_keys_are_the_iceberg_identifiers(definitions):
    keys = definitions.resolve_asset_graph().get_all_asset_keys()
    assert {AssetKey(t.split(".")) for t in TABLES} <= keys
    assert {AssetKey(source.file_asset) for source in registered_sources()} <= keys


def test_every_table_has_checks_and_every_asset_a_description(definitions):
    graph = definitions.resolve_asset_graph()
    checked = {check.asset_key for check in graph.asset_check_keys}
    assert {AssetKey(t.split(".")) for t in TABLES} <= checked
    for key in graph.get_all_asset_keys():
        assert graph.get(key).description, key


def test_every_asset_says_where_its_lineage_is(definitions, tmp_path, monkeypatch):
    """In one Markdown entry: the show command, the asset's own picture, its DataHub URN. The metadata table cuts
    long values off at a laptop's width, so nothing else goes there."""
    from bridge.translate.naming import dataset_urn_name

    graph = definitions.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        metadata = graph.get(key).metadata
        assert not {"lineage/show", "lineage/picture", "datahub/urn", "datahub/url"} & set(metadata), key
        markdown = metadata["lineage"].value
        named = re.search(r"`\./run taxi-lineage show (\S+)`", markdown)[1]
        own = re.sub(r"[^A-Za-z0-9._-]+", "_", named).strip("_")
        assert f"lineage/pictures/{own}.svg`" in markdown and "lineage/lineage_graph.svg`" in markdown, key
        # The command names the dataset as DataHub does (a table) or as OpenLineage does (a file's folder).
        urn = re.search(r"In DataHub: `(urn:li:dataset:\S+)`", markdown)[1]
        assert dataset_urn_name(urn).endswith(named.lstrip("/")), key
    monkeypatch.setenv("TAXI_DATAHUB", "rest")
    monkeypatch.setenv("DATAHUB_GMS_URL", "http://127.0.0.1:8080")
    with_gms = build_definitions(load_settings()).resolve_asset_graph()
    markdown = with_gms.get(AssetKey(["nyc_taxi", "raw_yellow"])).metadata["lineage"].value
    assert (
        "(http://127.0.0.1:8080/entities/urn%3Ali%3Adataset%3A%28urn%3Ali%3AdataPlatform%3Aiceberg%2Cnyc_taxi.raw_yellow%2CPROD%29)"
        in markdown
    )


def test_the_ingestion_job_covers_every_monthly_asset(definitions):
    job = definitions.resolve_job_def("monthly_ingestion")
    own = {AssetKey(source.file_asset) for source in MONTHLY} | {AssetKey(t.split(".")) for t in TABLES}
    published_once = {AssetKey(source.table.identifier.split(".")) for source in registered_sources()} - {
        AssetKey(source.table.identifier.split(".")) for source in MONTHLY
    }
    assert job.asset_layer.executable_asset_keys == own - published_once


def test_a_bad_top_zones_value_is_refused():
    with pytest.raises(Exception, match="top_zones"):
        ActualsConfig(top_zones=0)


def test_a_bad_catalog_kind_is_named():
    with pytest.raises(
        CatalogConfigError, match="TAXI_CATALOG='hive' is not a catalog kind; use one of sql, postgres, glue"
    ):
        CatalogConfig(kind="hive")  # type: ignore[arg-type]


def test_glue_catalog_needs_an_s3_warehouse():
    with pytest.raises(CatalogConfigError, match="s3://bucket/prefix"):
        CatalogConfig(kind="glue", warehouse="/tmp/warehouse")


def test_aws_mode_is_configuration_only(tmp_path):
    conf = spark_conf(
        CatalogConfig(kind="glue", warehouse="s3://lake/warehouse", aws_region="us-east-1"), state_dir=tmp_path
    )
    assert conf["spark.sql.catalog.lakehouse.type"] == "glue"
    assert conf["spark.sql.catalog.lakehouse.io-impl"] == "org.apache.iceberg.aws.s3.S3FileIO"
    assert "org.apache.iceberg:iceberg-aws-bundle" in conf["spark.jars.packages"]
    properties = CatalogConfig(
        kind="glue", warehouse="s3://lake/warehouse", aws_region="us-east-1"
    ).pyiceberg_properties()
    assert properties["type"] == "glue" and properties["glue.region"] == "us-east-1"


def test_spark_and_pyiceberg_open_the_same_postgres_catalog(tmp_path):
    config = CatalogConfig(
        kind="postgres", warehouse=str(tmp_path / "wh"), url="postgresql://taxi:s%40cret@db.example:6543/iceberg"
    )
    conf = spark_conf(config, tmp_path, SparkOptions(master="spark://spark-master:7077", cores_max=2))
    prefix = "spark.sql.catalog.lakehouse"
    assert conf[f"{prefix}.type"] == "jdbc"
    assert conf[f"{prefix}.uri"] == "jdbc:postgresql://db.example:6543/iceberg"
    assert (conf[f"{prefix}.jdbc.user"], conf[f"{prefix}.jdbc.password"]) == ("taxi", "s@cret")
    assert any(jar.endswith("postgresql.jar") for jar in conf["spark.jars"].split(",")) or (
        "org.postgresql:postgresql" in conf.get("spark.jars.packages", "")
    )
    properties = config.pyiceberg_properties()
    assert properties["uri"] == "postgresql+psycopg2://taxi:s%40cret@db.example:6543/iceberg"
    assert properties["warehouse"] == conf[f"{prefix}.warehouse"]
    # A remote master: the driver is not pinned to loopback, and a run takes at most its share of cores.
    assert "spark.driver.host" not in conf and conf["spark.cores.max"] == "2"
    # Lineage names the catalog without its credentials.
    assert config.uri_for_lineage == "iceberg+postgresql://db.example:6543/iceberg"


def test_the_postgres_catalog_needs_a_postgres_url():
    with pytest.raises(CatalogConfigError, match="TAXI_CATALOG_URL=postgresql://"):
        CatalogConfig(kind="postgres", url="sqlite:///x")


def test_local_spark_and_pyiceberg_open_the_same_catalog(tmp_path):
    config = CatalogConfig(kind="sql", warehouse=str(tmp_path / "wh"), sqlite_path=str(tmp_path / "c.sqlite"))
    conf = spark_conf(config, state_dir=tmp_path)
    assert conf["spark.sql.catalog.lakehouse.uri"] == f"jdbc:sqlite:{tmp_path / 'c.sqlite'}"
    assert config.pyiceberg_properties()["uri"] == f"sqlite:///{tmp_path / 'c.sqlite'}"
    assert conf["spark.sql.catalog.lakehouse.warehouse"] == config.pyiceberg_properties()["warehouse"]
    assert conf["spark.driver.host"] == "127.0.0.1"


def test_sensor_watches_months_after_the_newest_ingested():
    keys = ["2024-11-01", "2024-12-01", "2025-01-01", "2025-02-01"]
    assert months_to_look_for(keys, {"2024-11-01", "2024-12-01"}) == ["2025-01-01", "2025-02-01"]
    assert months_to_look_for(keys, set()) == ["2025-01-01", "2025-02-01"]
    assert months_to_look_for(keys, {"2025-02-01"}) == []


def _sensor_ticks(definitions, instance, resources) -> dict[str, list]:
    """Each monthly source's sensor's requests and skips, by source name."""
    months, assets = monthly_partitions(load_settings()), list(definitions.assets)
    ticks = {}
    for spec in MONTHLY:
        context = build_sensor_context(instance=instance, resources=resources)
        ticks[spec.name] = list(new_source_months_sensor(spec, months, assets)(context))
    return ticks


def test_each_source_s_sensor_requests_its_published_months_and_what_is_built_from_them(definitions, tmp_path):
    from dagster import DagsterInstance

    newest = monthly_partitions(load_settings()).get_last_partition_key()
    source = SampleSource(tmp_path, trips_per_month=2_000)
    source.write_month(newest[:7])
    resources = {"source": SourceResource(base_urls=source.base_urls, download_dir=str(tmp_path))}
    with DagsterInstance.ephemeral() as instance:
        ticks = _sensor_ticks(definitions, instance, resources)
    graph = definitions.resolve_asset_graph()
    for spec in MONTHLY:
        (request,) = ticks[spec.name]
        assert request.partition_key == newest
        # Its own file and table, and the monthly assets that read them (the graph's own account), no more.
        own = {AssetKey(spec.file_asset), AssetKey(spec.table.identifier.split("."))}
        monthly = graph.get(AssetKey(spec.file_asset)).partitions_def
        readers = {key for key in graph.get_all_asset_keys() if own & set(graph.get(key).parent_keys)}
        built = own | {key for key in readers if graph.get(key).partitions_def == monthly}
        assert set(request.asset_selection) == built == set(source_months_selection(spec, definitions.assets))


def test_a_source_waits_on_no_other(definitions, tmp_path):
    """A month whose trip file is out but whose weather is not yet: the trips are ingested, the weather waits."""
    from dagster import DagsterInstance, SkipReason

    newest = monthly_partitions(load_settings()).get_last_partition_key()
    source = SampleSource(tmp_path, trips_per_month=2_000)
    source.write_month(newest[:7])
    weather = next(spec for spec in MONTHLY if spec.name == "weather")
    for file in weather.files_for(MonthWindow.from_partition_key(newest)):
        (tmp_path / "nclimgrid-daily" / file.path).unlink()
    resources = {"source": SourceResource(base_urls=source.base_urls, download_dir=str(tmp_path))}
    with DagsterInstance.ephemeral() as instance:
        ticks = _sensor_ticks(definitions, instance, resources)
    assert [type(result) for result in ticks["weather"]] == [SkipReason]
    for spec in MONTHLY:
        if spec is not weather:
            assert [request.partition_key for request in ticks[spec.name]] == [newest], spec.name


def test_the_reference_sensor_asks_for_a_run_only_when_the_published_file_differs_from_the_staged_one(tmp_path):
    import os

    from dagster import DagsterInstance, RunRequest, SkipReason, materialize

    from forecast_assets.assets.source_files import source_file_asset
    from forecast_assets.automation import changed_reference_files_sensor
    from forecast_assets.resources import StagingResource
    from forecast_assets.source_specs.registry import source_named
    from taxi_demo.sample_source import ZONES_DIR

    source = SampleSource(tmp_path / "source", trips_per_month=2_000)
    source.write_standing_files()
    published = next((tmp_path / "source" / ZONES_DIR).iterdir())
    resources = {
        "source": SourceResource(base_urls=source.base_urls, download_dir=str(tmp_path / "downloads")),
        "staging": StagingResource(location=str(tmp_path / "staging")),
    }
    sensor = changed_reference_files_sensor(registered_sources())
    zone_files = source_file_asset(source_named("zones"), monthly_partitions(load_settings()))
    with DagsterInstance.ephemeral() as instance:

        def tick() -> list:
            return list(sensor(build_sensor_context(instance=instance, resources=resources)))

        never_staged = tick()
        assert materialize([zone_files], instance=instance, resources=resources).success  # a run stages the file
        staged = tick()
        later = published.stat().st_mtime + 60
        os.utime(published, (later, later))  # published again
        republished = tick()
    assert [type(result) for result in never_staged] == [RunRequest]
    assert [type(result) for result in staged] == [SkipReason]
    assert staged[0].skip_message == f"Published as staged last ({published.name}): nothing new to fetch"
    assert [type(result) for result in republished] == [RunRequest]
    assert republished[0].run_key != never_staged[0].run_key


def test_sensor_says_when_every_month_is_ingested(definitions, tmp_path):
    from dagster import AssetMaterialization, DagsterInstance, SkipReason

    months = monthly_partitions(load_settings())
    resources = {"source": SourceResource(base_urls={}, download_dir=str(tmp_path))}  # nothing is looked up
    with DagsterInstance.ephemeral() as instance:
        for spec in MONTHLY:
            for key in months.get_partition_keys():
                instance.report_runless_asset_event(AssetMaterialization(AssetKey(spec.file_asset), partition=key))
        ticks = _sensor_ticks(definitions, instance, resources)
    for spec in MONTHLY:
        (skipped,) = ticks[spec.name]
        assert isinstance(skipped, SkipReason)
        assert skipped.skip_message == (
            f"Every month up to {months.get_last_partition_key()} is ingested; no later month is a partition yet"
        )


def test_the_code_location_loads_as_dagster_dev_loads_it(definitions):
    from dagster import Definitions

    Definitions.validate_loadable(definitions)


def test_the_first_month_setting_shapes_the_partitions(monkeypatch):
    monkeypatch.setenv("TAXI_FIRST_MONTH", "2025-01")
    keys = build_definitions(load_settings()).resolve_job_def("monthly_ingestion").partitions_def.get_partition_keys()
    assert keys[0] == "2025-01-01"


def test_the_partitions_end_at_the_last_month_the_source_has(monkeypatch):
    monkeypatch.setenv("TAXI_FIRST_MONTH", "2024-12")
    monkeypatch.setenv("TAXI_LAST_MONTH", "2025-01")
    keys = build_definitions(load_settings()).resolve_job_def("monthly_ingestion").partitions_def.get_partition_keys()
    assert keys == ["2024-12-01", "2025-01-01"]


def test_the_daily_partitions_start_on_the_first_day_a_version_can_forecast(monkeypatch):
    """Six backtest weeks after at least two weeks of training: with actuals from December 1, a version trained with
    the flow's defaults forecasts from January 26 at the earliest, so December and most of January are no partitions
    to miss."""
    from flows.run_settings import LEAST_TRAINING, resolve_settings

    monkeypatch.setenv("TAXI_FIRST_MONTH", "2024-12")
    monkeypatch.setenv("TAXI_LAST_MONTH", "2025-02")
    definitions = build_definitions(load_settings())
    keys = definitions.resolve_assets_def(
        AssetKey(["nyc_taxi", "yellow_rides_daily_forecast"])
    ).partitions_def.get_partition_keys()
    assert keys[0] == "2025-01-26" and keys[-1] == "2025-02-28"
    for first, enough in ((keys[0], True), ("2025-01-25", False)):
        settings = resolve_settings(first, 84, 4, 2, 24, 0, False, "")
        assert (settings.backtest_start - pd.Timestamp("2024-12-01") >= LEAST_TRAINING) is enough
    accuracy = definitions.resolve_assets_def(
        AssetKey(["nyc_taxi", "forecast_accuracy"])
    ).partitions_def.get_partition_keys()
    assert accuracy == keys


def test_the_resources_carry_the_settings_whole(monkeypatch):
    """Each resource is built from one typed object (the catalog's config, Spark's options) and gives it back equal:
    no setting is lost or renamed on the way from the settings to the session."""
    from forecast_assets.definitions import resources_for

    monkeypatch.setenv("TAXI_SPARK_CORES_MAX", "3")
    monkeypatch.setenv("TAXI_SPARK_JARS", "/opt/extra.jar")
    monkeypatch.setenv("TAXI_SPARK_DRIVER_MEMORY", "3g")
    settings = load_settings()
    resources = resources_for(settings)
    assert resources["spark"].options() == SparkOptions.from_settings(settings)
    assert resources["spark"].options().cores_max == 3 and resources["spark"].options().jars == "/opt/extra.jar"
    assert resources["catalog"].config() == resources["spark"].catalog.config() == CatalogConfig.from_settings(settings)


def test_spark_s_own_settings_win_over_the_project_s_and_its_ui_is_off_unless_asked(monkeypatch):
    from forecast_assets.definitions import resources_for

    assert resources_for(load_settings())["spark"].spark_config()["spark.ui.enabled"] == "false"
    monkeypatch.setenv("TAXI_SPARK_CONF", '{"spark.ui.enabled": true, "spark.sql.shuffle.partitions": 3}')
    conf = resources_for(load_settings())["spark"].spark_config()
    assert conf["spark.ui.enabled"] == "true" and conf["spark.sql.shuffle.partitions"] == "3"


def test_the_registry_refuses_two_sources_of_one_name_and_names_the_sources_it_has(monkeypatch):
    from forecast_assets.source_specs import registry

    with pytest.raises(registry.NoSuchSource, match=r"'tram'; the sources are trip, .*zones"):
        registry.source_named("tram")
    monkeypatch.setattr(registry, "SOURCES", ("yellow_trips", "noaa_weather", "yellow_trips"))
    registry.registered_sources.cache_clear()
    try:
        with pytest.raises(registry.SourceNameTaken, match=r"named trip \(in .*SOURCES or the taxi_forecast.sources"):
            registry.registered_sources()
    finally:
        monkeypatch.undo()
        registry.registered_sources.cache_clear()


def test_an_installed_entry_point_that_names_no_source_is_refused_with_what_to_point_it_at(tmp_path, monkeypatch):
    from forecast_assets.source_specs import registry
    from tests.installed_entry_point import install_entry_point

    site = install_entry_point(tmp_path, "outside-wrong", registry.ENTRY_POINT_GROUP, "wrong", "tests.outside_package")
    monkeypatch.syspath_prepend(str(site))
    registry.registered_sources.cache_clear()
    try:
        with pytest.raises(registry.NotASource, match=r"wrong = tests.outside_package .* names a module, not a source"):
            registry.registered_sources()
    finally:
        monkeypatch.undo()
        registry.registered_sources.cache_clear()


def test_the_forecast_table_s_asset_checks_are_the_flow_s_checks(definitions):
    """One list: the flow's write step runs each check, and the code location has an asset check for each."""
    from flows.forecasting.checks import FORECAST_CHECKS

    graph = definitions.resolve_asset_graph()
    forecast = AssetKey(["nyc_taxi", "yellow_rides_hourly_forecast"])
    on_forecast = {key.name for key in graph.asset_check_keys if key.asset_key == forecast}
    assert on_forecast == {check.name for check in FORECAST_CHECKS}
    assert all(graph.get_check_spec(key).blocking for key in graph.asset_check_keys if key.asset_key == forecast)
