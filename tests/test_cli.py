"""The `taxi` command's options and the state folder's location, without a JVM."""

import pytest

from taxi_core.settings import (
    DEFAULT_STATE_DIR_NAME,
    INSTALLED_STATE_DIR,
    PROJECT_ROOT,
    default_state_dir,
    load_settings,
)
from taxi_core.tool_env import tool_environment
from taxi_demo import cli


def _options(argv):
    return cli.DEFAULTS | vars(cli._parser().parse_args(cli.command_first(argv)))


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--scale", "500000", "--months", "2024-11", "2024-12", "--weather"],
        ["--scale", "500000", "demo", "--weather", "--months", "2024-11", "2024-12"],
        ["--weather", "--months", "2024-11", "2024-12", "demo", "--scale", "500000"],
    ],
)
def test_options_mean_the_same_in_any_order(argv):
    options = _options(argv)
    assert options["command"] == "demo"
    assert cli.trips_per_month(options["scale"]) == 500_000
    assert options["months"] == ["2024-11", "2024-12"]
    assert options["weather"] is True


def test_defaults_apply_when_no_option_is_given():
    options = _options(["demo"])
    assert cli.trips_per_month(options["scale"]) == cli.DEMO_SCALE_TRIPS
    assert options["months"] == cli.DEMO_MONTHS and options["weather"] is False


@pytest.mark.parametrize(
    "argv", [["demo", "--scale", "lots"], ["demo", "--scale", "-5"], ["demo", "--months", "2024-13"]]
)
def test_bad_options_are_refused_with_a_message(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "--scale" in error or "--months" in error


def test_a_checkout_keeps_its_state_inside_it():
    assert default_state_dir(PROJECT_ROOT) == PROJECT_ROOT / DEFAULT_STATE_DIR_NAME


def test_an_installed_package_never_writes_into_site_packages(tmp_path):
    site_packages = tmp_path / "lib" / "python3.11" / "site-packages"
    (site_packages / "forecast_assets").mkdir(parents=True)
    assert default_state_dir(site_packages) == INSTALLED_STATE_DIR.expanduser()
    assert site_packages not in default_state_dir(site_packages).parents


def test_every_tool_writes_into_the_state_folder_with_telemetry_off(tmp_path):
    values = tool_environment(load_settings({"TAXI_STATE_DIR": str(tmp_path)}))
    for key in (
        "METAFLOW_DATASTORE_SYSROOT_LOCAL",
        "METAFLOW_CARD_LOCALROOT",
        "METAFLOW_CLIENT_CACHE_PATH",
        "MPLCONFIGDIR",
    ):
        assert values[key].startswith(str(tmp_path)), key
    assert values["DATAHUB_TELEMETRY_ENABLED"] == "false"


def test_an_s3_datastore_is_left_to_metaflow(tmp_path):
    values = tool_environment(load_settings({"TAXI_STATE_DIR": str(tmp_path), "METAFLOW_DEFAULT_DATASTORE": "s3"}))
    assert "METAFLOW_DATASTORE_SYSROOT_LOCAL" not in values and "METAFLOW_CARD_LOCALROOT" not in values


def test_init_makes_the_partitions_the_months_the_sample_source_has(tmp_path):
    from forecast_assets.definitions import monthly_partitions

    environ = {"TAXI_STATE_DIR": str(tmp_path)}
    cli.init(load_settings(environ), ["2025-01", "2024-11"], trips=2_000)
    settings = load_settings(environ)
    assert monthly_partitions(settings).get_partition_keys() == ["2024-11-01", "2024-12-01", "2025-01-01"]
    assert (settings.first_month, settings.last_month) == ("2024-11-01", "2025-01-01")


def test_after_init_every_source_and_its_sensor_read_the_sample_source(tmp_path):
    """The UI's runs and sensors read the settings file `init` writes: every source is there, and the sensor
    watching the files published once finds them without going to their publisher (no network here)."""
    from dagster import DagsterInstance, RunRequest, build_sensor_context

    from forecast_assets.automation import changed_reference_files_sensor
    from forecast_assets.definitions import resources_for
    from forecast_assets.source_specs.registry import registered_sources

    environ = {"TAXI_STATE_DIR": str(tmp_path)}
    cli.init(load_settings(environ), ["2025-01"], trips=2_000)
    settings = load_settings(environ)
    sample = (tmp_path / "sample_source").resolve().as_uri()
    assert {spec.name for spec in registered_sources()} <= settings.source_base_urls.keys()
    assert all(url.startswith(sample) for url in settings.source_base_urls.values()), settings.source_base_urls
    with DagsterInstance.ephemeral() as instance:
        made = resources_for(settings)
        resources = {key: made[key] for key in ("source", "staging")}
        context = build_sensor_context(instance=instance, resources=resources)
        ticked = list(changed_reference_files_sensor(registered_sources())(context))
    assert [type(result) for result in ticked] == [RunRequest]
