"""The same sweep gives the same rows in process, on a process pool and on a local Ray."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from aisim.sweep import run

SWEEP: dict[str, Any] = {
    "base": {
        "traffic": {
            "seed": 5,
            "source": {
                "type": "synthetic",
                "num_requests": 60,
                "prompt_tokens": {"type": "uniform", "min": 20, "max": 400},
                "output_tokens": {"type": "uniform", "min": 5, "max": 100},
            },
            "load": {"type": "poisson", "rate_rps": 5},
        },
        "engine": {
            "backend": "vllm",
            "workers": {
                "aggregated": {
                    "kv_cache": {"capacity": {"type": "fixed", "blocks": 512}},
                    "timing": {"type": "fixed", "prefill_ms": 12, "decode_ms": 6},
                }
            },
        },
    },
    "axes": {
        "traffic.load.rate_rps": [4, 12],
        "engine.speculation": [
            None,
            {
                "kind": "ngram",
                "params": {"num_speculative_tokens": 2},
                "acceptance_rates": [0.6, 0.3],
            },
            {"kind": "ngram", "params": {"num_speculative_tokens": 2}, "acceptance_rates": [0.6]},
        ],
    },
    "slos": {"tpot_ms": {"p90": 8}, "ttft_ms": {"p99": 200}},
}


@pytest.fixture(scope="module")
def serial() -> pd.DataFrame:
    return run(SWEEP, workers=1)


def test_serial_rows_are_complete(serial: pd.DataFrame) -> None:
    assert list(serial["point"]) == list(range(6))
    assert list(serial["status"]) == ["ok", "ok", "error"] * 2
    assert set(serial["sd_kind"].dropna()) == {"none", "ngram"}


def test_process_pool_rows_equal_serial(serial: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(run(SWEEP, workers=2), serial)


def test_ray_rows_equal_process_pool(serial: pd.DataFrame) -> None:
    ray = pytest.importorskip("ray")
    try:
        frame = run(SWEEP, backend="ray", workers=2)
    finally:
        ray.shutdown()
    pd.testing.assert_frame_equal(frame, serial)
