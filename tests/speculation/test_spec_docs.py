"""docs/speculation.md: every YAML example resolves, and the public names are the documented ones."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

import aisim
import aisim.config
import aisim.speculation
from aisim import resolve_speculation

DOC = Path(__file__).resolve().parents[2] / "docs" / "speculation.md"


def _yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_every_yaml_example_in_the_guide_resolves() -> None:
    blocks = _yaml_blocks()
    kinds = set()
    for text in blocks:
        document = yaml.safe_load(text)
        resolved = resolve_speculation(document["speculation"])
        kinds.add(resolved.kind)
    assert kinds == {
        "none",
        "mtp",
        "ngram",
        "eagle3",
        "dflash",
        "dspark",
        "draft_model",
        "suffix",
        "medusa",
        "mlp_speculator",
    }


def test_public_names() -> None:
    for name in ("AcceptanceProfile", "ResolvedSpeculation"):
        assert name in aisim.__all__
        assert getattr(aisim, name) is getattr(aisim.speculation, name)
    # Resolving reads user input, so it lives at the config edge, not in the compiled core.
    assert "resolve_speculation" in aisim.__all__
    assert aisim.resolve_speculation is aisim.config.resolve_speculation
    # The whole list is docs/api.md's (tests/test_public_api.py).
    assert {
        "ACCEPTANCE_KEYS",
        "AcceptanceProfile",
        "ENGINE_METRICS_FORMATS",
        "KINDS",
        "MeasuredAcceptance",
        "ResolvedSpeculation",
        "load_engine_acceptance",
        "measure_engine_acceptance",
    } <= set(aisim.speculation.__all__)


def test_documented_acceptance_keys_are_the_accepted_ones() -> None:
    text = DOC.read_text(encoding="utf-8")
    for key in aisim.speculation.ACCEPTANCE_KEYS:
        assert f"| `{key}` |" in text
