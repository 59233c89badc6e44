"""``aisim schema KIND``: each kind's JSON Schema is valid, committed, and accepts the docs'
examples (and rejects what aisim rejects)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from aisim.cli import main
from aisim.config import SCHEMA_KINDS, json_schema

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
LANGUAGE_SERVER = re.compile(r"^# yaml-language-server: \$schema=(\S+)$")


@pytest.mark.parametrize("kind", sorted(SCHEMA_KINDS))
def test_schema_is_valid_and_committed(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    schema = json_schema(kind)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert main(["schema", kind]) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed) == schema
    committed = DOCS / "schemas" / f"{kind}.schema.json"
    assert committed.read_text(encoding="utf-8") == printed, (
        f"regenerate with: aisim schema {kind} > docs/schemas/{kind}.schema.json"
    )


def test_unknown_kind_is_one_line_rc_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "nonsense"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("aisim: error: schema: unknown config kind 'nonsense'; known: ")
    assert error.count("\n") == 1
    # docs/schemas.md quotes this line: it lists every kind, engine-recording included.
    assert "engine-recording, estimator, hardware" in error
    assert error in (DOCS / "schemas.md").read_text(encoding="utf-8")


def _examples_with_schema_comment() -> list[Path]:
    found = []
    for path in sorted([*DOCS.rglob("*.yaml"), *(ROOT / "qualification").rglob("*.yaml")]):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        if LANGUAGE_SERVER.match(first):
            found.append(path)
    return found


def test_speculation_examples_carry_the_language_server_comment() -> None:
    examples = sorted((DOCS / "examples" / "speculation").glob("*.yaml"))
    assert examples and set(examples) <= set(_examples_with_schema_comment())


@pytest.mark.parametrize("example", _examples_with_schema_comment(), ids=lambda p: p.name)
def test_docs_examples_validate_against_their_schema(example: Path) -> None:
    text = example.read_text(encoding="utf-8")
    match = LANGUAGE_SERVER.match(text.splitlines()[0])
    assert match is not None
    schema_file = (example.parent / match.group(1)).resolve()
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    jsonschema.validate(yaml.safe_load(text), schema, cls=jsonschema.Draft202012Validator)


def test_speculation_guide_blocks_validate() -> None:
    schema = json_schema("speculation")
    text = (DOCS / "speculation.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)
    assert blocks
    for block in blocks:
        jsonschema.validate(yaml.safe_load(block), schema, cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize(
    "bad",
    [
        {"speculation": {"kind": "mtp", "params": {"depth": 0}}},
        {"speculation": {"kind": "mtp", "params": {"width": 3}}},
        {"speculation": {"kind": "lookahead"}},
        {"speculation": {"kind": "mtp", "params": {"depth": 2}, "depht": 2}},
        {"speculation": {"kind": "ngram", "params": {"num_speculative_tokens": True}}},
    ],
)
def test_speculation_schema_rejects_what_aisim_rejects(bad: object) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, json_schema("speculation"), cls=jsonschema.Draft202012Validator)


def test_model_file_example_validates_and_loads() -> None:
    """docs/examples/model/config.json (JSON has no language-server comment) against the
    ``model`` schema, and through the parser to the geometry written in it."""
    from aisim.config import get_gpu, get_model

    example = DOCS / "examples" / "model" / "config.json"
    jsonschema.validate(
        json.loads(example.read_text(encoding="utf-8")),
        json_schema("model"),
        cls=jsonschema.Draft202012Validator,
    )
    spec = get_model(str(example))
    assert (spec.num_layers, spec.head_dim, spec.num_kv_heads) == (16, 2048 // 32, 8)
    assert spec.kv_bytes_per_token == 16 * 2 * 8 * 64 * 2
    gpu = get_gpu(str(DOCS / "examples" / "hardware" / "my_gpu.yaml"))
    assert (gpu.name, gpu.hbm_bytes_per_s) == ("my_gpu", 3.35e12)


def test_every_config_kind_has_a_docs_example_checked_against_its_schema() -> None:
    """Each kind ``aisim schema`` knows has at least one example in the repo that the tests
    above validate against its schema (YAML with the language-server line; the model kind's
    config.json by test_model_file_example_validates_and_loads)."""
    kinds = set()
    for example in _examples_with_schema_comment():
        match = LANGUAGE_SERVER.match(example.read_text(encoding="utf-8").splitlines()[0])
        assert match is not None
        kinds.add(Path(match.group(1)).name.removesuffix(".schema.json"))
    # engine-recording: docs/examples/engine-recording/settings.json, checked by
    # tests/qualification/test_engine_plain.py.
    assert kinds | {"model", "engine-recording"} == set(SCHEMA_KINDS)


def test_replay_guide_block_validates() -> None:
    schema = json_schema("replay")
    text = (DOCS / "replay.md").read_text(encoding="utf-8")
    blocks = [
        yaml.safe_load(block)
        for block in re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)
        if block.startswith("traffic:")
    ]
    assert blocks
    for block in blocks:
        jsonschema.validate(block, schema, cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize(
    "bad",
    [
        {"engine": {"workers": {"aggregated": {}}}},
        {"traffic": {"source": {"type": "poisson"}}, "engine": {"workers": {}}},
        {
            "traffic": {"source": {"type": "trace", "path": "t.csv"}},
            "engine": {"workers": {"aggregated": {"kv_cache": {"capacity": {"type": "elastic"}}}}},
        },
        {
            "traffic": {"source": {"type": "trace", "path": "t.csv"}},
            "engine": {"workers": {"aggregated": {"parallelism": {"tensor": 0}}}},
        },
        {
            "traffic": {"source": {"type": "trace", "path": "t.csv"}},
            "engine": {"backend": "trt", "workers": {}},
        },
    ],
)
def test_replay_schema_rejects_what_aisim_rejects(bad: object) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, json_schema("replay"), cls=jsonschema.Draft202012Validator)
