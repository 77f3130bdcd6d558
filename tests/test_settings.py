"""The one settings object: precedence, validation that names the variable, no reading at import."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from taxi_core.settings import PROJECT_ROOT, SettingsError, load_settings, write_settings_file


def _settings(tmp_path, **environ):
    return load_settings({"TAXI_STATE_DIR": str(tmp_path / "state"), **environ})


def test_defaults_put_everything_in_the_state_folder(tmp_path):
    settings = _settings(tmp_path)
    assert settings.state_dir == (tmp_path / "state").resolve()
    assert settings.staging_location == str(settings.state_dir / "staging")
    assert settings.metaflow_root == str(settings.state_dir / "metaflow")
    assert settings.first_month == "2024-01-01" and settings.datahub == "lite"


def test_the_environment_wins_over_dotenv_which_wins_over_the_settings_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    state = tmp_path / "state"
    write_settings_file(
        state / "settings.env", {"TAXI_TRIP_BASE_URL": "http://from-init", "TAXI_FIRST_MONTH": "2023-05"}
    )
    assert _settings(tmp_path).source_base_urls == {"trip": "http://from-init"}
    (tmp_path / ".env").write_text("TAXI_TRIP_BASE_URL=http://from-dotenv\nTAXI_ZONES_BASE_URL=file:///zones\n")
    settings = _settings(tmp_path)
    assert settings.source_base_urls == {"trip": "http://from-dotenv", "zones": "file:///zones"}
    assert settings.first_month == "2023-05-01"
    exported = _settings(tmp_path, TAXI_TRIP_BASE_URL="http://exported").source_base_urls
    assert exported == {"trip": "http://exported", "zones": "file:///zones"}


def test_an_empty_variable_counts_as_unset(tmp_path):
    assert _settings(tmp_path, TAXI_SPARK_MASTER="").spark_master == "local[*]"


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("TAXI_FIRST_MONTH", "2024-13-01", "is not a month: write it as YYYY-MM"),
        ("TAXI_FIRST_MONTH", "2024-02-15", "is not a month: write it as YYYY-MM"),
        ("TAXI_FIRST_MONTH", "2025-1", "is not a month: write it as YYYY-MM"),
        ("TAXI_LAST_MONTH", "January", "is not a month: write it as YYYY-MM"),
        ("TAXI_LAST_MONTH", "2031-02", "2031-02 has not ended yet"),
        ("TAXI_FIRST_MONTH", "2008-12", "before 2009-01, the first month TLC publishes"),
        ("TAXI_SPARK_DRIVER_MEMORY", "abc", "use a JVM memory size such as 2g"),
        ("TAXI_SPARK_MASTER", "laptop", "use local[*], local[N], spark://host:port"),
        ("TAXI_CATALOG", "hive", "'sql', 'postgres' or 'glue'"),
        ("TAXI_CATALOG_URL", "mysql://db/iceberg", "use postgresql://user[:password]@host:port/database"),
        ("TAXI_SPARK_CORES_MAX", "0", "greater than 0"),
        ("TAXI_DATAHUB", "neo4j", "'lite', 'rest', 'file' or 'off'"),
        ("TAXI_TRIP_BASE_URL", "ftp://example.org", "use an http(s):// or file:// URL"),
        ("TAXI_SPARK_CONF", '{"ui.enabled": "true"}', "ui.enabled is not a Spark setting: each key starts with spark."),
    ],
)
def test_a_bad_value_is_named_with_what_it_accepts(tmp_path, variable, value, says):
    with pytest.raises(SettingsError) as failure:
        _settings(tmp_path, **{variable: value})
    assert str(failure.value).startswith(f"Invalid setting: {variable}={value!r}: ")
    assert says in str(failure.value)


def test_a_state_folder_that_cannot_be_written_is_named(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(SettingsError, match=r"TAXI_STATE_DIR='.*a-file/state': cannot write to"):
        load_settings({"TAXI_STATE_DIR": str(blocker / "state")})


def test_a_state_folder_whose_parent_is_missing_is_refused_not_created(tmp_path):
    mistyped = tmp_path / "typo" / "state"
    with pytest.raises(SettingsError, match=r"TAXI_STATE_DIR='.*typo/state': neither it nor its parent .*typo exists"):
        load_settings({"TAXI_STATE_DIR": str(mistyped)})
    assert not (tmp_path / "typo").exists()


def test_the_secret_token_is_not_shown(tmp_path):
    settings = _settings(tmp_path, DATAHUB_GMS_TOKEN="s3cret")
    assert "s3cret" not in repr(settings) and settings.datahub_gms_token.get_secret_value() == "s3cret"


def test_no_module_reads_settings_or_configures_a_tool_when_imported(tmp_path):
    """Importing every module of the project with a broken setting and no state folder changes nothing."""
    modules = sorted(
        ".".join(path.relative_to(PROJECT_ROOT).with_suffix("").parts).removesuffix(".__init__")
        for package in ("taxi_core", "bridge", "flows", "forecast_assets")
        for path in (PROJECT_ROOT / package).rglob("*.py")
        if path.name != "train.py"  # the flow's entry point configures Metaflow first, as a script must
    )
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("METAFLOW_", "DATAHUB_"))}
    environ |= {"TAXI_FIRST_MONTH": "not-a-month", "TAXI_STATE_DIR": str(tmp_path / "never")}
    result = subprocess.run(
        [sys.executable, "-c", code, *modules], env=environ, cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert list(tmp_path.iterdir()) == []  # no state folder, no tool files in the working directory


def test_commands_starting_at_once_in_a_new_state_folder_all_find_it_writable(tmp_path, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("TAXI_STATE_DIR", str(tmp_path / "new-state"))
    with ThreadPoolExecutor(max_workers=8) as pool:
        loaded = list(pool.map(lambda _: load_settings().state_dir, range(64)))
    assert set(loaded) == {(tmp_path / "new-state").resolve()}
    assert not list((tmp_path / "new-state").glob(".writable*"))


def test_a_last_month_before_the_first_is_refused_naming_both(tmp_path):
    with pytest.raises(SettingsError, match="TAXI_LAST_MONTH=2024-11 is before TAXI_FIRST_MONTH=2024-12"):
        _settings(tmp_path, TAXI_FIRST_MONTH="2024-12", TAXI_LAST_MONTH="2024-11")


def test_a_bad_setting_is_one_line_where_dagster_loads_the_code(tmp_path):
    home = tmp_path / "dagster"  # as ./run makes it
    home.mkdir()
    (home / "dagster.yaml").symlink_to(PROJECT_ROOT / "dagster.yaml")
    environ = {**os.environ, "TAXI_STATE_DIR": str(tmp_path), "DAGSTER_HOME": str(home), "TAXI_CATALOG": "foo"}
    dagster = Path(sys.executable).with_name("dagster")
    command = [str(dagster), "job", "execute", "-m", "forecast_assets.definitions", "-j", "reference_data"]
    done = subprocess.run(command, env=environ, capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=300)
    assert done.returncode != 0
    dagsters_own = ("Warning", "callback(")  # the CLI's notice that `dg launch` supersedes `job execute`
    own = [line for line in done.stderr.splitlines() if line.strip() and not any(d in line for d in dagsters_own)]
    assert own == [
        "taxi_core.settings.SettingsError: Invalid setting: TAXI_CATALOG='foo': Input should be 'sql', 'postgres' or "
        "'glue'"
    ]


def test_added_lineage_sinks_come_from_json_and_a_relative_path_is_in_the_state_folder(tmp_path):
    from forecast_assets.lineage import sinks

    configured = (
        '[{"kind": "sqlite-table", "name": "rel", "options": {"path": "lineage/events.sqlite"}},'
        ' {"kind": "sqlite-table", "name": "abs", "options": {"path": "/srv/lineage.sqlite"}}]'
    )
    settings = _settings(tmp_path, TAXI_LINEAGE_SINKS=configured)
    added = {spec.key: spec.options["path"] for spec in sinks(settings) if spec.kind == "sqlite-table"}
    assert added == {"rel": str(settings.state_dir / "lineage" / "events.sqlite"), "abs": "/srv/lineage.sqlite"}
    with pytest.raises(SettingsError, match=r"TAXI_LINEAGE_SINKS.*not JSON"):
        _settings(tmp_path, TAXI_LINEAGE_SINKS="[{kind: sqlite-table}]")
