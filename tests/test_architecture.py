"""The house: no import circles, nothing running back up, the bridge a library, imports at the top."""

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from taxi_core.settings import PROJECT_ROOT

PACKAGES = ("taxi_core", "bridge", "flows", "forecast_assets", "taxi_demo")


def test_the_import_contracts_hold():
    """`lint-imports` (import-linter, contracts in pyproject.toml): layers, a self-contained bridge, no circles."""
    linter = Path(sys.executable).parent / "lint-imports"
    # Its cache in the state folder, like every other tool's: the checkout gains no folder.
    command = [str(linter), "--cache-dir", str(PROJECT_ROOT / ".state" / "import_linter_cache")]
    result = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:]
    assert "Contracts: 5 kept, 0 broken." in result.stdout


@pytest.fixture(scope="module")
def type_check(end_to_end) -> subprocess.CompletedProcess[str]:
    """``mypy`` over the product's packages, run in the background lane (:mod:`tests.end_to_end`)."""
    result: subprocess.CompletedProcess[str] = end_to_end.outcome("type-check")
    return result


def test_every_product_package_type_checks_strictly(type_check):
    """mypy --strict over every package of the product (configured in pyproject.toml): no error, no
    silenced module."""
    config = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert sorted(config["packages"]) == sorted(PACKAGES) and config["strict"] is True
    ours = tuple(f"{package}." for package in PACKAGES)
    for override in config.get("overrides", []):
        modules = [override["module"]] if isinstance(override["module"], str) else override["module"]
        if any(module in PACKAGES or module.startswith(ours) for module in modules):
            assert not {"ignore_errors", "follow_imports", "disallow_untyped_defs"} & set(override), override
    assert type_check.returncode == 0, type_check.stdout[-4000:]
    assert type_check.stdout.startswith("Success: no issues found")


def _deferred_imports(path: Path) -> list[tuple[int, str]]:
    """Imports inside functions that no comment explains (on the line or the line above)."""
    lines = path.read_text().splitlines()
    tree = ast.parse("\n".join(lines))
    unexplained = []
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                here, above = lines[node.lineno - 1], lines[node.lineno - 2] if node.lineno > 1 else ""
                block_comment = any(line.strip().startswith("#") for line in lines[function.lineno : node.lineno - 1])
                if "#" not in here and "#" not in above and not block_comment:
                    unexplained.append((node.lineno, here.strip()))
    return unexplained


def test_an_import_inside_a_function_says_why():
    found = {
        str(path.relative_to(PROJECT_ROOT)): problems
        for package in PACKAGES
        for path in sorted((PROJECT_ROOT / package).rglob("*.py"))
        if (problems := _deferred_imports(path))
    }
    assert found == {}


def _own_exceptions(package: str, skip: tuple[str, ...] = ()) -> dict[str, type]:
    """Every exception class defined in ``package``'s modules (imported), by qualified name."""
    import importlib
    import inspect
    import pkgutil

    found = {}
    root = importlib.import_module(package)
    for module_info in pkgutil.walk_packages(root.__path__, f"{package}."):
        if module_info.name in skip:
            continue
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.__name__:
                found[f"{module.__name__}.{name}"] = value
    return found


def test_every_error_belongs_to_its_hierarchy():
    from bridge.errors import BridgeError
    from taxi_core.errors import PipelineError

    bridge_errors = _own_exceptions("bridge")
    # The flow module is a Metaflow entry point (it configures the tools when imported): its one error is named.
    pipeline_errors = {
        **_own_exceptions("taxi_core"),
        **_own_exceptions("forecast_assets"),
        **_own_exceptions("flows", skip=("flows.train",)),
        **_own_exceptions("taxi_demo"),
    }
    assert len(bridge_errors) > 10 and len(pipeline_errors) > 5
    assert "taxi_demo.local_cluster.services.ServiceFailed" in pipeline_errors
    outside = [name for name, error in bridge_errors.items() if not issubclass(error, BridgeError)]
    outside += [name for name, error in pipeline_errors.items() if not issubclass(error, PipelineError)]
    # A private retry signal never leaves its module.
    assert [name for name in outside if not name.rsplit(".", 1)[1].startswith("_")] == []
