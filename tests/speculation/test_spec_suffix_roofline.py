"""Suffix decoding replayed under the roofline (docs/speculation.md, "Engine methods and
modes"): each pass is priced at its widest round, the drafts the trace gives for it, plus the
host's suffix-tree lookup per decode request. The oracle is the roofline asked at a fixed
width (a suffix block of that many drafts) and the lookup time by hand; the pass widths are
the trace's drafted counts, worked out by hand below."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aisim import ConfigError
from aisim.config._estimator import best_available
from aisim.config._replay import build_plan
from aisim.fpm import ForwardPassMetrics
from aisim.replay._recorder import Recorder
from aisim.replay._request import SimRequest
from aisim.replay._rng import RandomStream
from aisim.replay._worker import Worker

BASE: dict[str, Any] = {"model": "Qwen/Qwen3-8B", "hardware": "h100_sxm", "estimator": "roofline"}
LOOKUP_US = 50.0

#: r0: 10 tokens = 1 (prefill) + 1 + 3 + 5; r1: 10 tokens = 1 + 2 + 1 + 3 + 1 + 2.
TRACE = [
    {"request_id": "r0", "accepted": [0, 2, 4, 1], "drafted": [0, 3, 4, 2]},
    {"request_id": "r1", "accepted": [1, 0, 2, 0, 1], "drafted": [1, 1, 2, 0, 1]},
]


def _config(tmp_path: Path, estimator: str = "roofline") -> dict[str, Any]:
    trace = tmp_path / "suffix.jsonl"
    trace.write_text("".join(json.dumps(line) + "\n" for line in TRACE), encoding="utf-8")
    requests = [
        {"request_id": f"r{index}", "input_length": 16, "output_length": 10} for index in range(2)
    ]
    return {
        "traffic": {"source": {"type": "agentic", "requests": requests}},
        "engine": {
            "model": BASE["model"],
            "hardware": BASE["hardware"],
            "backend": "vllm",
            "speculation": {
                "kind": "suffix",
                "params": {"num_speculative_tokens": 4},
                "suffix_lookup_us_per_request": LOOKUP_US,
                "acceptance_trace": {"path": str(trace)},
            },
            "workers": {
                "aggregated": {
                    "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": 64}},
                    "timing": {"estimator": estimator},
                }
            },
        },
    }


def _oracle_ms(drafts: int, metrics: ForwardPassMetrics) -> float:
    """The roofline at a fixed width: a suffix block of ``drafts`` drafts; 0 drafts is the
    plain pass plus the lookup of every decode request (50 us each, by hand)."""
    if drafts == 0:
        plain = best_available(dict(BASE)).estimate_forward_pass_time_ms([metrics])
        return float(plain) + metrics.num_decode_requests * LOOKUP_US / 1000.0
    scheme = {
        "kind": "suffix",
        "params": {"num_speculative_tokens": drafts},
        "suffix_lookup_us_per_request": LOOKUP_US,
    }
    model = best_available({**BASE, "speculation": scheme})
    return float(model.estimate_forward_pass_time_ms([metrics]))


def test_suffix_passes_are_priced_at_their_widest_round(tmp_path: Path) -> None:
    plan, _ = build_plan(_config(tmp_path), None)
    worker_plan = plan.workers[0]
    worker = Worker(0, worker_plan, Recorder(worker_plan.speculation.draft_length))
    for index, spec in enumerate(plan.requests):
        worker.route(SimRequest(spec, RandomStream(7, index)))
    now = 0.0
    seen: list[tuple[int, int, int]] = []
    while True:
        duration = worker.plan_pass(now)
        if duration < 0:
            break
        work = worker.ranks[0].work()
        drafts = worker.ranks[0].pass_drafts
        if work.num_decode_requests == 0:
            drafts = 0
        metrics = ForwardPassMetrics(
            work.num_decode_requests,
            work.sum_decode_kv_tokens,
            work.num_prefill_requests,
            work.sum_prefill_tokens,
        )
        seen.append((work.num_prefill_requests, work.num_decode_requests, drafts))
        if work.num_decode_requests == 0:
            expected = float(best_available(dict(BASE)).estimate_forward_pass_time_ms([metrics]))
        else:
            expected = _oracle_ms(drafts, metrics)
        assert duration == pytest.approx(expected, rel=1e-12), seen[-1]
        now += duration
        worker.complete_pass(now, [], [])
    # By hand from the trace: one prefill of both; then rounds (r0, r1) drafting (0, 1),
    # (3, 1), (4, 2): the widest 1, 3, 4; r0 is done (10 tokens); r1 alone drafts 0 (a
    # plain pass plus one lookup), then 1.
    assert seen == [(2, 0, 0), (0, 2, 1), (0, 2, 3), (0, 2, 4), (0, 1, 0), (0, 1, 1)]


def test_suffix_round_price_by_hand_and_never_below_the_widened_pass() -> None:
    # Two decode requests past 100 KV tokens each, a pass whose widest round drafted 3: the
    # price is the roofline's pass of width 4 (the n-gram round of 3 verifies the same) plus
    # 2 x 50 us of lookup, never below the plain pass widened to 4 tokens per request.
    metrics = ForwardPassMetrics(2, 200)
    scheme = {
        "kind": "suffix",
        "params": {"num_speculative_tokens": 4},
        "suffix_lookup_us_per_request": LOOKUP_US,
    }
    narrowed = best_available({**BASE, "speculation": scheme}).at_draft_count(3)
    assert narrowed is not None
    detailed = narrowed.estimate_forward_pass_detailed([metrics]).to_dict()
    details = detailed["diagnostics"]["details"]
    assert details["verify_width"] == 4.0
    assert details["draft_ms"] == pytest.approx(2 * 0.050, rel=1e-12)
    ngram = {"kind": "ngram", "params": {"num_speculative_tokens": 3}}
    widened = best_available({**BASE, "speculation": ngram}).estimate_forward_pass_detailed(
        [metrics]
    )
    widened_details = widened.to_dict()["diagnostics"]["details"]
    assert details["target_ms"] == widened_details["target_ms"]
    assert detailed["latency_ms"] >= details["target_ms"] + details["sampling_ms"]
    # Past the configured K there is no narrower scheme.
    model = best_available({**BASE, "speculation": scheme})
    assert model.at_draft_count(5) is None


def test_suffix_replay_needs_a_narrowable_estimator(tmp_path: Path) -> None:
    # Every other kind keeps the refusal: a varying length under an estimator that prices the
    # configured length only (here a dynamic table under the roofline).
    config = _config(tmp_path)
    config["engine"]["speculation"] = {
        "kind": "mtp",
        "params": {"depth": 3},
        "acceptance_rate": 0.7,
        "num_speculative_tokens_per_batch_size": [[1, 2, 3], [3, 64, 1]],
    }
    with pytest.raises(ConfigError, match="the draft length varies per round"):
        build_plan(config, None)
