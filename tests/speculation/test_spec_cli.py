"""``aisim speculation explain``: every docs example runs, JSON is canonical, bad files exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aisim import resolve_speculation
from aisim._io import load_config_file
from aisim.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "speculation"
KINDS = ("none", "mtp", "ngram", "eagle3", "dflash", "dspark", "draft_model")


def test_there_is_an_example_for_every_kind() -> None:
    for kind in KINDS:
        assert (EXAMPLES / f"{kind}.yaml").is_file()


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_every_example_explains(example: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["speculation", "explain", str(EXAMPLES / example)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("speculation: ")
    assert "cost_identity" in text and "verify_width" in text


@pytest.mark.parametrize("kind", KINDS)
def test_example_json_is_the_resolved_dict(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    file = EXAMPLES / f"{kind}.yaml"
    assert main(["speculation", "explain", str(file), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    expected = resolve_speculation(load_config_file(file)["speculation"]).to_dict()
    assert shown == expected
    assert shown["kind"] == kind


def test_legacy_examples_match_their_canonical_twins(capsys: pytest.CaptureFixture[str]) -> None:
    def shown(name: str) -> dict[str, object]:
        assert main(["speculation", "explain", str(EXAMPLES / name), "--json"]) == 0
        result: dict[str, object] = json.loads(capsys.readouterr().out)
        return result

    assert shown("legacy_nextn.yaml") == shown("mtp.yaml")
    assert shown("legacy_ngram_flat.yaml") == shown("ngram.yaml")


def test_eagle3_example_text(capsys: pytest.CaptureFixture[str]) -> None:
    file = str(EXAMPLES / "eagle3.yaml")
    args = ["speculation", "explain", file, "--model", "Meta-Llama-3.1-8B", "--backend", "vllm"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "speculation: eagle3  (model Meta-Llama-3.1-8B, backend vllm)" in text
    assert "1 layers, hidden 4096, vocab 128256, draft vocab 32000" in text
    assert "chain of 3, replayable" in text
    assert "acceptance length          2.8" in text


def test_gate_failure_exits_two_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    file = str(EXAMPLES / "dflash.yaml")
    assert main(["speculation", "explain", file, "--backend", "sglang", "--role", "decode"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("aisim: error: speculation.kind: scheme dflash")


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("speculation: {kind: mtp, params: {depth: 0}}\n", "speculation.params.depth"),
        ("speculation: [1, 2]\n", "speculation: expected a mapping"),
        ("kind: lookahead\n", "unknown speculation kind 'lookahead'"),
        ("speculation: {kind: mtp, params: {depth: 2}}\nengine: {}\n", "other keys too: engine"),
        ("", "the file is empty"),
        ("kind: [unclosed\n", "not valid"),
    ],
)
def test_bad_files_are_one_clear_error(
    tmp_path: Path, content: str, fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "spec.yaml"
    file.write_text(content, encoding="utf-8")
    assert main(["speculation", "explain", str(file)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aisim: error: ")
    assert fragment in lines[0]


def test_missing_file_exits_two(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["speculation", "explain", str(tmp_path / "absent.yaml")]) == 2
    assert "file not found" in capsys.readouterr().err


def test_json_file_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "spec.json"
    file.write_text(json.dumps({"nextn": 2, "nextn_accepted": 0.5}), encoding="utf-8")
    assert main(["speculation", "explain", str(file), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["kind"] == "mtp" and shown["params"] == {"depth": 2}
    assert shown["acceptance"]["conditional_rates"] == [0.5, 0.0]


NO_KIND_LINE = (
    "  kind                       not given, so speculation is off (a block without kind, empty "
    "or holding only a seed, means disabled); to configure it give kind: one of none, mtp, "
    "ngram, eagle3, dflash, dspark, draft_model, suffix, medusa, mlp_speculator"
)


@pytest.mark.parametrize(
    "content", ["{}\n", "speculation: {}\n", "speculation:\n", "speculation: {seed: 3}\n"]
)
def test_a_block_without_kind_is_explained_as_off(
    tmp_path: Path, content: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty block is speculation off (docs/speculation.md, as replay reads it); explain
    printed it as though `kind: none` had been configured."""
    file = tmp_path / "spec.yaml"
    file.write_text(content, encoding="utf-8")
    assert main(["speculation", "explain", str(file)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        "speculation: none",
        NO_KIND_LINE,
        "  enabled                    false",
    ]


def test_an_explicit_kind_none_has_no_kind_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def explained(content: str) -> list[str]:
        file = tmp_path / "spec.yaml"
        file.write_text(content, encoding="utf-8")
        assert main(["speculation", "explain", str(file)]) == 0
        return capsys.readouterr().out.splitlines()

    explicit = explained("kind: none\n")
    assert NO_KIND_LINE not in explicit
    # the same resolution (one cost_identity); only the note differs
    assert [line for line in explained("{}\n") if line != NO_KIND_LINE] == explicit
