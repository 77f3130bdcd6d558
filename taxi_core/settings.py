"""The project's one settings object: read once from the environment and settings files, validated, passed down.

Precedence, highest first: the process environment (what a user exported), the ``.env`` file in the
working directory, the ``settings.env`` that ``taxi init`` writes in the state folder, then the defaults
below. Every value is checked when loaded; a bad one raises :class:`SettingsError` naming the variable
and what it accepts. Nothing here reads the environment at import time.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from datetime import date
from pathlib import Path
from typing import Any, Literal

from dotenv import dotenv_values
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from taxi_core.errors import PipelineError
from taxi_core.files import write_atomically
from taxi_core.months import MonthInvalid, parse_month
from taxi_core.names import TLC_FIRST_MONTH

PROJECT_ROOT = Path(__file__).resolve().parent.parent
STATE_DIR_ENV = "TAXI_STATE_DIR"
DEFAULT_STATE_DIR_NAME = ".state"
# Installed from a wheel (no checkout around the package), state goes to the user's data folder.
INSTALLED_STATE_DIR = Path("~/.local/share/taxi-demand-lineage")
SETTINGS_FILE = "settings.env"
# How the settings file names its own folder, so that it still names it once the folder is copied or moved (not
# ${TAXI_STATE_DIR}: dotenv would put in the variable's value, or nothing when it is not exported).
STATE_DIR_PLACEHOLDER = "$TAXI_STATE_DIR"
DEFAULT_FIRST_MONTH = "2024-01-01"
URL = re.compile(r"(https?|file)://.*")
POSTGRES_URL = re.compile(r"postgres(ql)?://[^/]+/\w+")
SPARK_MASTER = re.compile(r"local(\[(\*|\d+)(,\d+)?\])?|(spark|k8s|mesos)://.+|yarn")
JVM_MEMORY = re.compile(r"\d+[kmgt]?", re.IGNORECASE)
# Settings that must have a shape: the pattern, and what to tell a user whose value does not.
URL_ACCEPTS = "use an http(s):// or file:// URL of the folder that holds the files"
# Where a data source's files are: TAXI_TRIP_BASE_URL for the source named "trip", and so on for every source.
BASE_URL_VARIABLE = re.compile(r"TAXI_([A-Z][A-Z0-9_]*)_BASE_URL")
SHAPES = {
    "spark_master": (SPARK_MASTER, "use local[*], local[N], spark://host:port, yarn or k8s://..."),
    "spark_driver_memory": (JVM_MEMORY, "use a JVM memory size such as 2g or 512m"),
    "spark_executor_memory": (JVM_MEMORY, "use a JVM memory size such as 2g or 512m"),
    "catalog_url": (POSTGRES_URL, "use postgresql://user[:password]@host:port/database"),
}


class SettingsError(ValueError, PipelineError):
    """A setting is missing or invalid; the message names the variable and what it accepts."""


def is_checkout(root: Path) -> bool:
    return (root / "pyproject.toml").is_file() and (root / "forecast_assets").is_dir()


def default_state_dir(root: Path = PROJECT_ROOT) -> Path:
    """A checkout's ``.state``; never a folder inside site-packages."""
    if is_checkout(root):
        return root / DEFAULT_STATE_DIR_NAME
    return INSTALLED_STATE_DIR.expanduser()


def _env(*names: str) -> AliasChoices:
    return AliasChoices(*names)


class LineageSinkSetting(BaseModel):
    """One more lineage sink: its registered kind, its name (for `taxi-lineage rebuild NAME`) and its options."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    name: str = ""
    options: dict[str, Any] = Field(default_factory=dict)


class Settings(BaseSettings):
    """Every setting of the project, by the environment variable that sets it."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    state_dir: Path = Field(
        default_factory=default_state_dir,
        validation_alias=_env("TAXI_STATE_DIR"),
        description="The one git-ignored folder holding every piece of local state.",
    )
    first_month: str = Field(DEFAULT_FIRST_MONTH, validation_alias=_env("TAXI_FIRST_MONTH"))
    last_month: str = Field(
        "",
        validation_alias=_env("TAXI_LAST_MONTH"),
        description="The last monthly partition; empty: every complete month up to now (TLC publishes ~2 months late).",
    )
    source_base_urls: dict[str, str] = Field(
        default_factory=dict,
        description="Where each data source's files are, by source name, from TAXI_<SOURCE>_BASE_URL "
        "(TAXI_TRIP_BASE_URL, TAXI_WEATHER_BASE_URL, ...); a source not named keeps its publisher's URL.",
    )
    staging: str = Field("", validation_alias=_env("TAXI_STAGING"))
    true_rates: str = Field(
        "",
        validation_alias=_env("TAXI_TRUE_RATES"),
        description="A folder of the true hourly rates the data was generated from (a generated source's): the "
        "training flow's noise floor. `./run demo` sets it to its sample source's.",
    )
    catalog_kind: Literal["sql", "postgres", "glue"] = Field("sql", validation_alias=_env("TAXI_CATALOG"))
    catalog_url: str = Field(
        "postgresql://taxi@127.0.0.1:5432/iceberg",
        validation_alias=_env("TAXI_CATALOG_URL"),
        description="The Postgres database of the `postgres` catalog (an Iceberg JDBC catalog).",
    )
    warehouse: str = Field("", validation_alias=_env("TAXI_WAREHOUSE"))
    catalog_sqlite: str = Field("", validation_alias=_env("TAXI_CATALOG_SQLITE"))
    aws_region: str = Field("", validation_alias=_env("AWS_REGION", "AWS_DEFAULT_REGION"))
    aws_account_id: str = Field("", validation_alias=_env("AWS_ACCOUNT_ID"))
    s3_endpoint_url: str = Field("", validation_alias=_env("TAXI_S3_ENDPOINT_URL"))
    spark_master: str = Field("local[*]", validation_alias=_env("TAXI_SPARK_MASTER"))
    spark_driver_memory: str = Field("4g", validation_alias=_env("TAXI_SPARK_DRIVER_MEMORY"))
    spark_executor_memory: str = Field("1g", validation_alias=_env("TAXI_SPARK_EXECUTOR_MEMORY"))
    # On a cluster, a run's application takes at most this many cores, so concurrent runs share the workers.
    spark_cores_max: int | None = Field(None, gt=0, validation_alias=_env("TAXI_SPARK_CORES_MAX"))
    spark_jars: str = Field("", validation_alias=_env("TAXI_SPARK_JARS"))
    # Start Spark's driver JVM from an archive of its classes, recorded by the first run (2 s sooner a run).
    spark_class_archive: bool = Field(True, validation_alias=_env("TAXI_SPARK_CLASS_ARCHIVE"))
    spark_conf: dict[str, str] = Field(
        default_factory=dict,
        validation_alias=_env("TAXI_SPARK_CONF"),
        description='More Spark settings, as JSON: {"spark.ui.enabled": "true", "spark.sql.shuffle.partitions": '
        "\"16\"}; they win over the project's own (Spark's UI is off unless turned on here).",
    )
    # The cluster profile's servers on 127.0.0.1 (`./run demo --profile cluster`).
    cluster_spark_port: int = Field(7077, gt=0, lt=65536, validation_alias=_env("TAXI_CLUSTER_SPARK_PORT"))
    cluster_spark_ui_port: int = Field(8080, gt=0, lt=65536, validation_alias=_env("TAXI_CLUSTER_SPARK_UI_PORT"))
    cluster_postgres_port: int = Field(54320, gt=0, lt=65536, validation_alias=_env("TAXI_CLUSTER_POSTGRES_PORT"))
    datahub: Literal["lite", "rest", "file", "off"] = Field("lite", validation_alias=_env("TAXI_DATAHUB"))
    datahub_gms_url: str = Field("", validation_alias=_env("DATAHUB_GMS_URL"))
    datahub_gms_token: SecretStr | None = Field(None, validation_alias=_env("DATAHUB_GMS_TOKEN"))
    datahub_file: str = Field("", validation_alias=_env("TAXI_DATAHUB_FILE"))
    lineage_namespace: str = Field("taxi-demand", validation_alias=_env("OPENLINEAGE_NAMESPACE"))
    lineage_archive: str = Field(
        "",
        pattern=r"^(s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?)?$",
        validation_alias=_env("TAXI_LINEAGE_ARCHIVE"),
        description="s3://bucket/prefix: every lineage event also archived there, one object per batch "
        "(TAXI_S3_ENDPOINT_URL for an S3-compatible store).",
    )
    lineage_local_store: str = Field(
        "taxi-state",
        pattern=r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$",
        validation_alias=_env("TAXI_LINEAGE_LOCAL_STORE"),
        description=(
            "The host name lineage gives the state folder: a file under it is file://NAME/path-inside-it, "
            "so names carry no home folder and survive moving the folder."
        ),
    )
    lineage_sinks: list[LineageSinkSetting] = Field(
        default_factory=list,
        validation_alias=_env("TAXI_LINEAGE_SINKS"),
        description='More lineage sinks, as JSON: [{"kind": "sqlite-table", "name": "sql", "options": {"path": '
        '"/tmp/lineage.sqlite"}}]; a kind is built in (docs/configuration.md) or registered by an installed package.',
    )
    lineage_after_training: bool = Field(
        True,
        validation_alias=_env("TAXI_LINEAGE_AFTER_TRAINING"),
        description="A training run from the shell ends with a lineage pass, so its model version is in the lineage "
        "at once (a run Dagster launches is delivered by Dagster's lineage sensor, or by the demo's pass).",
    )
    # Inside Dagster's 60 s sensor tick limit, with room for the tick's own work.
    lineage_pass_seconds: float = Field(40.0, gt=0, le=55, validation_alias=_env("TAXI_LINEAGE_PASS_SECONDS"))
    dagster_home_dir: str = Field("", validation_alias=_env("DAGSTER_HOME"))
    metaflow_datastore: str = Field("local", validation_alias=_env("METAFLOW_DEFAULT_DATASTORE"))
    metaflow_s3_root: str = Field("", validation_alias=_env("METAFLOW_DATASTORE_SYSROOT_S3"))
    metaflow_local_root: str = Field("", validation_alias=_env("METAFLOW_DATASTORE_SYSROOT_LOCAL"))
    user: str = Field("taxi", validation_alias=_env("USER", "USERNAME"))

    @field_validator("state_dir")
    @classmethod
    def _writable_state_dir(cls, value: Path) -> Path:
        path = value.expanduser().resolve()
        if not path.exists() and not path.parent.exists():
            msg = (
                f"neither it nor its parent {path.parent} exists: a mistyped folder would start a new, empty "
                f"lakehouse. Check the path, or create the folder (mkdir -p {path}) to start one there"
            )
            raise ValueError(msg)  # pydantic's way: reported as a SettingsError
        try:
            path.mkdir(exist_ok=True)
            # A probe of its own: two commands starting at once must not delete each other's.
            with tempfile.TemporaryFile(dir=path, prefix=".writable-"):
                pass
        except OSError as err:
            msg = f"cannot write to {path} ({err.strerror}); point it at a folder you can write to"
            raise ValueError(msg) from err  # pydantic's way: reported as a SettingsError
        return path

    @model_validator(mode="before")
    @classmethod
    def _state_dir_named(cls, data: Any) -> Any:
        """A value that names the state folder as ``$TAXI_STATE_DIR`` (as ``taxi init`` writes them) names it."""
        if not isinstance(data, dict):
            return data
        # Read from a .env file, the state folder comes under its variable's name.
        state = data.get("state_dir") or data.get(STATE_DIR_ENV) or default_state_dir()
        folder = str(Path(state).expanduser().resolve())
        return {key: _with_state_dir(value, folder) for key, value in data.items()}

    @field_validator("first_month", "last_month")
    @classmethod
    def _month_start(cls, value: str, info: ValidationInfo) -> str:
        if not value and info.field_name == "last_month":
            return value
        try:
            return f"{parse_month(value, today=date.today(), earliest=TLC_FIRST_MONTH)}-01"
        except MonthInvalid as err:
            raise ValueError(str(err)) from None  # pydantic's way: reported as a SettingsError

    @model_validator(mode="after")
    def _months_in_order(self) -> Settings:
        if self.last_month and self.last_month < self.first_month:
            msg = f"TAXI_LAST_MONTH={self.last_month[:7]} is before TAXI_FIRST_MONTH={self.first_month[:7]}; swap them"
            raise ValueError(msg)  # pydantic's way: reported as a SettingsError
        return self

    @field_validator("source_base_urls")
    @classmethod
    def _source_urls(cls, value: dict[str, str]) -> dict[str, str]:
        for source, url in value.items():
            if not URL.fullmatch(url):
                msg = f"TAXI_{source.upper()}_BASE_URL={url!r}: {URL_ACCEPTS}"
                raise ValueError(msg)  # pydantic's way: reported as a SettingsError
        return value

    @field_validator("spark_conf", mode="before")
    @classmethod
    def _spark_settings(cls, value: Any) -> Any:
        """The environment gives them as a JSON object; each key must be a Spark setting's."""
        if isinstance(value, str):
            try:
                value = json.loads(value) if value.strip() else {}
            except json.JSONDecodeError as err:
                raise ValueError(f'not JSON ({err}): give an object such as {{"spark.ui.enabled": "true"}}') from None
            if not isinstance(value, dict):
                raise ValueError('give a JSON object such as {"spark.ui.enabled": "true"}')
        if isinstance(value, dict):
            wrong = sorted(str(key) for key in value if not str(key).startswith("spark."))
            if wrong:
                msg = (
                    f"{', '.join(wrong)} {'is not a Spark setting' if len(wrong) == 1 else 'are not Spark settings'}: "
                    'each key starts with spark. (e.g. {"spark.ui.enabled": "true"})'
                )
                raise ValueError(msg)  # pydantic's way: reported as a SettingsError
            return {str(key): str(item).lower() if isinstance(item, bool) else str(item) for key, item in value.items()}
        return value

    @field_validator(*SHAPES)
    @classmethod
    def _shaped(cls, value: str, info: ValidationInfo) -> str:
        if info.field_name is None:  # pydantic names the field a field validator runs for
            raise TypeError("a field validator called without its field")  # an invariant of pydantic's
        pattern, accepts = SHAPES[info.field_name]
        if not pattern.fullmatch(value):
            raise ValueError(accepts)  # pydantic's way: reported as a SettingsError
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The environment arrives through :func:`load_settings` as init values, so a caller can hand in another.
        return init_settings, dotenv_settings

    @field_validator("lineage_sinks", mode="before")
    @classmethod
    def _sinks_from_json(cls, value: Any) -> Any:
        """The environment gives the sinks as JSON text."""
        if isinstance(value, str):
            try:
                return json.loads(value) if value.strip() else []
            except json.JSONDecodeError as err:
                msg = f'not JSON ({err}): give a list such as [{{"kind": "sqlite-table", "options": {{"path": "x"}}}}]'
                raise ValueError(msg) from None  # pydantic's way: reported as a SettingsError
        return value

    def path(self, *parts: str) -> Path:
        """A folder inside the state folder, made on first use."""
        folder = self.state_dir.joinpath(*parts)
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    @property
    def staging_location(self) -> str:
        return self.staging or str(self.state_dir / "staging")

    @property
    def metaflow_root(self) -> str:
        """Where Metaflow keeps runs and artifacts (its datastore root)."""
        return self.metaflow_s3_root or self.metaflow_local_root or str(self.state_dir / "metaflow")

    @property
    def dagster_home(self) -> Path:
        """The Dagster instance's folder: ``DAGSTER_HOME`` when exported, else the state folder's ``dagster``."""
        return Path(self.dagster_home_dir) if self.dagster_home_dir else self.state_dir / "dagster"

    @property
    def settings_file(self) -> Path:
        return self.state_dir / SETTINGS_FILE


def _variable(settings_field: str) -> str:
    alias = Settings.model_fields[settings_field].validation_alias
    if isinstance(alias, AliasChoices) and isinstance(alias.choices[0], str):  # a variable's name (see _env)
        return alias.choices[0]
    return settings_field


def _explain(err: ValidationError) -> str:
    lines = []
    for problem in err.errors():
        reason = problem["msg"].removeprefix("Value error, ")
        if not problem["loc"]:  # a rule over several settings: its message names them
            lines.append(reason)
            continue
        name = str(problem["loc"][0])
        if name == "source_base_urls":  # the message names the variable
            lines.append(reason)
            continue
        variable = name if name.isupper() else _variable(name)
        lines.append(f"{variable}={problem.get('input')!r}: {reason}")
    return "Invalid setting: " + "; ".join(lines)


def load_settings(environ: dict[str, str] | None = None, **overrides: Any) -> Settings:
    """The settings, from ``environ`` (by default this process's environment) and the settings files.

    ``overrides`` (field names) win over everything; tests and command-line options use them.
    """
    environ = dict(os.environ if environ is None else environ)
    state = Path(environ.get(STATE_DIR_ENV) or overrides.get("state_dir") or default_state_dir())
    files = (state.expanduser() / SETTINGS_FILE, Path.cwd() / ".env")  # later files win
    if "source_base_urls" not in overrides:
        overrides["source_base_urls"] = _source_base_urls(files, environ)
    try:
        # Type checkers see the fields' signature, not BaseSettings' own __init__ (which takes _env_file) nor
        # pydantic turning the variables' strings into each field's type (pydantic/pydantic-settings#131).
        return Settings(_env_file=files, _env_file_encoding="utf-8", **_from(environ), **overrides)  # type: ignore[call-arg, arg-type]
    except ValidationError as err:
        raise SettingsError(_explain(err)) from None


def _from(environ: dict[str, str]) -> dict[str, str]:
    """Values of ``environ`` by field name: so a mapping other than ``os.environ`` can be passed."""
    values = {}
    for name, spec in Settings.model_fields.items():
        alias = spec.validation_alias
        for variable in alias.choices if isinstance(alias, AliasChoices) else ():
            if isinstance(variable, str) and environ.get(variable):  # every choice is a variable's name (see _env)
                values[name] = environ[variable]
                break
    return values


def _source_base_urls(files: tuple[Path, ...], environ: dict[str, str]) -> dict[str, str]:
    """Every ``TAXI_<SOURCE>_BASE_URL`` by source name (``trip``), from the files and then the environment."""
    found: dict[str, str] = {}
    layers: list[dict[str, str | None]] = [dict(dotenv_values(path)) for path in files if path.is_file()]
    layers.append(dict(environ))
    for values in layers:
        for variable, value in values.items():
            match = BASE_URL_VARIABLE.fullmatch(variable)
            if match and value:
                found[match.group(1).lower()] = value
    return found


def write_settings_file(settings_file: Path, values: dict[str, str]) -> None:
    """The ``settings.env`` of ``taxi init``: below the environment and ``.env`` in precedence.

    A path or ``file://`` URL inside the state folder is written from ``$TAXI_STATE_DIR``: it names the folder the
    file is in, wherever that folder is copied or moved.
    """
    folder = str(settings_file.parent.expanduser().resolve())
    lines = ["# Written by `taxi init`. Exported variables and a .env file in the working directory win."]
    lines += [f"{key}={_from_state_dir(value, folder)}" for key, value in values.items()]
    write_atomically(settings_file, "\n".join(lines) + "\n")


def _from_state_dir(value: str, folder: str) -> str:
    """``value`` with the state folder ``folder`` it starts with (a path or a ``file://`` URL) as the placeholder."""
    for scheme in ("file://", ""):
        head = scheme + folder
        if value == head or value.startswith(head + "/"):
            return scheme + STATE_DIR_PLACEHOLDER + value[len(head) :]
    return value


def _with_state_dir(value: Any, folder: str) -> Any:
    """``value`` (a setting, or a mapping of them) with the placeholder replaced by the state folder ``folder``."""
    if isinstance(value, str):
        return value.replace(STATE_DIR_PLACEHOLDER, folder)
    if isinstance(value, dict):
        return {key: _with_state_dir(item, folder) for key, item in value.items()}
    return value
