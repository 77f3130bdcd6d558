"""The Dagster instance's home in the state folder, holding the project's instance settings (dagster.yaml)."""

from __future__ import annotations

import shutil
from pathlib import Path

from taxi_core.settings import PROJECT_ROOT, Settings

INSTANCE_YAML = "dagster.yaml"


def dagster_home(settings: Settings, template: Path | None = None) -> Path:
    """``<state>/dagster`` holding a link to the project's dagster.yaml (or to ``template``, another profile's)."""
    home = settings.path("dagster")
    link = home / INSTANCE_YAML
    if template is not None and link.is_symlink() and link.resolve() != template.resolve():
        link.unlink()  # linked to another profile's instance settings (by `./run`, before the profile began)
    template = template or _instance_yaml()
    if not link.exists():
        try:
            link.symlink_to(template)
        except OSError:
            shutil.copyfile(template, link)
    return home


def _instance_yaml() -> Path:
    """The checkout's dagster.yaml, or the copy a wheel carries inside the package."""
    checkout_copy = PROJECT_ROOT / INSTANCE_YAML
    return checkout_copy if checkout_copy.exists() else Path(__file__).with_name(INSTANCE_YAML)
