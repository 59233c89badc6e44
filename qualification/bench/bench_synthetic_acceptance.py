"""``python -m qualification.bench.bench_synthetic_acceptance``: replay's acceptance counters
against the engines' synthetic-acceptance formulas over about 100k and 1M rounds.

Cases (the formulas by hand; docs/speculation.md, "Synthetic acceptance"): vLLM's synthetic
sampler with rates (0.7, 0.4, 0.1), vLLM's synthetic length 2.65 at K = 4 (rates
(1, 0.65, 0, 0)), SGLang's simulated length 2.49 drawn ``multinomial`` at 3 steps
(u_j = 1 - Phi(j + 0.5 - 2.49)). Each replays requests of 1200 tokens (SGLang: one running
request, so every verify batch is one round) and counts the rounds the output left did not cap
(``Recorder.uncapped_histogram``). Prints, per position, the observed rate, the formula, the
difference in binomial standard errors and whether the two agree to 3 significant figures;
then the mean acceptance length the same way. A benchmark prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from aisim.config import build_plan
from aisim.replay import Simulation

CASES: list[tuple[str, dict[str, Any], str, list[float]]] = [
    (
        "vllm synthetic rates (0.7, 0.4, 0.1)",
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
        "vllm synthetic length 2.65, K = 4",
        {
            "kind": "mtp",
            "params": {"depth": 4},
            "rejection_sample_method": "synthetic",
            "synthetic_acceptance_length": 2.65,
        },
        "vllm",
        [1.0, 0.65, 0.0, 0.0],
    ),
    (
        "sglang simulated 2.49 multinomial, 3 steps",
        {
            "kind": "mtp",
            "params": {"depth": 3},
            "simulate_acc_len": 2.49,
            "simulate_acc_method": "multinomial",
        },
        "sglang",
        [0.5 * math.erfc((j + 0.5 - 2.49) / math.sqrt(2.0)) for j in (1, 2, 3)],
    ),
]


def counters(speculation: dict[str, Any], backend: str, requests: int, seed: int) -> list[int]:
    """The uncapped accepted-drafts histogram of ``requests`` requests of 1200 tokens."""
    workers: dict[str, Any] = {
        "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": 65536}},
        "timing": {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0},
    }
    if backend == "sglang":
        workers["scheduler"] = {"max_running_requests": 1}
    rows = [
        {"request_id": f"r{index}", "input_length": 16, "output_length": 1200}
        for index in range(requests)
    ]
    config = {
        "traffic": {"source": {"type": "agentic", "requests": rows}},
        "engine": {
            "backend": backend,
            "speculation": {**speculation, "seed": seed},
            "workers": {"aggregated": workers},
        },
    }
    plan, _ = build_plan(config, None)
    return list(Simulation(plan).run().recorder.uncapped_histogram)


def _three(value: float) -> str:
    return f"{value:.3g}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 2500])
    args = parser.parse_args(argv)
    for name, speculation, backend, expected in CASES:
        for requests in args.sizes:
            histogram = counters(speculation, backend, requests, args.seed)
            rounds = sum(histogram)
            print(f"{name}: {requests} requests, {rounds} uncapped rounds")
            for position, want in enumerate(expected, start=1):
                got = sum(histogram[position:]) / rounds
                sigma = math.sqrt(want * (1.0 - want) / rounds)
                z = (got - want) / sigma if sigma > 0 else 0.0
                same = _three(got) == _three(want)
                print(
                    f"  u_{position}: observed {got:.5f} formula {want:.5f} "
                    f"({z:+.2f} s.e., s.e. {sigma:.5f}) 3 s.f. {'equal' if same else 'differ'}"
                )
            mean = sum(k * count for k, count in enumerate(histogram)) / rounds
            second = sum(k * k * count for k, count in enumerate(histogram)) / rounds
            sigma = math.sqrt(max(second - mean * mean, 0.0) / rounds)
            length = 1.0 + sum(expected)
            z = (1.0 + mean - length) / sigma if sigma > 0 else 0.0
            same = _three(1.0 + mean) == _three(length)
            print(
                f"  AL : observed {1.0 + mean:.5f} formula {length:.5f} ({z:+.2f} s.e., "
                f"s.e. {sigma:.5f}) 3 s.f. {'equal' if same else 'differ'}"
            )


if __name__ == "__main__":
    main()
