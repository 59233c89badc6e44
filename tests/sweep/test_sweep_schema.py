"""``aisim schema sweep`` describes the sweep file, range axes included: the docs' sweep files
and the sweep file of docs/sweep.md validate against it, and it rejects the axis shapes that
``load_sweep`` rejects (so an editor flags them before a run)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from aisim.config import json_schema
from aisim.config._sweep import load_sweep
from aisim.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BASE: dict[str, Any] = {"traffic": {"source": {"type": "synthetic"}}}


def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json_schema("sweep"))


def _documented_sweeps() -> list[tuple[str, Any]]:
    found = [
        (str(path.relative_to(ROOT)), yaml.safe_load(path.read_text(encoding="utf-8")))
        for path in sorted((DOCS / "examples" / "sweep").glob("*.yaml"))
        if path.read_text(encoding="utf-8").startswith(
            "# yaml-language-server: $schema=../../schemas/sweep.schema.json"
        )
    ]
    guide = (DOCS / "sweep.md").read_text(encoding="utf-8")
    for number, block in enumerate(re.findall(r"```yaml\n(.*?)```", guide, flags=re.DOTALL)):
        found.append((f"docs/sweep.md yaml block {number}", yaml.safe_load(block)))
    return found


def test_the_documented_sweeps_include_a_range_axis() -> None:
    ranges = [
        where
        for where, sweep in _documented_sweeps()
        if any(isinstance(axis, dict) for axis in sweep["axes"].values())
    ]
    assert "docs/sweep.md yaml block 0" in ranges
    assert "docs/examples/sweep/sd_vs_load.yaml" in ranges


@pytest.mark.parametrize(("where", "sweep"), _documented_sweeps(), ids=lambda v: str(v)[:40])
def test_documented_sweeps_validate(where: str, sweep: Any) -> None:
    _validator().validate(sweep)


@pytest.mark.parametrize(
    "axes",
    [
        {"traffic.load.rate_rps": {"start": 2, "stop": 6, "step": 2}},
        {"traffic.load.rate_rps": {"start": 0.1, "stop": 0.3, "step": 0.1}},
        {"traffic.load.rate_rps": [1, 2], "engine.speculation": [None, {"kind": "ngram"}]},
    ],
)
def test_valid_axes_pass_both(axes: dict[str, Any]) -> None:
    sweep = {"base": BASE, "axes": axes}
    _validator().validate(sweep)
    load_sweep(sweep)


@pytest.mark.parametrize(
    "axes",
    [
        {},
        {"traffic.load.rate_rps": []},
        {"traffic.load.rate_rps": [1, 1]},
        {"traffic.load.rate_rps": 3},
        {"traffic.load.rate_rps": {"start": 2, "stop": 6}},
        {"traffic.load.rate_rps": {"start": 2, "stop": 6, "step": 0}},
        {"traffic.load.rate_rps": {"start": 2, "stop": 6, "step": -1}},
        {"traffic.load.rate_rps": {"start": 2, "stop": 6, "step": 2, "by": 1}},
        {"traffic.load.rate_rps": {"start": "2", "stop": 6, "step": 2}},
        {"traffic..rate_rps": [1]},
    ],
)
def test_bad_axes_fail_both(axes: dict[str, Any]) -> None:
    sweep = {"base": BASE, "axes": axes}
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate(sweep)
    with pytest.raises(ConfigError):
        load_sweep(sweep)


@pytest.mark.parametrize("slos", [{"tpot_ms": {"p90": 0}}, {"tpot_ms": {"p90": -5}}])
def test_non_positive_limits_fail_both(slos: dict[str, Any]) -> None:
    sweep = {"base": BASE, "axes": {"traffic.load.rate_rps": [1]}, "slos": slos}
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate(sweep)
    with pytest.raises(ConfigError):
        load_sweep(sweep)


def test_base_is_a_path_or_a_mapping() -> None:
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate({"base": 7, "axes": {"traffic.load.rate_rps": [1]}})
