"""The built-in model and GPU catalogue: frozen specs looked up by name (no parsing, no I/O).

A user's own ``config.json`` or GPU file, or a mapping, is read at the config edge:
``aisim.config.get_model`` / ``get_gpu`` (which fall back to these built-ins by name).
"""

from __future__ import annotations

from aisim.catalogue._costs import COST_SOURCES, IDEAL_TERMS, MEASURED_TERMS, CostSource, CostTerms
from aisim.catalogue._data import GPUS, MODELS
from aisim.catalogue._deployment import (
    ACTIVATION_SCALES,
    CHECKPOINT,
    KV_PRECISIONS,
    WEIGHT_PRECISIONS,
    Deployment,
    alltoall_bytes_per_rank,
    deployed_weight_bytes,
)
from aisim.catalogue._specs import (
    DTYPE_BYTES,
    LLAMA_LIKE_MODEL_TYPES,
    MAX_GEOMETRY,
    MAX_GPU_FIGURE,
    GpuSpec,
    ModelSpec,
)

_MODELS: dict[str, ModelSpec] = {spec.name: spec for spec in MODELS}
_GPUS: dict[str, GpuSpec] = {spec.name: spec for spec in GPUS}
# Short spellings users type: "h100" for "h100_sxm", "Qwen3-8B" for "Qwen/Qwen3-8B".
_GPU_ALIASES: dict[str, str] = {name.split("_")[0]: name for name in _GPUS}
_MODEL_ALIASES: dict[str, str] = {name.split("/")[-1].lower(): name for name in _MODELS}


def model_names() -> list[str]:
    return sorted(_MODELS)


def gpu_names() -> list[str]:
    return sorted(_GPUS)


def builtin_model(name: str) -> ModelSpec | None:
    """The built-in model called ``name`` (``"Qwen/Qwen3-8B"``, or case-insensitively its last
    part, ``"qwen3-8b"``), or ``None``. Specs are frozen and shared."""
    spec = _MODELS.get(name)
    if spec is not None:
        return spec
    alias = _MODEL_ALIASES.get(name.split("/")[-1].lower())
    return None if alias is None else _MODELS[alias]


def builtin_gpu(name: str) -> GpuSpec | None:
    """The built-in GPU called ``name`` (case-insensitive; ``"h100"`` == ``"h100_sxm"``), or
    ``None``."""
    key = name.lower()
    if key in _GPUS:
        return _GPUS[key]
    alias = _GPU_ALIASES.get(key)
    return None if alias is None else _GPUS[alias]


__all__ = [
    "COST_SOURCES",
    "IDEAL_TERMS",
    "MEASURED_TERMS",
    "CostSource",
    "CostTerms",
    "DTYPE_BYTES",
    "LLAMA_LIKE_MODEL_TYPES",
    "MAX_GEOMETRY",
    "MAX_GPU_FIGURE",
    "GpuSpec",
    "ModelSpec",
    "builtin_gpu",
    "builtin_model",
    "gpu_names",
    "model_names",
    "CHECKPOINT",
    "Deployment",
    "alltoall_bytes_per_rank",
    "ACTIVATION_SCALES",
    "KV_PRECISIONS",
    "WEIGHT_PRECISIONS",
    "deployed_weight_bytes",
]
