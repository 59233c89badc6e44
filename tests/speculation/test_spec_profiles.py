"""Published acceptance profiles (docs/speculation.md, "Acceptance profiles"): the catalogue's
numbers are the sources' (transcribed here independently), every entry is sourced, and a block
selects one by name."""

from __future__ import annotations

from typing import Any

import pytest

from aisim import ConfigError, resolve_speculation
from aisim.cli import main
from aisim.speculation._profiles import PROFILES, profile_entry


def test_at_least_twenty_sourced_entries_across_methods() -> None:
    assert len(PROFILES) >= 20
    methods = {entry["method"] for entry in PROFILES}
    assert {"mtp", "eagle3", "ngram", "draft_model"} <= methods
    names = [entry["name"] for entry in PROFILES]
    assert len(set(names)) == len(names)
    for entry in PROFILES:
        source = entry["source"]
        assert source["title"] and source["locator"]
        assert source.get("url") or (source["repository"] and len(source["commit"]) == 40)
        assert entry["conditions"] and entry["engine"] and entry["dataset"]
        assert (
            entry["acceptance_length"] is not None
            or entry["unconditional_rates"] is not None
            or entry["conditional_rate"] is not None
            or entry["acceptance_length_by_draft_tokens"] is not None
        )


def test_vllm_ci_numbers_as_published() -> None:
    # tests/v1/spec_decode/test_acceptance_length.py, EAGLE3_MODEL_CONFIGS (commit 029ba375).
    entry = profile_entry("vllm-ci/eagle3/llama-3.1-8b-instruct/mt-bench")
    assert entry["acceptance_length"] == 2.60
    assert entry["unconditional_rates"] == [0.7296, 0.5208, 0.3545]
    assert entry["num_draft_tokens"] == 3 and entry["temperature"] == 0.0
    assert entry["spread"] == {
        "kind": "relative_tolerance",
        "value": 0.05,
        "of": "each per-position rate",
    }


def test_speculators_counts_give_the_length() -> None:
    # mtp_HumanEval.csv row conc1: 9581 drafts, 11993 accepted tokens.
    entry = profile_entry("speculators/mtp/qwen3.8-27b/humaneval")
    assert entry["acceptance_length"] == pytest.approx(2.2517482517482517)
    assert entry["spread"]["num_drafts"] == 9581


def _eagle3(draft: dict[str, Any], name: str, depth: int = 3) -> Any:
    return resolve_speculation(
        {
            "kind": "eagle3",
            "params": {"num_speculative_tokens": depth},
            "draft_config": draft,
            "acceptance_profile": name,
        }
    )


def test_rates_profile_resolves_to_the_published_rates(eagle3_draft: dict[str, Any]) -> None:
    resolved = _eagle3(eagle3_draft, "vllm-ci/eagle3/llama-3.1-8b-instruct/mt-bench")
    assert resolved.acceptance.unconditional_rates == (0.7296, 0.5208, 0.3545)
    assert resolved.acceptance.acceptance_length == pytest.approx(2.6049)
    source = resolved.acceptance_source
    assert source["format"] == "profile"
    assert source["entry"]["source"]["commit"] == "029ba37503c59160eacf163dd50b3bb1a6cfe982"


def test_length_profile_without_draft_length_is_the_staircase() -> None:
    # Spec-Bench PLD on Vicuna-7B: 1.73 accepted tokens per step, draft length not published.
    resolved = resolve_speculation(
        {
            "kind": "ngram",
            "params": {"num_speculative_tokens": 4},
            "acceptance_profile": "spec-bench/pld/vicuna-7b-v1.3",
        }
    )
    assert resolved.acceptance.unconditional_rates == pytest.approx((0.73, 0.0, 0.0, 0.0))


def test_deepseek_range_midpoint_at_depth_one() -> None:
    resolved = resolve_speculation(
        {
            "kind": "mtp",
            "params": {"depth": 1},
            "acceptance_profile": "deepseek-v3-report/mtp/deepseek-v3/various",
        }
    )
    assert resolved.acceptance.conditional_rates == (0.875,)


@pytest.mark.parametrize(
    ("block", "fragment"),
    [
        (
            {
                "kind": "mtp",
                "params": {"depth": 3},
                "acceptance_profile": "speculators/mtp/qwen3.8-27b/humaneval",
            },
            "measured with 2 draft tokens",
        ),
        (
            {
                "kind": "mtp",
                "params": {"depth": 1},
                "acceptance_profile": "spec-bench/pld/vicuna-7b-v1.3",
            },
            "method ngram, not kind mtp",
        ),
        (
            {
                "kind": "ngram",
                "params": {"num_speculative_tokens": 1},
                "acceptance_profile": "spec-bench/pld/vicuna-7b-v1.3",
            },
            None,
        ),
        (
            {
                "kind": "medusa",
                "params": {"num_speculative_tokens": 1},
                "draft_config": {
                    "num_heads": 1,
                    "num_hidden_layers": 1,
                    "hidden_size": 8,
                    "vocab_size": 8,
                },
                "acceptance_profile": "spec-bench/medusa/vicuna-13b-v1.3",
            },
            "more than a block",
        ),
        (
            {"kind": "mtp", "params": {"depth": 1}, "acceptance_profile": 3},
            "expected a string",
        ),
    ],
)
def test_profile_errors(block: dict[str, Any], fragment: str | None) -> None:
    if fragment is None:
        resolve_speculation(block)  # 1.73 - 1 <= 1: fits at depth 1
        return
    with pytest.raises(ConfigError, match=fragment):
        resolve_speculation(block)


def test_cli_lists_and_explains_with_source(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], eagle3_draft: dict[str, Any]
) -> None:
    assert main(["speculation", "profiles"]) == 0
    listed = capsys.readouterr().out
    for entry in PROFILES:
        assert entry["name"] in listed
    assert main(["speculation", "profiles", "deepseek"]) == 0
    assert "arxiv.org/abs/2412.19437" in capsys.readouterr().out
    assert main(["speculation", "profiles", "no-such-thing"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    import json

    file = tmp_path / "p.json"
    block = {
        "kind": "eagle3",
        "params": {"num_speculative_tokens": 3},
        "draft_config": eagle3_draft,
        "acceptance_profile": "vllm-ci/eagle3/qwen3-8b/mt-bench",
    }
    file.write_text(json.dumps(block), encoding="utf-8")
    assert main(["speculation", "explain", str(file)]) == 0
    shown = capsys.readouterr().out
    assert "vllm-ci/eagle3/qwen3-8b/mt-bench" in shown
    assert "tests/v1/spec_decode/test_acceptance_length.py" in shown
    assert "qwen3-8b-eagle3" in shown


def test_inferencex_golden_curves_as_published() -> None:
    # golden_al_distribution/minimaxm3_eagle3.yaml @ ce4e6f07: minimax-m3.thinking_on.
    entry = profile_entry("inferencex/eagle3/minimax-m3/thinking-on")
    assert entry["acceptance_length_by_draft_tokens"] == [
        [1.0, 1.78], [2.0, 2.38], [3.0, 2.83], [4.0, 3.11],
        [5.0, 3.35], [6.0, 3.45], [7.0, 3.53], [8.0, 3.74],
    ]  # fmt: skip
    # qwen3.827b_bf16_mtp.yaml: thinking_on k=3 -> 2.52; accepted 128899 over 84995 drafts.
    qwen = profile_entry("inferencex/mtp/qwen3.8-27b-bf16/thinking-on")
    assert (qwen["num_draft_tokens"], qwen["acceptance_length"]) == (3, 2.52)
    assert (
        round(1 + qwen["spread"]["num_accepted_tokens"] / qwen["spread"]["num_drafts"], 2) == 2.52
    )


def test_curve_profile_applies_at_its_published_lengths(eagle3_draft: dict[str, Any]) -> None:
    name = "inferencex/eagle3/minimax-m3/thinking-on"
    draft = {**eagle3_draft}
    # K = 4 -> AL 3.11: the staircase of E = 2.11 (vLLM's synthetic_acceptance_length schedule).
    resolved = _eagle3(draft, name, depth=4)
    assert resolved.acceptance.unconditional_rates == pytest.approx((1.0, 1.0, 0.11, 0.0))
    with pytest.raises(ConfigError, match="published at 1, 2, 3, 4, 5, 6, 7, 8 draft tokens"):
        _eagle3(draft, name, depth=9)
