"""Validate events against the official OpenLineage JSON Schemas copied into tests/openlineage_spec."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

SPEC_DIR = Path(__file__).parent / "openlineage_spec"
# Custom facets ship their schemas with the bridge, as the spec asks of custom facets.
CUSTOM_SPEC_DIR = Path(__file__).parent.parent / "bridge" / "spec"


@cache
def _registry() -> tuple[Registry, dict]:
    core = json.loads((SPEC_DIR / "OpenLineage.json").read_text())
    resources = [(core["$id"], Resource.from_contents(core))]
    facets = {}
    for path in sorted([*(SPEC_DIR / "facets").glob("*.json"), *CUSTOM_SPEC_DIR.glob("*.json")]):
        schema = json.loads(path.read_text())
        resources.append((schema["$id"], Resource.from_contents(schema)))
        facets[path.stem] = schema
    return Registry().with_resources(resources), {"core": core, **facets}


def _schema_name(url: str) -> str:
    """A facet schema's name from its URL: ``.../OrchestratorRunFacet.json#/$defs/...`` -> ``OrchestratorRunFacet``."""
    return url.split("#", 1)[0].rsplit("/", 1)[-1].rsplit(":", 1)[-1].split(".json")[0]


def validation_errors(event: dict, custom: Sequence[dict] = ()) -> list[str]:
    """Errors against the core schema and against each facet's own schema (by its _schemaURL); ``custom`` are the
    schemas of a project's own facets, shipped with it as the spec asks (each with its ``$id``)."""
    registry, schemas = _registry()
    if custom:
        registry = registry.with_resources([(schema["$id"], Resource.from_contents(schema)) for schema in custom])
        schemas = {**schemas, **{_schema_name(schema["$id"]): schema for schema in custom}}
    errors = [e.message for e in Draft202012Validator(schemas["core"], registry=registry).iter_errors(event)]
    for facet in _facets(event):
        url = facet.get("_schemaURL", "")
        name = _schema_name(url)
        if name not in schemas:
            errors.append(f"facet schema {url} is neither in the official spec nor shipped with the bridge")
            continue
        definition = url.split("#", 1)[1] if "#" in url else ""
        schema = {"$ref": f"{schemas[name]['$id']}#{definition}"}
        errors += [f"{name}: {e.message}" for e in Draft202012Validator(schema, registry=registry).iter_errors(facet)]
    return errors


def _facets(event: dict):
    for holder in (event.get("run", {}), event.get("job", {})):
        yield from holder.get("facets", {}).values()
    for dataset in event.get("inputs", []) + event.get("outputs", []):
        yield from dataset.get("facets", {}).values()
        yield from dataset.get("inputFacets", {}).values()
        yield from dataset.get("outputFacets", {}).values()
