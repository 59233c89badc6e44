"""The replay config's pydantic models: what the sweep's axis paths are read from, and the
one-line errors of blocks validated with their context."""

from __future__ import annotations

import pytest

from aisim.config._replay_models import (
    ANY_PATH,
    SglangScheduler,
    VllmScheduler,
    config_paths,
)
from aisim.config._sweep import _check_known
from aisim.errors import ConfigError


def test_sweep_axis_paths_follow_the_models() -> None:
    paths = config_paths()
    scheduler = paths["engine"]["workers"]["decode"]["scheduler"]
    assert set(scheduler) == set(VllmScheduler.model_fields) | set(SglangScheduler.model_fields)
    assert paths["simulation"] == {"horizon_ms": {}, "per_token": {}}
    assert paths["traffic"]["source"]["prompt_tokens"] == ANY_PATH  # an integer or a mapping
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
