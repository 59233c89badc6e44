"""Error-case rows of the speculation suite (data only): malformed mappings, unknown kinds and
params, out-of-range and mistyped values, draft requirements, gates, legacy conflicts, invalid
acceptance inputs and seeds."""

from __future__ import annotations

from typing import Any

from qualification.cases._drafts import (
    DFLASH_QWEN3_8B,
    EAGLE3_HIDDEN_2048,
    EAGLE3_LLAMA_8B,
    QWEN3_0_6B,
)

LLAMA_8B = "meta-llama/Meta-Llama-3.1-8B"
MOE = "Qwen/Qwen3-30B-A3B"
MLA = "deepseek-ai/DeepSeek-V3"

Row = tuple[str, dict[str, Any]]


def _resolve(mapping: Any, **context: Any) -> dict[str, Any]:
    return {"op": "resolve", "mapping": mapping, **context}


def _yaml(text: str, **context: Any) -> dict[str, Any]:
    return {"op": "resolve", "yaml": text, **context}


def error_rows() -> list[Row]:
    """Inputs ``resolve_speculation`` must reject; each golden is the error class and message."""
    mtp = {"kind": "mtp"}
    eagle = {"kind": "eagle3", "draft_config": EAGLE3_LLAMA_8B}
    rows: list[Row] = [
        ("error/not-a-mapping-list", _resolve([1, 2])),
        ("error/not-a-mapping-string", _resolve("mtp")),
        ("error/not-a-mapping-number", _resolve(3)),
        ("error/non-string-key", _yaml("kind: mtp\nparams: {depth: 2}\n1: x\n")),
        ("error/non-string-param-key", _yaml("kind: mtp\nparams: {depth: 2, 7: x}\n")),
        ("error/unknown-top-level-field", _resolve({**mtp, "params": {"depth": 2}, "depht": 2})),
        ("error/unknown-kind", _resolve({"kind": "medusa"})),
        ("error/kind-not-a-string", _resolve({"kind": 3})),
        ("error/kind-null", _resolve({"kind": None, "params": {"depth": 2}})),
        ("error/params-a-list", _resolve({**mtp, "params": [3]})),
        ("error/unknown-param", _resolve({**mtp, "params": {"depth": 2, "width": 3}})),
        ("error/mtp-missing-depth", _resolve({**mtp, "params": {}})),
        ("error/mtp-depth-0", _resolve({**mtp, "params": {"depth": 0}})),
        ("error/mtp-depth-negative", _resolve({**mtp, "params": {"depth": -2}})),
        ("error/mtp-depth-65", _resolve({**mtp, "params": {"depth": 65}})),
        ("error/mtp-depth-bool", _resolve({**mtp, "params": {"depth": True}})),
        ("error/mtp-depth-fraction", _resolve({**mtp, "params": {"depth": 2.5}})),
        ("error/mtp-depth-string", _resolve({**mtp, "params": {"depth": "3"}})),
        ("error/mtp-depth-nan", _yaml("kind: mtp\nparams: {depth: .nan}\n")),
        ("error/mtp-depth-inf", _yaml("kind: mtp\nparams: {depth: .inf}\n")),
        (
            "error/mtp-spellings-disagree",
            _resolve({**mtp, "params": {"depth": 3, "num_speculative_tokens": 2}}),
        ),
        (
            "error/mtp-draft-config",
            _resolve({**mtp, "params": {"depth": 2}, "draft_config": QWEN3_0_6B}),
        ),
        (
            "error/mtp-draft-path",
            _resolve({**mtp, "params": {"depth": 2}, "draft_model_path": "x"}),
        ),
        ("error/ngram-missing-k", _resolve({"kind": "ngram"})),
        (
            "error/ngram-trigger-rate-0.5",
            _resolve(
                {"kind": "ngram", "params": {"num_speculative_tokens": 3, "trigger_rate": 0.5}}
            ),
        ),
        (
            "error/ngram-trigger-rate-2",
            _resolve({"kind": "ngram", "params": {"num_speculative_tokens": 3, "trigger_rate": 2}}),
        ),
        (
            "error/ngram-draft-config",
            _resolve(
                {
                    "kind": "ngram",
                    "params": {"num_speculative_tokens": 3},
                    "draft_config": QWEN3_0_6B,
                }
            ),
        ),
        (
            "error/ngram-sglang-replay",
            _resolve(
                {"kind": "ngram", "params": {"num_speculative_tokens": 3}},
                backend="sglang",
                role="decode",
            ),
        ),
        ("error/eagle3-missing-draft-config", _resolve({"kind": "eagle3"})),
        ("error/eagle3-draft-config-list", _resolve({"kind": "eagle3", "draft_config": [1]})),
        (
            "error/eagle3-draft-config-missing-layers",
            _resolve(
                {"kind": "eagle3", "draft_config": {**EAGLE3_LLAMA_8B, "num_hidden_layers": None}}
            ),
        ),
        ("error/eagle3-empty-tree", _resolve({**eagle, "params": {"tree_shape": []}})),
        ("error/eagle3-tree-zero-width", _resolve({**eagle, "params": {"tree_shape": [2, 0]}})),
        ("error/eagle3-tree-not-a-list", _resolve({**eagle, "params": {"tree_shape": 3}})),
        (
            "error/eagle3-tree-vs-k",
            _resolve({**eagle, "params": {"tree_shape": [2, 1], "num_speculative_tokens": 3}}),
        ),
        (
            "error/eagle3-budget-too-big",
            _resolve({**eagle, "params": {"tree_shape": [4, 2, 1], "verify_token_budget": 9}}),
        ),
        ("error/eagle3-budget-1", _resolve({**eagle, "params": {"verify_token_budget": 1}})),
        ("error/eagle3-moe-target", _resolve(eagle, model=MOE, backend="vllm")),
        ("error/eagle3-mla-target", _resolve(eagle, model=MLA)),
        (
            "error/eagle3-hidden-mismatch",
            _resolve({"kind": "eagle3", "draft_config": EAGLE3_HIDDEN_2048}, model=LLAMA_8B),
        ),
        (
            "error/dflash-sglang",
            _resolve({"kind": "dflash", "draft_config": DFLASH_QWEN3_8B}, backend="sglang"),
        ),
        (
            "error/dflash-too-many",
            _resolve(
                {
                    "kind": "dflash",
                    "draft_config": DFLASH_QWEN3_8B,
                    "params": {"num_draft_tokens": 16},
                }
            ),
        ),
        (
            "error/dflash-no-block-no-n",
            _resolve(
                {
                    "kind": "dflash",
                    "draft_config": {k: v for k, v in DFLASH_QWEN3_8B.items() if k != "block_size"},
                }
            ),
        ),
        (
            "error/dflash-block-1",
            _resolve({"kind": "dflash", "draft_config": {**DFLASH_QWEN3_8B, "block_size": 1}}),
        ),
        (
            "error/dspark-missing-draft",
            _resolve({"kind": "dspark", "params": {"num_draft_tokens": 2}}),
        ),
        (
            "error/draft_model-missing-path",
            _resolve({"kind": "draft_model", "params": {"num_speculative_tokens": 2}}),
        ),
        (
            "error/draft_model-missing-k",
            _resolve({"kind": "draft_model", "draft_model_path": "Qwen/Qwen3-0.6B"}),
        ),
        (
            "error/draft_model-sglang",
            _resolve(
                {
                    "kind": "draft_model",
                    "draft_model_path": "Qwen/Qwen3-0.6B",
                    "params": {"num_speculative_tokens": 2},
                },
                backend="sglang",
            ),
        ),
        (
            "error/draft_model-tp-0",
            _resolve(
                {
                    "kind": "draft_model",
                    "draft_model_path": "Qwen/Qwen3-0.6B",
                    "params": {"num_speculative_tokens": 2, "draft_tp_size": 0},
                }
            ),
        ),
        ("error/none-with-params", _resolve({"kind": "none", "params": {"depth": 1}})),
        ("error/none-with-acceptance", _resolve({"kind": "none", "expected_accepted_tokens": 1})),
        ("error/none-with-draft", _resolve({"kind": "none", "draft_model_path": "x"})),
        ("error/legacy-conflict", _resolve({**mtp, "params": {"depth": 3}, "nextn": 2})),
        (
            "error/legacy-nextn-with-ngram",
            _resolve({"kind": "ngram", "params": {"num_speculative_tokens": 3}, "nextn": 3}),
        ),
        (
            "error/legacy-flat-conflict",
            _resolve(
                {
                    "kind": "ngram",
                    "num_speculative_tokens": 4,
                    "params": {"num_speculative_tokens": 3},
                }
            ),
        ),
        ("error/legacy-nextn-bool", _resolve({"nextn": True})),
        (
            "error/acceptance-two-forms",
            _resolve(
                {
                    **mtp,
                    "params": {"depth": 3},
                    "expected_accepted_tokens": 1,
                    "acceptance_length": 2,
                }
            ),
        ),
        (
            "error/acceptance-mean-above-depth",
            _resolve({**mtp, "params": {"depth": 3}, "expected_accepted_tokens": 3.5}),
        ),
        (
            "error/acceptance-mean-negative",
            _resolve({**mtp, "params": {"depth": 3}, "expected_accepted_tokens": -0.1}),
        ),
        (
            "error/acceptance-rates-wrong-count",
            _resolve({**mtp, "params": {"depth": 3}, "acceptance_rates": [0.5, 0.5]}),
        ),
        (
            "error/acceptance-rate-above-1",
            _resolve({**mtp, "params": {"depth": 2}, "acceptance_rates": [0.5, 1.5]}),
        ),
        (
            "error/acceptance-rates-not-a-list",
            _resolve({**mtp, "params": {"depth": 2}, "acceptance_rates": 0.5}),
        ),
        (
            "error/acceptance-unconditional-increasing",
            _resolve({**mtp, "params": {"depth": 2}, "unconditional_acceptance_rates": [0.5, 0.6]}),
        ),
        (
            "error/acceptance-length-below-1",
            _resolve({**mtp, "params": {"depth": 2}, "acceptance_length": 0.5}),
        ),
        (
            "error/acceptance-length-above-d-plus-1",
            _resolve({**mtp, "params": {"depth": 2}, "acceptance_length": 3.5}),
        ),
        (
            "error/acceptance-iid-negative",
            _resolve({**mtp, "params": {"depth": 2}, "acceptance_rate": -0.5}),
        ),
        (
            "error/acceptance-nan",
            _yaml("kind: mtp\nparams: {depth: 2}\nexpected_accepted_tokens: .nan\n"),
        ),
        ("error/seed-negative", _resolve({**mtp, "params": {"depth": 2}, "seed": -1})),
        ("error/seed-bool", _resolve({**mtp, "params": {"depth": 2}, "seed": False})),
        ("error/seed-too-big", _resolve({**mtp, "params": {"depth": 2}, "seed": 2**63})),
        ("error/backend-unknown", _resolve({**mtp, "params": {"depth": 2}}, backend="trtllm")),
        ("error/role-unknown", _resolve({**mtp, "params": {"depth": 2}}, role="router")),
        ("error/model-unknown", _resolve({**mtp, "params": {"depth": 2}}, model="GPT-9")),
    ]
    return rows
