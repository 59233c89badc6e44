"""Roofline suite: decode and prefill points for every catalogue model on every catalogue GPU,
the Qwen3-8B decode grid, tensor parallelism, attention-DP ranks, each scheme priced natively
(target verification + draft operations), and rejected roofline queries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aisim.catalogue import gpu_names, model_names
from aisim.config import best_available
from qualification.cases._drafts import (
    DFLASH_QWEN3_8B,
    DSPARK_QWEN3_8B,
    EAGLE3_QWEN3_8B,
    QWEN3_0_6B,
)
from qualification.cases._fpm import decode, detailed
from qualification.cases._suite import Suite, make_cases

Row = tuple[str, dict[str, Any]]
QWEN_8B = "Qwen/Qwen3-8B"

SCHEMES: dict[str, dict[str, Any]] = {
    "mtp-1": {"kind": "mtp", "params": {"depth": 1}},
    "mtp-3": {"kind": "mtp", "params": {"depth": 3}},
    "ngram-3": {"kind": "ngram", "params": {"num_speculative_tokens": 3}},
    "eagle3-3": {
        "kind": "eagle3",
        "params": {"num_speculative_tokens": 3},
        "draft_config": EAGLE3_QWEN3_8B,
    },
    "eagle3-tree-4-2-1": {
        "kind": "eagle3",
        "params": {"tree_shape": [4, 2, 1]},
        "draft_config": EAGLE3_QWEN3_8B,
    },
    "dflash-7": {
        "kind": "dflash",
        "params": {"num_draft_tokens": 7},
        "draft_config": DFLASH_QWEN3_8B,
    },
    "dspark-4": {"kind": "dspark", "draft_config": DSPARK_QWEN3_8B},
    "draft_model-4": {
        "kind": "draft_model",
        "params": {"num_speculative_tokens": 4},
        "draft_model_path": "Qwen/Qwen3-0.6B",
        "draft_config": QWEN3_0_6B,
    },
    "medusa-4": {
        "kind": "medusa",
        "draft_config": {
            "num_heads": 4,
            "num_hidden_layers": 1,
            "hidden_size": 4096,
            "vocab_size": 151936,
        },
    },
    "mlp_speculator-3": {
        "kind": "mlp_speculator",
        "draft_config": {"n_predict": 3, "emb_dim": 4096, "inner_dim": 3072, "vocab_size": 151936},
    },
    "suffix-4-lookup-50us": {
        "kind": "suffix",
        "params": {"num_speculative_tokens": 4},
        "suffix_lookup_us_per_request": 50,
    },
}


def _config(model: str, gpu: str, **extra: Any) -> dict[str, Any]:
    return {"model": model, "hardware": gpu, "estimator": "roofline", **extra}


def _rows() -> list[Row]:
    rows: list[Row] = []
    prefill = {"num_prefill_requests": 1, "sum_prefill_tokens": 2048}
    for model in model_names():
        for gpu in gpu_names():
            config = _config(model, gpu)
            rows += [
                (f"{model}/{gpu}/decode-B1-K1k", {"config": config, "metrics": decode(1, 1024)}),
                (
                    f"{model}/{gpu}/decode-B64-K8k",
                    {"config": config, "metrics": decode(64, 64 * 8192)},
                ),
                (f"{model}/{gpu}/prefill-2048", {"config": config, "metrics": prefill}),
            ]
    for gpu in ("h100_sxm", "h200_sxm"):
        for batch in (1, 8, 64):
            for kv in (1024, 8192):
                rows.append(
                    (
                        f"grid/{QWEN_8B}/{gpu}/B{batch}/K{kv}-per-request",
                        {"config": _config(QWEN_8B, gpu), "metrics": decode(batch, batch * kv)},
                    )
                )
    for batch in (1, 2, 4, 16, 32, 128):
        rows.append(
            (
                f"monotone/{QWEN_8B}/h100_sxm/B{batch}-K4096",
                {"config": _config(QWEN_8B, "h100_sxm"), "metrics": decode(batch, 4096)},
            )
        )
    for tp in (1, 2, 4, 8):
        rows.append(
            (
                f"tp/meta-llama/Meta-Llama-3.1-70B/h100_sxm/tp{tp}",
                {
                    "config": _config(
                        "meta-llama/Meta-Llama-3.1-70B", "h100_sxm", tensor_parallel=tp
                    ),
                    "metrics": decode(8, 8 * 4096),
                },
            )
        )
    h100 = _config(QWEN_8B, "h100_sxm")
    rows += [
        ("mixed/qwen3-8b/h100", {"config": h100, "metrics": {**decode(16, 16 * 2048), **prefill}}),
        (
            "prefill/qwen3-8b/h100/8x512",
            {"config": h100, "metrics": {"num_prefill_requests": 8, "sum_prefill_tokens": 4096}},
        ),
        (
            "prefill/qwen3-8b/h100/chunk-with-past",
            {
                "config": h100,
                "metrics": {
                    "num_prefill_requests": 1,
                    "sum_prefill_tokens": 512,
                    "prefill_past_kv_lengths": [8192],
                    "extend_lengths": [512],
                },
            },
        ),
        (
            "ranks/qwen3-8b/h100/two",
            {"config": h100, "metrics": [decode(4, 4096), decode(32, 32 * 1024)]},
        ),
        (
            "ranks/qwen3-8b/h100/with-idle",
            {"config": h100, "metrics": [decode(4, 4096), decode(0, 0)]},
        ),
        (
            "kv-list/qwen3-8b/h100",
            {"config": h100, "metrics": {**decode(3, 9000), "past_kv_lengths": [1000, 3000, 5000]}},
        ),
    ]
    for name, scheme in SCHEMES.items():
        for batch, kv in ((1, 1024), (16, 16 * 4096)):
            rows.append(
                (
                    f"sd/{name}/qwen3-8b/h100/B{batch}",
                    {
                        "config": _config(QWEN_8B, "h100_sxm", speculation=scheme),
                        "metrics": decode(batch, kv),
                    },
                )
            )
    rows.append(
        (
            "sd/mtp-1/mimo-7b/h200/B8",
            {
                "config": _config(
                    "XiaomiMiMo/MiMo-7B-Base", "h200_sxm", speculation=SCHEMES["mtp-1"]
                ),
                "metrics": decode(8, 8 * 2048),
            },
        )
    )
    rows += [
        (
            "error/draft-length-on-roofline",
            {"config": h100, "metrics": decode(2, 64), "draft_length": 3},
        ),
        (
            "error/draft-length-on-native-scheme",
            {
                "config": _config(QWEN_8B, "h100_sxm", speculation=SCHEMES["mtp-3"]),
                "metrics": decode(2, 64),
                "draft_length": 3,
            },
        ),
        (
            "error/unknown-estimator",
            {"config": {**h100, "estimator": "oracle"}, "metrics": decode(1, 64)},
        ),
        ("error/unknown-model", {"config": _config("GPT-9", "h100_sxm"), "metrics": decode(1, 64)}),
        ("error/unknown-gpu", {"config": _config(QWEN_8B, "tpu"), "metrics": decode(1, 64)}),
        ("error/tp-0", {"config": {**h100, "tensor_parallel": 0}, "metrics": decode(1, 64)}),
        (
            "error/suffix-without-lookup-cost",
            {
                "config": _config(
                    QWEN_8B,
                    "h100_sxm",
                    speculation={"kind": "suffix", "params": {"num_speculative_tokens": 4}},
                ),
                "metrics": decode(1, 64),
            },
        ),
        ("error/unknown-config-key", {"config": {**h100, "batch": 3}, "metrics": decode(1, 64)}),
        (
            "error/gated-scheme",
            {
                "config": _config(
                    "Qwen/Qwen3-30B-A3B", "h100_sxm", speculation=SCHEMES["eagle3-3"]
                ),
                "metrics": decode(1, 64),
            },
        ),
        ("error/config-not-a-mapping", {"config": [QWEN_8B], "metrics": decode(1, 64)}),
    ]
    return rows


def evaluate(inputs: Mapping[str, Any]) -> dict[str, Any]:
    model = best_available(inputs["config"])
    result = detailed(model, inputs)
    result["draft_weight_bytes"] = model.draft_weight_bytes
    result["draft_kv_bytes_per_token"] = model.draft_kv_bytes_per_token
    return result


SUITE = Suite(
    name="roofline",
    description="roofline decode/prefill for catalogue models x GPUs, TP, ranks, SD schemes",
    cases=make_cases(_rows()),
    evaluate=evaluate,
)
