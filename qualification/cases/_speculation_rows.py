"""Case rows of the speculation suite (data only): valid blocks of every kind, acceptance inputs,
legacy spellings, cost-identity equivalences and error cases. ``qualification.cases.speculation``
evaluates them."""

from __future__ import annotations

from typing import Any

from qualification.cases._drafts import (
    DFLASH_QWEN3_8B,
    DSPARK_QWEN3_8B,
    EAGLE3_LLAMA_8B,
    EAGLE3_QWEN3_8B,
    QWEN3_0_6B,
)
from qualification.cases._speculation_errors import error_rows

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


def all_rows() -> list[Row]:
    """Every case row of the suite, in a fixed order."""
    return _valid_rows() + _acceptance_rows() + _legacy_rows() + _equivalence_rows() + error_rows()
