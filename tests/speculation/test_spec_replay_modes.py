"""Per-round draft lengths and acceptance traces in replay (docs/speculation.md, "Dynamic draft
lengths in replay"): vLLM's batch-size table followed pass by pass on a load that rises and
falls, SGLang's adaptive EMA step by step, a measured trace replayed exactly. Expected values
are the engines' rules applied by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from aisim import ConfigError, run_replay
from aisim.config._replay import build_plan
from aisim.replay._recorder import Recorder
from aisim.replay._request import WORK_DECODE, SimRequest
from aisim.replay._rng import RandomStream
from aisim.replay._sd_policy import AdaptivePolicy, AdaptiveTier
from aisim.replay._worker import Worker

#: vLLM's table for these tests and its expansion by hand (build_dynamic_sd_schedule_lookup):
#: batch 1 -> 3, 2..3 -> 2, 4..5 -> 1, 6 and more -> 0.
TABLE = [[1, 1, 3], [2, 3, 2], [4, 5, 1], [6, 64, 0]]
EXPANDED = {1: 3, 2: 2, 3: 2, 4: 1, 5: 1}


def _engine_k(scheduled: int) -> int:
    return EXPANDED.get(scheduled, 0)


def _config(
    outputs: list[int], speculation: dict[str, Any], backend: str = "vllm"
) -> dict[str, Any]:
    requests = [
        {"request_id": f"r{index}", "input_length": 16, "output_length": output}
        for index, output in enumerate(outputs)
    ]
    return {
        "traffic": {"source": {"type": "agentic", "requests": requests}},
        "engine": {
            "backend": backend,
            "speculation": speculation,
            "workers": {
                "aggregated": {
                    "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": 4096}},
                    "timing": {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0},
                }
            },
        },
    }


def _drive(
    config: dict[str, Any], arrivals: dict[int, list[int]], passes: int
) -> list[tuple[int, list[int]]]:
    """Run the worker pass by pass, adding request ``i`` before pass ``p`` for each ``i`` in
    ``arrivals[p]``; returns per pass (requests scheduled, widths of its decode rounds)."""
    plan, _ = build_plan(config, None)
    worker_plan = plan.workers[0]
    worker = Worker(0, worker_plan, Recorder(worker_plan.speculation.draft_length))
    history: list[tuple[int, list[int]]] = []
    now = 0.0
    for index in range(passes):
        for request_index in arrivals.get(index, []):
            spec = plan.requests[request_index]
            worker.route(SimRequest(spec, RandomStream(7, request_index)))
        duration = worker.plan_pass(now)
        if duration < 0:
            break
        batch = worker.ranks[0].batch
        widths = [request.work_tokens for request in batch if request.work == WORK_DECODE]
        history.append((len(batch), widths))
        now += duration
        worker.complete_pass(now, [], [])
    return history


def test_vllm_dynamic_length_follows_the_engines_table_as_load_rises_and_falls() -> None:
    outputs = [40, 34, 28, 24, 20, 16, 12]
    speculation = {
        "kind": "mtp",
        "params": {"depth": 3},
        "acceptance_rates": [0.0, 0.0, 0.0],  # one token per round: the load changes slowly
        "num_speculative_tokens_per_batch_size": TABLE,
    }
    arrivals = {0: [0], 3: [1], 5: [2], 7: [3, 4], 9: [5, 6]}
    history = _drive(_config(outputs, speculation), arrivals, 200)
    sizes = [scheduled for scheduled, _ in history]
    assert max(sizes) == 7 and sizes[-1] == 1  # rose to 7 running, fell back to 1
    seen: set[int] = set()
    for (previous, _), (_, widths) in zip(history, history[1:], strict=False):
        k = _engine_k(previous)
        seen.add(k)
        # Every decode round of a pass verifies the drafts the previous step asked for.
        assert widths == [k + 1] * len(widths)
    assert seen == {0, 1, 2, 3}


def test_vllm_dynamic_length_replays_end_to_end() -> None:
    speculation = {
        "kind": "mtp",
        "params": {"depth": 3},
        "acceptance_rates": [1.0, 1.0, 1.0],
        "num_speculative_tokens_per_batch_size": [[1, 1, 3], [2, 64, 1]],
    }
    # One request alone: every round verifies 3 drafts and accepts them (4 tokens per round):
    # 1 token from the prefill, then ceil(39 / 4) = 10 rounds.
    result = run_replay(_config([40], speculation))
    frame = result.requests
    assert int(frame["decode_rounds"].iloc[0]) == 10
    # Two requests together: 2 scheduled -> 1 draft each round after the first.
    both = run_replay(_config([40, 40], speculation)).requests
    assert (both["decode_rounds"] > 10).all()


def test_sglang_adaptive_slot_steps_by_hand() -> None:
    tier = AdaptiveTier(1, [1, 3, 5], 0.5, 1, 0, -0.25, 0.0, 0.0)
    policy = AdaptivePolicy(3, [tier])
    slot = policy.slot_for(1)
    assert (slot.current_steps, slot.ema_accept_len) == (3, 2.0)
    steps = []
    for accepted in ([0, 0], [0], [0], [1, 1], [3, 3]):
        policy.on_verify_complete(accepted, 1)
        steps.append(policy.steps_for_batch(1))
    # EMA 1.0, 0.5, 0.25 (<= 1 - 0.5 - 0.25: down to 1), 0.625 (> 0.5: up to 3),
    # 1.8125 (not > 2.5): stays 3.
    assert steps == [3, 3, 1, 3, 3]
    assert slot.ema_accept_len == pytest.approx(1.8125)


def test_sglang_adaptive_zero_step_probe_and_routing() -> None:
    zero = AdaptiveTier(8, [0, 1], 0.2, 1, 0, 0.0, 0.0, 0.0)
    one = AdaptiveTier(1, [1, 3], 0.2, 5, 10, -0.25, 0.0, 0.0)
    policy = AdaptivePolicy(0, [zero, one])
    # initial 0 is a candidate of tier 8 only; tier 1 starts at its middle candidate (3).
    assert policy.steps_for_batch(8) == 0 and policy.steps_for_batch(1) == 3
    # Routing: the largest key <= batch size, the smallest key below them.
    assert policy.slot_for(5) is policy.slot_for(1)
    assert policy.slot_for(100) is policy.slot_for(8)
    # A zero-step slot keeps its EMA, then probes the next candidate with a neutral EMA.
    policy.on_verify_complete([0, 0, 0, 0, 0, 0, 0, 0], 8)
    slot = policy.slot_for(8)
    assert slot.current_steps == 1 and slot.ema_accept_len == 0.0


def test_sglang_adaptive_replay_width_follows_the_ema() -> None:
    speculation = {
        "kind": "mtp",
        "params": {"depth": 3},
        "acceptance_rates": [0.0, 0.0, 0.0],
        "speculative_adaptive": True,
        "speculative_adaptive_config": {
            "ema_alpha": 0.5,
            "warmup_batches": 0,
            "update_interval": 1,
            "1": {"candidate_steps": [1, 3]},
        },
    }
    history = _drive(_config([12], speculation, "sglang"), {0: [0]}, 50)
    widths = [widths[0] for _, widths in history if widths]
    # EMA 2 -> 1.0, 0.5 (3 steps stay), 0.25 (<= 0.25: 1 step) -> widths 4, 4, 4, then 2;
    # one token per round: 11 rounds, the last clamped to the 1 token left (SGLang-like).
    assert widths == [4, 4, 4] + [2] * 7 + [1]


def _trace(tmp_path: Path, lines: list[dict[str, Any]]) -> str:
    file = tmp_path / "trace.jsonl"
    file.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return str(file)


def test_acceptance_trace_replays_exactly(tmp_path: Path) -> None:
    path = _trace(
        tmp_path,
        [
            {"request_id": "r0", "accepted": [2, 0, 3, 1]},
            {"request_id": "r1", "accepted": [3, 3, 0, 0, 0, 0]},
        ],
    )
    speculation = {
        "kind": "mtp",
        "params": {"depth": 3},
        "acceptance_trace": {"path": path},
    }
    config = _config([10, 9], speculation)
    config["engine"]["speculation"]["acceptance_trace"]["path"] = path
    frame = run_replay(config, per_token=True).requests.set_index("request_id")
    # r0: 1 (prefill) + 3 + 1 + 4 = 9, then one round with 1 token left: accepted capped at 0.
    assert int(frame.loc["r0", "decode_rounds"]) == 4
    assert int(frame.loc["r0", "accepted_drafts"]) == 2 + 0 + 3
    # r1: 1 + 4 + 4 = 9 tokens after two rounds.
    assert int(frame.loc["r1", "decode_rounds"]) == 2
    assert int(frame.loc["r1", "accepted_drafts"]) == 6


def test_vllm_request_metrics_trace(tmp_path: Path) -> None:
    # c0 = 6 steps; >= 1 accepted: 4; >= 2: 2; >= 3: 1 -> rounds 3, 2, 1, 1, 0, 0.
    path = _trace(tmp_path, [{"request_id": "r0", "spec_token_acceptance_counts": [6, 4, 2, 1]}])
    speculation = {
        "kind": "mtp",
        "params": {"depth": 3},
        "acceptance_trace": {"path": path, "format": "vllm-request-metrics"},
    }
    from aisim import resolve_speculation

    resolved = resolve_speculation(speculation)
    assert resolved.acceptance_trace.accepted == {"r0": [3, 2, 1, 1, 0, 0]}
    assert resolved.acceptance.unconditional_rates == pytest.approx((4 / 6, 2 / 6, 1 / 6))
    # 1 + 4 + 3 + 2 + 2 + 1 + 1 = 14 tokens over the six rounds.
    frame = run_replay(_config([14], speculation)).requests
    assert int(frame["decode_rounds"].iloc[0]) == 6


def test_trace_errors(tmp_path: Path) -> None:
    short = _trace(tmp_path, [{"request_id": "r0", "accepted": [1]}])
    speculation = {"kind": "mtp", "params": {"depth": 3}, "acceptance_trace": {"path": short}}
    with pytest.raises(ConfigError, match="needs decode round 2, but the trace has 1"):
        run_replay(_config([10], speculation))
    deep = _trace(tmp_path, [{"request_id": "r0", "accepted": [4]}])
    with pytest.raises(ConfigError, match=r"accepted\[0\]: expected an integer in 0\.\.3"):
        run_replay(_config([10], {**speculation, "acceptance_trace": {"path": deep}}))


def test_suffix_replays_only_from_a_trace_with_drafted_counts(tmp_path: Path) -> None:
    speculation: dict[str, Any] = {
        "kind": "suffix",
        "params": {"num_speculative_tokens": 4},
        "acceptance_rate": 0.5,
    }
    with pytest.raises(ConfigError, match="needs an acceptance_trace with drafted counts"):
        run_replay(_config([10], speculation))
    path = _trace(
        tmp_path, [{"request_id": "r0", "accepted": [0, 2, 4, 1], "drafted": [0, 3, 4, 2]}]
    )
    speculation = {
        "kind": "suffix",
        "params": {"num_speculative_tokens": 4},
        "acceptance_trace": {"path": path},
    }
    frame = run_replay(_config([10], speculation)).requests
    # 1 + 1 + 3 + 5 = 10 tokens in 3 rounds (the first drafted nothing).
    assert int(frame["decode_rounds"].iloc[0]) == 3
    assert int(frame["accepted_drafts"].iloc[0]) == 6


def synthetic_counters(
    speculation: dict[str, Any], backend: str, requests: int, output: int, seed: int
) -> tuple[int, list[int]]:
    """Replay ``requests`` requests of ``output`` tokens and return (SD rounds, the histogram
    of accepted drafts over the rounds the output left did not cap). SGLang's simulated
    acceptance draws one length per verify batch, so there the requests run one at a time
    (max_running_requests 1) and every batch is one round: a round is one independent draw
    on both engines."""
    from aisim.replay._engine import Simulation

    config = _config([output] * requests, {**speculation, "seed": seed}, backend)
    if backend == "sglang":
        workers = config["engine"]["workers"]["aggregated"]
        workers["scheduler"] = {"max_running_requests": 1}
    plan, _ = build_plan(config, None)
    result = Simulation(plan).run()
    histogram = result.recorder.uncapped_histogram
    return sum(result.recorder.accepted_histogram), list(histogram)


#: The engines' formulas by hand: the unconditional rates u_i = P(a >= i).
SYNTHETIC_CASES: list[tuple[dict[str, Any], str, list[float]]] = [
    (
        {
            "kind": "mtp",
            "params": {"depth": 3},
            "rejection_sample_method": "synthetic",
            "synthetic_acceptance_rates": [0.7, 0.4, 0.1],
        },
        "vllm",
        [0.7, 0.4, 0.1],
    ),
    (
        {
            "kind": "mtp",
            "params": {"depth": 4},
            "rejection_sample_method": "synthetic",
            "synthetic_acceptance_length": 2.65,
        },
        "vllm",
        [1.0, 0.65, 0.0, 0.0],  # L = 2.65 -> 1.65 accepted -> (1, 0.65, 0, 0)
    ),
    (
        {
            "kind": "mtp",
            "params": {"depth": 3},
            "simulate_acc_len": 2.49,
            "simulate_acc_method": "multinomial",
        },
        "sglang",
        # L = round(clamp(N(2.49, 1), 1, 4)): L >= j + 1 iff the draw >= j + 0.5.
        [0.5 * math.erfc((j + 0.5 - 2.49) / math.sqrt(2.0)) for j in (1, 2, 3)],
    ),
]


@pytest.mark.parametrize(("speculation", "backend", "expected"), SYNTHETIC_CASES)
def test_synthetic_counters_match_the_engines_formula(
    speculation: dict[str, Any], backend: str, expected: list[float]
) -> None:
    rounds, histogram = synthetic_counters(speculation, backend, 250, 1200, 20261201)
    uncapped = sum(histogram)
    assert uncapped >= 100_000 and rounds > uncapped
    assert len(histogram) == len(expected) + 1
    observed = [sum(histogram[position:]) / uncapped for position in range(1, len(expected) + 1)]
    for got, want in zip(observed, expected, strict=True):
        # A rate of 0 or 1 is exact (the draw can never differ); otherwise within 4 binomial
        # standard errors. Sampling cannot promise 3 significant figures on a rate at this
        # size (docs/speculation.md, "How close the counters come").
        sigma = (want * (1.0 - want) / uncapped) ** 0.5
        assert abs(got - want) <= 4 * sigma
    length = 1.0 + sum(expected)
    mean = sum(k * count for k, count in enumerate(histogram)) / uncapped
    second = sum(k * k * count for k, count in enumerate(histogram)) / uncapped
    spread = max(second - mean * mean, 0.0) ** 0.5
    assert abs(1.0 + mean - length) <= 4 * spread / uncapped**0.5 + 1e-12


def test_sglang_adaptive_routing_pads_to_captured_cuda_graph_sizes() -> None:
    tiers = [
        AdaptiveTier(1, [1, 3], 0.2, 5, 10, -0.25, 0.0, 0.0),
        AdaptiveTier(8, [0, 1], 0.2, 5, 10, 0.0, 0.0, 0.0),
        AdaptiveTier(32, [0], 0.2, 5, 10, 0.0, 0.0, 0.0),
    ]
    plain = AdaptivePolicy(3, tiers)
    graphs = AdaptivePolicy(3, tiers, [32, 1, 2, 4, 8, 16])
    # bisect_left pads 5 up to 8: tier 8 with graphs, tier 1 without.
    assert plain.slot_for(5) is plain.slots[0]
    assert graphs.slot_for(5) is graphs.slots[1]
    # 9 pads to 16 (tier 8); 33 is past every graph and stays 33 (tier 32).
    assert graphs.slot_for(9) is graphs.slots[1] and graphs.slot_for(33) is graphs.slots[2]


def test_cuda_graph_bs_needs_adaptive() -> None:
    from aisim import resolve_speculation

    block = {"kind": "mtp", "params": {"depth": 3}, "cuda_graph_bs": [1, 2, 4]}
    with pytest.raises(ConfigError, match="cuda_graph_bs: only read with speculative_adaptive"):
        resolve_speculation(block)
    resolved = resolve_speculation(
        {
            **block,
            "speculative_adaptive": True,
            "speculative_adaptive_config": {"1": {"candidate_steps": [1, 3]}},
        }
    )
    assert resolved.adaptive["cuda_graph_bs"] == [1, 2, 4]  # type: ignore[index]


def _tree(rates: list[float]) -> dict[str, Any]:
    return {
        "kind": "eagle3",
        "params": {
            "speculative_num_steps": 2,
            "speculative_eagle_topk": 2,
            "speculative_num_draft_tokens": 4,
        },
        "draft_config": {
            "model_type": "llama",
            "hidden_size": 4096,
            "num_hidden_layers": 1,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "vocab_size": 128256,
        },
        "acceptance_rates": rates,
    }


def test_sglang_tree_replays_at_its_verify_width() -> None:
    # topk 2, 2 steps, 4 verified tokens; both steps accepted: 3 tokens per round. Output 10:
    # 1 from the prefill, then 3 + 3, then the width clamped to the 3 tokens left (SGLang-like).
    history = _drive(_config([10], _tree([1.0, 1.0]), "sglang"), {0: [0]}, 20)
    widths = [widths[0] for _, widths in history if widths]
    assert widths == [4, 4, 3]
    plan, _ = build_plan(_config([10], _tree([1.0, 1.0]), "sglang"), None)
    speculation = plan.workers[0].speculation
    # KV: the verify width plus topk x steps draft slots.
    assert (speculation.verify_width, speculation.draft_length) == (4, 2)
    assert speculation.lookahead_tokens == 4


def test_tree_replay_errors() -> None:
    with pytest.raises(ConfigError, match="replay supports trees on sglang only"):
        run_replay(_config([10], _tree([1.0, 1.0]), "vllm"))
    uneven = {**_tree([1.0, 1.0]), "params": {"tree_shape": [4, 2]}}
    with pytest.raises(ConfigError, match="unequal widths"):
        run_replay(_config([10], uneven, "sglang"))


def test_adaptive_refuses_attention_dp() -> None:
    speculation = {
        "kind": "mtp",
        "params": {"depth": 3},
        "acceptance_rate": 0.5,
        "speculative_adaptive": True,
        "speculative_adaptive_config": {"1": {"candidate_steps": [1, 3]}},
    }
    config = _config([10], speculation, "sglang")
    config["engine"]["workers"]["aggregated"]["parallelism"] = {"attention_data": 2}
    with pytest.raises(ConfigError, match="adaptive speculation with attention DP"):
        run_replay(config)


def test_sglang_simulated_acceptance_is_one_length_per_verify_batch() -> None:
    # SGLang (eagle_utils.generate_simulated_accept_index): one accept length L per verify,
    # num_correct_drafts.fill_(L - 1) for the whole batch. match-expected 2.5 on 3 steps: L is
    # 2 or 3 with probability 1/2 each, so every request of a pass accepts 1 or 2 drafts, the
    # same number as the others.
    speculation = {"kind": "mtp", "params": {"depth": 3}, "simulate_acc_len": 2.5, "seed": 5}
    config = _config([400] * 8, speculation, "sglang")
    plan, _ = build_plan(config, None)
    worker_plan = plan.workers[0]
    assert worker_plan.speculation.batch_acceptance
    worker = Worker(0, worker_plan, Recorder(worker_plan.speculation.draft_length))
    requests = [SimRequest(plan.requests[index], RandomStream(7, index)) for index in range(8)]
    for request in requests:
        worker.route(request)
    now = 0.0
    per_pass: list[set[int]] = []
    for _ in range(60):
        duration = worker.plan_pass(now)
        decoding = [r for r in worker.ranks[0].batch if r.work == WORK_DECODE]
        before = [request.accepted_drafts for request in decoding]
        now += duration
        worker.complete_pass(now, [], [])
        if len(decoding) == 8:
            per_pass.append({r.accepted_drafts - b for r, b in zip(decoding, before, strict=True)})
    assert len(per_pass) >= 50
    assert all(len(counts) == 1 for counts in per_pass)
    lengths = [counts.pop() for counts in per_pass]
    assert set(lengths) == {1, 2}  # both halves of the two-point draw occur in 50+ passes
    # Per request (the vLLM-style draw) would make the 8 counts of a pass differ in most passes.
    vllm_like = {**speculation, "acceptance_length": 2.5}
    del vllm_like["simulate_acc_len"]
    other, _ = build_plan(_config([400] * 8, vllm_like, "sglang"), None)
    assert not other.workers[0].speculation.batch_acceptance


def test_sglang_default_adaptive_config_replays_its_seven_steps() -> None:
    # SGLang's DEFAULT_ADAPTIVE_CONFIG: tier 1 candidates [1, 3, 5, 7], EMA alpha 0.2, warm-up
    # 10 batches, update every 5, down hysteresis -0.25; the block's depth 7 is the start.
    speculation = {
        "kind": "mtp",
        "params": {"depth": 7},
        "acceptance_rates": [0.0] * 7,
        "speculative_adaptive": True,
    }
    history = _drive(_config([40], speculation, "sglang"), {0: [0]}, 80)
    widths = [widths[0] for _, widths in history if widths]
    # No draft is ever accepted: the EMA falls from 6 to 6 x 0.8**15 = 0.211 by batch 15, the
    # first recompute (15 - 10 = 5); 0.211 <= 4.25, 2.25 and 0.25 (previous 1: 1 - 0.5 - 0.25),
    # so it steps down to 1. One token per round: 15 rounds of width 8, 23 of width 2, then
    # the last clamped to the 1 token left.
    assert widths == [8] * 15 + [2] * 23 + [1]


def test_an_acceptance_trace_that_is_not_utf8_is_named_as_a_trace(tmp_path: Path) -> None:
    """The message used to ask for 'a metrics scrape, an SGLang log or SGLang request
    outputs' (the engine-metrics reader's words) for a trace file."""
    from aisim import ConfigError, resolve_speculation

    path = tmp_path / "trace.jsonl"
    path.write_bytes(b'{"request_id": "r0", "accepted": [1]}\n\xff\n')
    speculation = {"kind": "mtp", "params": {"depth": 3}, "acceptance_trace": {"path": str(path)}}
    with pytest.raises(ConfigError) as caught:
        resolve_speculation(speculation)
    assert str(caught.value) == (
        f"speculation.acceptance_trace: {str(path)!r}: not UTF-8 text (byte 38); expected an "
        "acceptance trace (JSON lines)"
    )


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        # json.loads raised these past the JSONDecodeError the reader caught: a traceback.
        (
            '{"request_id": "r0", "accepted": [' + "9" * 5000 + "]}",
            "an integer of 5000 digits; at most 4300 digits are read",
        ),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
)
def test_an_acceptance_trace_line_python_cannot_parse_is_one_line(
    tmp_path: Path, line: str, problem: str
) -> None:
    from aisim import resolve_speculation

    path = tmp_path / "trace.jsonl"
    path.write_text('{"request_id": "r0", "accepted": [1]}\n' + line + "\n", encoding="utf-8")
    speculation = {"kind": "mtp", "params": {"depth": 3}, "acceptance_trace": {"path": str(path)}}
    with pytest.raises(ConfigError) as caught:
        resolve_speculation(speculation)
    assert str(caught.value) == (
        f"speculation.acceptance_trace: {str(path)!r} line 2: not JSON ({problem})"
    )
