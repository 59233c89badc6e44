"""The exported names of each public package equal the ones docs/api.md documents (httpx-style)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

API_DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def _documented() -> dict[str, set[str]]:
    sections: dict[str, set[str]] = {}
    text = API_DOC.read_text(encoding="utf-8")
    for block in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        title, _, body = block.partition("\n")
        if not title.startswith("`"):
            continue  # prose sections, not a package's names
        package = title.strip().strip("`")
        prose = body.split("```")[0]
        sections[package] = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", prose))
    return sections


DOCUMENTED = _documented()


@pytest.mark.parametrize("package", sorted(DOCUMENTED))
def test_exports_equal_documentation(package: str) -> None:
    module = importlib.import_module(package)
    assert set(module.__all__) == DOCUMENTED[package]
    for name in module.__all__:
        assert hasattr(module, name), f"{package}.{name} is exported but missing"


def test_every_public_package_is_documented() -> None:
    assert set(DOCUMENTED) == {
        "aisim",
        "aisim.speculation",
        "aisim.config",
        "aisim.fpm",
        "aisim.replay",
        "aisim.sweep",
        "aisim.traffic",
        "aisim.catalogue",
        "aisim.cli",
        "aisim.files",
        "aisim.fields",
        "aisim.extras",
    }


@pytest.mark.parametrize("index", range(2))
def test_api_examples_run(index: int) -> None:
    text = API_DOC.read_text(encoding="utf-8")
    examples = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert len(examples) == 2
    exec(compile(examples[index], f"docs/api.md example {index}", "exec"), {})
