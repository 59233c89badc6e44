"""Probes: catalogue inputs. Any YAML/JSON structure given as a model or GPU is either accepted
or rejected with an aisim error, never an internal exception; accepted geometry is consistent."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from strategies import json_structures, mapping_with_mutation, non_string_keys

from aisim.config import get_gpu, get_model
from aisim.errors import AisimError

TINY = {
    "model_type": "llama",
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 1000,
}
GPU = {"bf16_dense_flops": 1e15, "hbm_bytes_per_s": 2e12, "hbm_capacity_bytes": 8e10}


def _model_or_aisim_error(value: Any) -> None:
    try:
        spec = get_model(value)
    except AisimError:
        return
    # accepted: the derived numbers are consistent with the geometry
    per_layer = 2 * spec.num_kv_heads * spec.head_dim
    if not spec.uses_mla:
        assert spec.kv_bytes_per_token == per_layer * spec.num_layers * spec.dtype_bytes
    assert spec.weight_bytes == spec.num_parameters * spec.dtype_bytes
    assert spec.num_parameters > 0


@given(json_structures)
def test_probe_any_structure_as_model_is_accepted_or_an_aisim_error(value: Any) -> None:
    _model_or_aisim_error(value)


@given(mapping_with_mutation(TINY))
def test_probe_near_miss_model_configs_are_accepted_or_an_aisim_error(value: Any) -> None:
    _model_or_aisim_error(value)


@given(st.dictionaries(non_string_keys, json_structures, min_size=1, max_size=3))
def test_probe_non_string_keys_are_an_aisim_error(value: dict[Any, Any]) -> None:
    try:
        get_model({**TINY, **value})
    except AisimError:
        return
    raise AssertionError("a mapping with non-string keys was accepted")


@given(st.one_of(json_structures, mapping_with_mutation(GPU)))
def test_probe_any_structure_as_gpu_is_accepted_or_an_aisim_error(value: Any) -> None:
    try:
        gpu = get_gpu(value)
    except AisimError:
        return
    assert gpu.bf16_flops > 0 and gpu.hbm_bytes_per_s > 0
