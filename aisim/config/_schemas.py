"""The registry behind ``aisim schema KIND``: each config file kind and its JSON Schema.

A kind maps to ``"module:attribute"``, imported only when asked for: a pydantic model class
(its ``model_json_schema()``) or a function returning the schema dict. A new config kind adds one
line here (or calls ``register_schema``) and a test checks its docs examples against it. Another
installed package declares its kinds in the ``aisim.schemas`` entry-point group (the harness's
``plan``), so this package never imports it (docs/design.md#import-graph).
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from aisim.errors import ConfigError

#: JSON Schema dialect every printed schema declares.
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

#: Entry-point group of other packages' config kinds: ``kind = "package.module:ModelOrFunction"``.
_SCHEMA_GROUP = "aisim.schemas"

_BUILT_IN: dict[str, str] = {
    "speculation": "aisim.config._speculation_models:speculation_schema",
    "estimator": "aisim.config._estimator:EstimatorConfig",
    "sweep": "aisim.config._sweep:SweepFile",
    "replay": "aisim.config._replay_models:replay_schema",
    "model": "aisim.config._catalogue:ModelFile",
    "hardware": "aisim.config._catalogue:HardwareFile",
}
#: The order kinds are listed in (``aisim schema --help``); other entry points follow, by name.
_ORDER = ("speculation", "estimator", "sweep", "plan", "replay", "model", "hardware")


def _kinds() -> dict[str, str]:
    plugins = {point.name: point.value for point in entry_points(group=_SCHEMA_GROUP)}
    known = {**plugins, **_BUILT_IN}  # a built-in kind is never replaced
    names = [name for name in _ORDER if name in known]
    names += sorted(set(known) - set(_ORDER))
    return {name: known[name] for name in names}


SCHEMA_KINDS: dict[str, str] = _kinds()


def register_schema(kind: str, target: str) -> None:
    """Register ``kind`` (``"sweep"``) as ``"package.module:ModelOrFunction"``."""
    SCHEMA_KINDS[kind] = target


def json_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of config kind ``kind``; ``ConfigError`` listing the kinds if unknown."""
    target = SCHEMA_KINDS.get(kind)
    if target is None:
        raise ConfigError(
            f"schema: unknown config kind {kind!r}; known: {', '.join(sorted(SCHEMA_KINDS))}"
        )
    module_name, _, attribute = target.partition(":")
    source = getattr(importlib.import_module(module_name), attribute)
    is_model = hasattr(source, "model_json_schema")
    schema: dict[str, Any] = source.model_json_schema() if is_model else source()
    return {"$schema": JSON_SCHEMA_DIALECT, "title": f"aisim {kind} config", **schema}
