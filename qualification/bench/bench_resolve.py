"""Resolve many speculation configs (a realistic mix of kinds and spellings); print JSON timing.

Run directly for one build (``python -m qualification.bench.bench_resolve --count 100000``) or via
``python -m qualification.bench`` to compare compiled and pure builds in one run.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from qualification.cases import EAGLE3_LLAMA_8B


def config_mix(count: int) -> list[dict[str, Any]]:
    """``count`` configs cycling through every replayable kind and the legacy spellings."""
    templates: list[dict[str, Any]] = []
    for depth in range(1, 6):
        templates.append(
            {"kind": "mtp", "params": {"depth": depth}, "expected_accepted_tokens": depth / 2}
        )
        templates.append({"nextn": depth, "nextn_accepted": depth / 3})
        templates.append(
            {"kind": "ngram", "num_speculative_tokens": depth, "acceptance_rates": [0.5] * depth}
        )
        templates.append(
            {
                "kind": "eagle3",
                "params": {"num_speculative_tokens": depth},
                "draft_config": EAGLE3_LLAMA_8B,
                "acceptance_length": 1.0 + depth * 0.4,
                "seed": depth,
            }
        )
    return [templates[index % len(templates)] for index in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=100_000)
    args = parser.parse_args()

    import aisim

    configs = config_mix(args.count)
    start = time.perf_counter()
    for config in configs:
        aisim.resolve_speculation(config)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "count": args.count, "compiled": aisim.__compiled__}))


if __name__ == "__main__":
    main()
