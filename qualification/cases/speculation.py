"""Speculation suite: resolution of every kind (valid params, defaults, normalization), the
gates, legacy spellings and their canonical equivalents, acceptance inputs, replay depth, and
every error case (the golden is the error class and message).

Inputs are ``{"op": "resolve", "mapping": ...}`` (or ``"yaml"``: YAML text, for inputs JSON cannot
hold such as non-string keys and NaN), optional ``model``/``backend``/``role``/
``tensor_parallel``; or ``{"op": "equivalent", "a": ..., "b": ...}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from aisim.errors import AisimError
from aisim.speculation import resolve_speculation
from qualification.cases._drafts import (
    DFLASH_QWEN3_8B,
    DSPARK_QWEN3_8B,
    EAGLE3_HIDDEN_2048,
    EAGLE3_LLAMA_8B,
    EAGLE3_QWEN3_8B,
    QWEN3_0_6B,
)
from qualification.cases._suite import Suite, make_cases

LLAMA_8B = "meta-llama/Meta-Llama-3.1-8B"
QWEN_8B = "Qwen/Qwen3-8B"
MOE = "Qwen/Qwen3-30B-A3B"
MLA = "deepseek-ai/DeepSeek-V3"

Row = tuple[str, dict[str, Any]]


def _resolve(mapping: Any, **context: Any) -> dict[str, Any]:
    return {"op": "resolve", "mapping": mapping, **context}


def _yaml(text: str, **context: Any) -> dict[str, Any]:
    return {"op": "resolve", "yaml": text, **context}


def _valid_rows() -> list[Row]:
    rows: list[Row] = [
        ("none/null", _resolve(None)),
        ("none/empty", _resolve({})),
        ("none/kind", _resolve({"kind": "none"})),
        ("none/legacy-nextn-0", _resolve({"nextn": 0, "nextn_accepted": 0})),
        ("none/with-seed", _resolve({"kind": "none", "seed": 5})),
    ]
    for depth in range(1, 7):
        rows.append((f"mtp/depth-{depth}", _resolve({"kind": "mtp", "params": {"depth": depth}})))
    rows += [
        (
            "mtp/synonym-num_speculative_tokens",
            _resolve({"kind": "mtp", "params": {"num_speculative_tokens": 2}}),
        ),
        ("mtp/integral-float-depth", _resolve({"kind": "mtp", "params": {"depth": 2.0}})),
        (
            "mtp/both-spellings-agree",
            _resolve({"kind": "mtp", "params": {"depth": 3, "num_speculative_tokens": 3}}),
        ),
        ("mtp/depth-64", _resolve({"kind": "mtp", "params": {"depth": 64}})),
        (
            "mtp/with-target-and-backend",
            _resolve(
                {"kind": "mtp", "params": {"depth": 1}}, model=MLA, backend="sglang", role="decode"
            ),
        ),
    ]
    for count in range(1, 6):
        rows.append(
            (
                f"ngram/k-{count}",
                _resolve({"kind": "ngram", "params": {"num_speculative_tokens": count}}),
            )
        )
    rows += [
        (
            "ngram/trigger-rate-1",
            _resolve({"kind": "ngram", "params": {"num_speculative_tokens": 3, "trigger_rate": 1}}),
        ),
        (
            "ngram/vllm-decode-role",
            _resolve(
                {"kind": "ngram", "params": {"num_speculative_tokens": 3}},
                backend="vllm",
                role="decode",
            ),
        ),
        (
            "ngram/sglang-no-role",
            _resolve({"kind": "ngram", "params": {"num_speculative_tokens": 3}}, backend="sglang"),
        ),
    ]
    eagle = {"kind": "eagle3", "draft_config": EAGLE3_LLAMA_8B}
    rows.append(("eagle3/default", _resolve(eagle)))
    for count in range(1, 6):
        rows.append(
            (
                f"eagle3/chain-{count}",
                _resolve({**eagle, "params": {"num_speculative_tokens": count}}),
            )
        )
    for shape in ([4, 2, 1], [2, 2], [1, 1, 1], [8], [3, 1, 1, 1]):
        label = "-".join(str(width) for width in shape)
        rows.append((f"eagle3/tree-{label}", _resolve({**eagle, "params": {"tree_shape": shape}})))
    rows += [
        (
            "eagle3/tree-budget-6",
            _resolve({**eagle, "params": {"tree_shape": [4, 2, 1], "verify_token_budget": 6}}),
        ),
        (
            "eagle3/chain-budget-2",
            _resolve({**eagle, "params": {"num_speculative_tokens": 3, "verify_token_budget": 2}}),
        ),
        (
            "eagle3/with-path",
            _resolve({**eagle, "draft_model_path": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}),
        ),
        ("eagle3/llama-target-vllm", _resolve(eagle, model=LLAMA_8B, backend="vllm")),
        (
            "eagle3/qwen3-target-sglang",
            _resolve(
                {"kind": "eagle3", "draft_config": EAGLE3_QWEN3_8B},
                model=QWEN_8B,
                backend="sglang",
                role="aggregated",
            ),
        ),
    ]
    dflash = {"kind": "dflash", "draft_config": DFLASH_QWEN3_8B}
    rows.append(("dflash/default-from-block-size", _resolve(dflash)))
    for count in (1, 3, 7, 15):
        rows.append(
            (f"dflash/n-{count}", _resolve({**dflash, "params": {"num_draft_tokens": count}}))
        )
    rows.append(("dflash/qwen3-vllm", _resolve(dflash, model=QWEN_8B, backend="vllm")))
    dspark = {"kind": "dspark", "draft_config": DSPARK_QWEN3_8B}
    rows += [
        ("dspark/defaults", _resolve(dspark)),
        ("dspark/n-2", _resolve({**dspark, "params": {"num_draft_tokens": 2}})),
        (
            "dspark/n-5-layers-1",
            _resolve({**dspark, "params": {"num_draft_tokens": 5, "num_draft_layers": 1}}),
        ),
        ("dspark/sglang", _resolve(dspark, model=QWEN_8B, backend="sglang")),
    ]
    draft = {"kind": "draft_model", "draft_model_path": "Qwen/Qwen3-0.6B"}
    for count in range(1, 6):
        rows.append(
            (
                f"draft_model/k-{count}",
                _resolve({**draft, "params": {"num_speculative_tokens": count}}),
            )
        )
    rows += [
        (
            "draft_model/draft-tp-2",
            _resolve({**draft, "params": {"num_speculative_tokens": 4, "draft_tp_size": 2}}),
        ),
        (
            "draft_model/tp-default-from-target",
            _resolve({**draft, "params": {"num_speculative_tokens": 4}}, tensor_parallel=4),
        ),
        (
            "draft_model/with-config",
            _resolve(
                {**draft, "draft_config": QWEN3_0_6B, "params": {"num_speculative_tokens": 4}}
            ),
        ),
        (
            "draft_model/vllm",
            _resolve(
                {**draft, "params": {"num_speculative_tokens": 2}},
                model=QWEN_8B,
                backend="vllm",
                role="decode",
            ),
        ),
    ]
    return rows


def _acceptance_rows() -> list[Row]:
    mtp3 = {"kind": "mtp", "params": {"depth": 3}}
    forms: dict[str, dict[str, Any]] = {
        "expected-accepted-1.5": {"expected_accepted_tokens": 1.5},
        "expected-accepted-0": {"expected_accepted_tokens": 0},
        "expected-accepted-3": {"expected_accepted_tokens": 3},
        "conditional": {"acceptance_rates": [0.8, 0.6, 0.4]},
        "unconditional": {"unconditional_acceptance_rates": [0.8, 0.48, 0.192]},
        "acceptance-length-2.5": {"acceptance_length": 2.5},
        "acceptance-length-1": {"acceptance_length": 1},
        "iid-0.7": {"acceptance_rate": 0.7},
        "iid-1": {"acceptance_rate": 1.0},
        "with-seed": {"expected_accepted_tokens": 1.5, "seed": 42},
    }
    rows = [
        (f"acceptance/mtp3/{name}", _resolve({**mtp3, **extra})) for name, extra in forms.items()
    ]
    rows.append(
        (
            "acceptance/ngram4/conditional",
            _resolve(
                {
                    "kind": "ngram",
                    "params": {"num_speculative_tokens": 4},
                    "acceptance_rates": [0.6, 0.5, 0.4, 0.3],
                    "seed": 7,
                }
            ),
        )
    )
    rows.append(
        (
            "acceptance/eagle3-tree/unconditional",
            _resolve(
                {
                    "kind": "eagle3",
                    "draft_config": EAGLE3_LLAMA_8B,
                    "params": {"tree_shape": [4, 2, 1]},
                    "unconditional_acceptance_rates": [0.8, 0.55, 0.3],
                }
            ),
        )
    )
    return rows


def _legacy_rows() -> list[Row]:
    return [
        ("legacy/nextn-3", _resolve({"nextn": 3, "nextn_accepted": 1.5, "seed": 42})),
        ("legacy/nextn-only", _resolve({"nextn": 2})),
        (
            "legacy/nextn-agrees-with-params",
            _resolve({"kind": "mtp", "params": {"depth": 3}, "nextn": 3}),
        ),
        (
            "legacy/flat-ngram",
            _resolve(
                {
                    "kind": "ngram",
                    "num_speculative_tokens": 4,
                    "acceptance_rates": [0.6, 0.5, 0.4, 0.3],
                    "seed": 7,
                }
            ),
        ),
        (
            "legacy/flat-ngram-agrees",
            _resolve(
                {
                    "kind": "ngram",
                    "num_speculative_tokens": 4,
                    "params": {"num_speculative_tokens": 4},
                }
            ),
        ),
    ]


def _equivalence_rows() -> list[Row]:
    def eq(a: Any, b: Any) -> dict[str, Any]:
        return {"op": "equivalent", "a": a, "b": b}

    mtp3 = {"kind": "mtp", "params": {"depth": 3}}
    ngram4 = {"kind": "ngram", "params": {"num_speculative_tokens": 4}}
    rates = [0.6, 0.5, 0.4, 0.3]
    eagle = {"kind": "eagle3", "draft_config": EAGLE3_LLAMA_8B}
    return [
        (
            "equivalent/legacy-nextn-vs-mtp",
            eq({"nextn": 3, "nextn_accepted": 1.5}, {**mtp3, "expected_accepted_tokens": 1.5}),
        ),
        (
            "equivalent/flat-ngram-vs-canonical",
            eq(
                {"kind": "ngram", "num_speculative_tokens": 4, "acceptance_rates": rates},
                {**ngram4, "acceptance_rates": rates},
            ),
        ),
        (
            "equivalent/depth-vs-synonym",
            eq(mtp3, {"kind": "mtp", "params": {"num_speculative_tokens": 3}}),
        ),
        ("equivalent/integral-float", eq(mtp3, {"kind": "mtp", "params": {"depth": 3.0}})),
        (
            "equivalent/acceptance-not-in-identity",
            eq({**mtp3, "expected_accepted_tokens": 0.5}, {**mtp3, "acceptance_length": 3.5}),
        ),
        ("equivalent/seed-not-in-identity", eq({**mtp3, "seed": 1}, {**mtp3, "seed": 2})),
        (
            "equivalent/ngram-default-trigger",
            eq(
                ngram4,
                {"kind": "ngram", "params": {"num_speculative_tokens": 4, "trigger_rate": 1.0}},
            ),
        ),
        (
            "equivalent/eagle3-default-vs-3",
            eq(eagle, {**eagle, "params": {"num_speculative_tokens": 3}}),
        ),
        (
            "equivalent/eagle3-chain-tree-of-ones",
            eq(
                {**eagle, "params": {"num_speculative_tokens": 3}},
                {**eagle, "params": {"tree_shape": [1, 1, 1]}},
            ),
        ),
        (
            "equivalent/eagle3-default-budget",
            eq(
                {**eagle, "params": {"tree_shape": [4, 2, 1]}},
                {**eagle, "params": {"tree_shape": [4, 2, 1], "verify_token_budget": 8}},
            ),
        ),
        (
            "equivalent/dflash-default-vs-15",
            eq(
                {"kind": "dflash", "draft_config": DFLASH_QWEN3_8B},
                {
                    "kind": "dflash",
                    "draft_config": DFLASH_QWEN3_8B,
                    "params": {"num_draft_tokens": 15},
                },
            ),
        ),
        ("equivalent/none-vs-empty", eq({"kind": "none"}, {})),
        ("different/mtp-2-vs-3", eq(mtp3, {"kind": "mtp", "params": {"depth": 2}})),
        (
            "different/mtp-vs-ngram",
            eq(mtp3, {"kind": "ngram", "params": {"num_speculative_tokens": 3}}),
        ),
        (
            "different/draft-path",
            eq(
                {
                    "kind": "draft_model",
                    "draft_model_path": "a",
                    "params": {"num_speculative_tokens": 2},
                },
                {
                    "kind": "draft_model",
                    "draft_model_path": "b",
                    "params": {"num_speculative_tokens": 2},
                },
            ),
        ),
        (
            "different/eagle3-draft-geometry",
            eq(eagle, {"kind": "eagle3", "draft_config": EAGLE3_QWEN3_8B}),
        ),
    ]


def _error_rows() -> list[Row]:
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


def _resolve_inputs(inputs: Mapping[str, Any], key: str = "mapping") -> Any:
    if "yaml" in inputs:
        return yaml.safe_load(inputs["yaml"])
    return inputs[key]


def _context(inputs: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("model", "backend", "role", "tensor_parallel")
    return {key: inputs[key] for key in keys if key in inputs}


def evaluate(inputs: Mapping[str, Any]) -> dict[str, Any]:
    context = _context(inputs)
    if inputs["op"] == "equivalent":
        a = resolve_speculation(inputs["a"], **context)
        b = resolve_speculation(inputs["b"], **context)
        return {
            "a_cost_identity": a.cost_identity,
            "b_cost_identity": b.cost_identity,
            "same_cost_identity": a.cost_identity == b.cost_identity,
            "same_acceptance": a.to_dict()["acceptance"] == b.to_dict()["acceptance"],
            "equal": a == b,
        }
    resolved = resolve_speculation(_resolve_inputs(inputs), **context)
    replay: dict[str, Any]
    try:
        replay = {"replay_depth": resolved.replay_depth}
    except AisimError as exc:
        replay = {"replay_error": {"type": type(exc).__name__, "message": str(exc)}}
    return {"resolved": resolved.to_dict(), **replay}


SUITE = Suite(
    name="speculation",
    description="resolution of every kind, gates, legacy equivalences, acceptance inputs, errors",
    cases=make_cases(
        _valid_rows() + _acceptance_rows() + _legacy_rows() + _equivalence_rows() + _error_rows()
    ),
    evaluate=evaluate,
)
