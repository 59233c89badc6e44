"""Replay the shared 4000-request trace and print wall time, CPU time and events/s.

The case of issue 4: ``trace_n4000_q8_s7.csv`` (beside this module) on Llama-3.1-8B, h100_sxm, TP1,
vLLM-like (128 sequences, 4096 batched tokens, block 16), default KV capacity, roofline timing,
once with SD off and once with ngram K=3 at conditional rates [0.7, 0.5, 0.3]
(``docs/examples/replay/bench_trace_vllm.yaml`` is the same config as a file).

``python -m qualification.bench.bench_replay [--case off|ngram|both] [--timing roofline|fixed]
[--warm N]`` measures the build ``aisim`` imports from; run it under ``/usr/bin/time`` for
whole-process CPU seconds, or with ``--warm N`` for the warm in-process figure that compares
with AISimulate's ``run_prediction`` (each case replayed once untimed, then N times; the least
process CPU time). The last line is JSON (``seconds`` = the slowest case's wall time, ``cpu_s``
per case) so
``qualification.bench._builds.compare_builds`` can run it under both builds. Prints a message and
exits 0 when the trace is absent.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

#: The 4000-request trace (arrival_s, prompt_tokens, output_tokens; 8 QPS, seed 7, its summary in
#: trace_n4000_q8_s7.meta.json) ships beside this module; AISIM_BENCH_TRACE replays another.
TRACE = os.environ.get("AISIM_BENCH_TRACE", str(Path(__file__).with_name("trace_n4000_q8_s7.csv")))
NGRAM: dict[str, Any] = {
    "kind": "ngram",
    "params": {"num_speculative_tokens": 3},
    "acceptance_rates": [0.7, 0.5, 0.3],
}


def config(case: str, timing: str, trace: str | None = None) -> dict[str, Any]:
    """The benchmark config for ``case`` (``off`` or ``ngram``)."""
    timing_block: dict[str, Any] = {"estimator": "roofline"}
    if timing == "fixed":
        timing_block = {"type": "fixed", "prefill_ms": 30.0, "decode_ms": 12.0}
    engine: dict[str, Any] = {
        "model": "meta-llama/Meta-Llama-3.1-8B",
        "hardware": "h100_sxm",
        "backend": "vllm",
        "workers": {
            "aggregated": {
                "parallelism": {"tensor": 1},
                "scheduler": {"max_batched_tokens": 4096, "max_sequences": 128},
                "kv_cache": {"block_size": 16, "capacity": {"type": "default"}},
                "timing": timing_block,
            }
        },
    }
    if case == "ngram":
        engine["speculation"] = NGRAM
    path = trace if trace is not None else TRACE
    return {"traffic": {"source": {"type": "trace", "path": path}}, "engine": engine}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m qualification.bench.bench_replay")
    parser.add_argument("--case", choices=("off", "ngram", "both"), default="both")
    parser.add_argument("--timing", choices=("roofline", "fixed"), default="roofline")
    parser.add_argument("--warm", type=int, default=0, metavar="N")
    args = parser.parse_args()
    if not os.path.exists(TRACE):
        print(f"bench_replay: skipped, trace not found: {TRACE}", file=sys.stderr)
        print(json.dumps({"skipped": True, "trace": TRACE}))
        return
    import aisim
    from aisim.config import run_replay

    cases = ["off", "ngram"] if args.case == "both" else [args.case]
    slowest = 0.0
    report: dict[str, Any] = {"compiled": aisim.__compiled__, "timing": args.timing}
    for case in cases:
        case_config = config(case, args.timing)
        if args.warm > 0:
            run_replay(case_config)
        timings = []
        for _ in range(max(1, args.warm)):
            wall_start, cpu_start = time.perf_counter(), time.process_time()
            result = run_replay(case_config)
            timings.append((time.process_time() - cpu_start, time.perf_counter() - wall_start))
        cpu, wall = min(timings)
        summary = result.run_summary
        events = summary.events
        slowest = max(slowest, wall)
        report[case] = {"wall_s": wall, "cpu_s": cpu, "events": events}
        print(
            f"replay {case:5s} ({'compiled' if aisim.__compiled__ else 'pure'}, {args.timing}): "
            f"wall {wall:.3f} s, cpu {cpu:.3f} s, {events} events, {events / wall:,.0f} events/s, "
            f"{summary.passes} passes, {summary.completed_requests} requests, "
            f"mean TPOT {summary.tpot.mean_ms:.3f} ms, "
            f"mean acceptance length {summary.speculation.mean_acceptance_length}"
        )
    report["seconds"] = slowest
    report["cpu_s"] = {case: report[case]["cpu_s"] for case in cases}
    print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main()
