"""Catalogue suite: derived geometry of every built-in model and every built-in GPU's numbers,
name resolution (aliases) and malformed model/GPU inputs (each a ConfigError)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aisim.catalogue import gpu_names, model_names
from aisim.config import get_gpu, get_model
from qualification.cases._suite import Suite, make_cases

_MODELS = model_names()
_GPUS = gpu_names()

_TINY_CONFIG: dict[str, Any] = {
    "model_type": "llama",
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 1000,
}


def _with(**changes: Any) -> dict[str, Any]:
    config = dict(_TINY_CONFIG)
    for key, value in changes.items():
        if value is _DROP:
            config.pop(key)
        else:
            config[key] = value
    return config


_DROP = object()

_ROWS: list[tuple[str, dict[str, Any]]] = []
_ROWS += [(f"model/{name}", {"model": name}) for name in _MODELS]
_ROWS += [(f"gpu/{name}", {"gpu": name}) for name in _GPUS]
_ROWS += [
    ("model/alias/qwen3-8b", {"model": "qwen3-8b"}),
    ("model/alias/Meta-Llama-3.1-8B", {"model": "Meta-Llama-3.1-8B"}),
    ("gpu/alias/h100", {"gpu": "h100"}),
    ("gpu/alias/H200_SXM", {"gpu": "H200_SXM"}),
    ("model/mapping/tiny-llama", {"model": _TINY_CONFIG}),
    ("model/mapping/tiny-llama-tied", {"model": _with(tie_word_embeddings=True)}),
    ("model/mapping/tiny-moe", {"model": _with(num_experts=4, num_experts_per_tok=2)}),
    ("model/mapping/head-dim-explicit", {"model": _with(head_dim=32)}),
    ("model/mapping/fp8", {"model": _with(torch_dtype="fp8")}),
    (
        "gpu/mapping/minimal",
        {"gpu": {"bf16_dense_flops": 1e15, "hbm_bytes_per_s": 2e12, "hbm_capacity_bytes": 8e10}},
    ),
    # error cases: the golden is the error class and message
    ("error/model/unknown-name", {"model": "NoSuchModel-7B"}),
    ("error/model/not-a-mapping", {"model": 42}),
    ("error/model/list", {"model": ["llama"]}),
    ("error/model/missing-layers", {"model": _with(num_hidden_layers=_DROP)}),
    ("error/model/bool-layers", {"model": _with(num_hidden_layers=True)}),
    ("error/model/fractional-hidden", {"model": _with(hidden_size=64.5)}),
    ("error/model/negative-heads", {"model": _with(num_key_value_heads=-1)}),
    ("error/model/zero-vocab", {"model": _with(vocab_size=0)}),
    ("error/model/unknown-dtype", {"model": _with(torch_dtype="int3")}),
    ("error/model/string-layers", {"model": _with(num_hidden_layers="many")}),
    ("error/model/missing-file", {"model": "/nonexistent/config.json"}),
    ("error/gpu/unknown-name", {"gpu": "tpu_v9"}),
    ("error/gpu/not-a-mapping", {"gpu": 3.5}),
    (
        "error/gpu/missing-bandwidth",
        {"gpu": {"bf16_dense_flops": 1e15, "hbm_capacity_bytes": 8e10}},
    ),
    (
        "error/gpu/zero-flops",
        {"gpu": {"bf16_dense_flops": 0, "hbm_bytes_per_s": 2e12, "hbm_capacity_bytes": 8e10}},
    ),
    (
        "error/gpu/nan-bandwidth",
        {"gpu": {"bf16_dense_flops": 1e15, "hbm_bytes_per_s": "nan", "hbm_capacity_bytes": 8e10}},
    ),
]


def evaluate(inputs: Mapping[str, Any]) -> dict[str, Any]:
    if "model" in inputs:
        spec = get_model(inputs["model"])
        return {
            "name": spec.name,
            "family": spec.family,
            "is_llama_like": spec.is_llama_like,
            "is_moe": spec.is_moe,
            "uses_mla": spec.uses_mla,
            "geometry": {key: value for key, value in spec.geometry_items()},
            "kv_bytes_per_token": spec.kv_bytes_per_token,
            "num_parameters": spec.num_parameters,
            "weight_bytes": spec.weight_bytes,
        }
    gpu = get_gpu(inputs["gpu"])
    return {
        "name": gpu.name,
        "bf16_flops": gpu.bf16_flops,
        "fp8_flops": gpu.fp8_flops,
        "hbm_bytes_per_s": gpu.hbm_bytes_per_s,
        "hbm_capacity_bytes": gpu.hbm_capacity_bytes,
        "nvlink_bytes_per_s": gpu.nvlink_bytes_per_s,
        "tdp_w": gpu.tdp_w,
        "sm_version": gpu.sm_version,
    }


SUITE = Suite(
    name="catalogue",
    description="built-in models and GPUs, aliases, config mappings and their errors",
    cases=make_cases(_ROWS),
    evaluate=evaluate,
)
