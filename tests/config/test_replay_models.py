"""The replay config's pydantic models: what the sweep's axis paths are read from, and the
one-line errors of blocks validated with their context."""

from __future__ import annotations

import pytest

from aisim.config._catalogue import HardwareFile, ModelFile
from aisim.config._replay_models import (
    ANY_PATH,
    SglangScheduler,
    VllmScheduler,
    config_paths,
)
from aisim.config._sweep import _check_known
from aisim.errors import ConfigError


def test_model_hardware_and_nextn_axis_paths_follow_their_models() -> None:
    """``engine.model``/``engine.hardware`` take a name or a file's mapping: the sub-paths are
    the file models' fields; the legacy ``engine.nextn`` is an integer (no sub-path)."""
    paths = config_paths()
    assert set(paths["engine"]["model"]) == {
        field.alias or name for name, field in ModelFile.model_fields.items()
    }
    assert set(paths["engine"]["hardware"]) == set(HardwareFile.model_fields)
    assert paths["engine"]["nextn"] == {}
    _check_known("engine.model")
    _check_known("engine.model.num_hidden_layers")
    _check_known("engine.hardware.hbm_bytes_per_s")
    with pytest.raises(ConfigError) as info:
        _check_known("engine.model.num_layerz")
    assert str(info.value).startswith(
        "axes.engine.model.num_layerz: unknown config path ('num_layerz' is not a field of "
        "engine.model; allowed: "
    )
    assert "num_hidden_layers" in str(info.value)
    with pytest.raises(ConfigError) as info:
        _check_known("engine.hardware.hbm_gbps")
    assert str(info.value) == (
        "axes.engine.hardware.hbm_gbps: unknown config path ('hbm_gbps' is not a field of "
        "engine.hardware; allowed: bf16_dense_flops, fp4_dense_flops, fp8_dense_flops, "
        "hbm_bytes_per_s, hbm_capacity_bytes, nvlink_bytes_per_s_per_gpu, sm_version, system, "
        "tdp_w)"
    )
    with pytest.raises(ConfigError) as info:
        _check_known("engine.nextn.depth")
    assert str(info.value) == (
        "axes.engine.nextn.depth: unknown config path ('depth' is not a field of engine.nextn; "
        "allowed: nothing (a value, not a block))"
    )


def test_sweep_axis_paths_follow_the_models() -> None:
    paths = config_paths()
    scheduler = paths["engine"]["workers"]["decode"]["scheduler"]
    assert set(scheduler) == set(VllmScheduler.model_fields) | set(SglangScheduler.model_fields)
    assert paths["simulation"] == {"horizon_ms": {}, "per_token": {}}
    # An integer (the length itself) or a block of one of the length types: their fields.
    assert set(paths["traffic"]["source"]["prompt_tokens"]) == {
        "type",
        "value",
        "min",
        "max",
        "mean",
        "std",
    }
    # An optional block (``X | None``) gives the block's fields, an optional scalar a value.
    assert paths["engine"]["speculation"]["acceptance_trace"] == {"path": {}, "format": {}}
    assert paths["engine"]["speculation"]["seed"] == {}
    assert paths["engine"]["speculation"]["params"] == ANY_PATH  # per-kind params
    # simulation.per_token was missing from the hand-written list the sweep used before
    _check_known("simulation.per_token")
    _check_known("engine.workers.prefill.kv_cache.capacity.memory_fraction")
    with pytest.raises(ConfigError) as info:
        _check_known("engine.workers.decode.kv_cache.capacity.bloks")
    assert str(info.value) == (
        "axes.engine.workers.decode.kv_cache.capacity.bloks: unknown config path ('bloks' is "
        "not a field of engine.workers.decode.kv_cache.capacity; allowed: "
        "activation_reserve_gib, blocks, memory_fraction, type)"
    )


def test_a_sweep_axis_below_the_model_file_is_checked_when_the_axes_are_read() -> None:
    from aisim.config._sweep import load_sweep

    base = {
        "traffic": {
            "source": {"type": "synthetic", "num_requests": 2, "prompt_tokens": 8},
            "load": {"type": "constant", "rate_rps": 1},
        },
        "engine": {"model": {"hidden_size": 64}, "workers": {"aggregated": {}}},
    }
    with pytest.raises(ConfigError) as info:
        load_sweep({"base": base, "axes": {"engine.model.hidden_sise": [64, 128]}})
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(
        "axes.engine.model.hidden_sise: unknown config path ('hidden_sise' is not a field of "
        "engine.model; allowed: "
    ), text
    assert "hidden_size" in text
