"""Replay the shared trace with the reference simulator AISimulate, warm, in one process.

Runs under AISimulate's own interpreter (``AISIM_BENCH_AISIMULATE_PYTHON``: a separate venv,
installed as ``docs/sweep.md`` says) and imports nothing from aisim. The config is the
one of ``bench_replay`` (Llama-3.1-8B, h100_sxm, TP1, vLLM 128 sequences / 4096 batched tokens,
block 16, prefix caching; SD off or ngram K=3 at rates [0.7, 0.5, 0.3]) on the same CSV trace,
written as the Mooncake JSONL AISimulate reads (timestamps in whole ms, every prompt its own
hash ids, so no prefix is shared: aisim's CSV reader shares none either). Each case runs once untimed, then ``--repeat`` times; the least process CPU
time is reported. The last line is JSON.

    python -m qualification.bench.bench_aisimulate --trace TRACE.csv [--repeat 3]

``--once MOONCAKE.jsonl`` instead replays that Mooncake trace once (ngram K=3), cold, in this
process, and prints its CPU seconds (the replay only, imports excluded) and peak RSS: the
reference side of ``bench_side_by_side``.
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
import time
from pathlib import Path
from typing import Any


def mooncake_from_csv(trace: str, folder: str) -> str:
    """The CSV trace (arrival_s, prompt_tokens, output_tokens) as Mooncake JSONL in ``folder``."""
    target = Path(folder) / (Path(trace).stem + ".jsonl")
    next_id = 0
    with open(trace, encoding="utf-8") as source, open(target, "w", encoding="utf-8") as sink:
        for row in csv.DictReader(source):
            prompt = int(row["prompt_tokens"])
            blocks = -(-prompt // 16)
            record = {
                "timestamp": round(float(row["arrival_s"]) * 1000.0),
                "input_length": prompt,
                "output_length": int(row["output_tokens"]),
                "hash_ids": list(range(next_id, next_id + blocks)),
            }
            next_id += blocks
            sink.write(json.dumps(record) + "\n")
    return str(target)


def config(trace: str, case: str) -> dict[str, Any]:
    engine: dict[str, Any] = {
        "mode": "aggregated",
        "model": "meta-llama/Meta-Llama-3.1-8B",
        "hardware": "h100_sxm",
        "backend": "vllm",
        "backend_version": "0.24.0",
        "workers": {
            "aggregated": {
                "parallelism": {"replicas": 1, "tensor": 1},
                "scheduler": {"max_batched_tokens": 4096, "max_sequences": 128},
                "kv_cache": {"block_size": 16, "prefix_caching": True},
            }
        },
    }
    if case == "ngram":
        engine["speculation"] = {
            "kind": "ngram",
            "num_speculative_tokens": 3,
            "acceptance_rates": [0.7, 0.5, 0.3],
            "seed": 42,
        }
    return {
        "traffic": {
            "source": {"type": "trace", "paths": [trace], "format": "mooncake", "block_size": 16},
            "load": {"type": "trace_timestamps"},
        },
        "engine": engine,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m qualification.bench.bench_aisimulate")
    parser.add_argument("--trace", help="the CSV trace")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--once", metavar="MOONCAKE", help="one cold ngram replay of this trace")
    args = parser.parse_args()
    if args.trace is None and args.once is None:
        parser.error("give --trace CSV or --once MOONCAKE")
    import aisimulate
    from aisimulate.config.cli import CorePredictionConfig
    from aisimulate.config.common import split_config_sections
    from aisimulate.predict import run_prediction
    from aisimulate.runner import EngineReplayRunnerFactory
    from aisimulate.sweeper.replay import ReplayOutputRequirements

    def replay(raw: dict[str, Any]) -> dict[str, Any]:
        core = split_config_sections(raw, command="predict")
        core = core[0] if isinstance(core, tuple) else core
        prediction = run_prediction(
            CorePredictionConfig.model_validate(core),
            stack="engine",
            runner_factory=EngineReplayRunnerFactory(),
            output_requirements=ReplayOutputRequirements(
                include_raw_report=True, capture_per_request=True
            ),
        )
        return dict(prediction.summary)

    report: dict[str, Any] = {"version": getattr(aisimulate, "__version__", "unknown")}
    if args.once is not None:
        import resource

        raw = config(args.once, "ngram")
        before = resource.getrusage(resource.RUSAGE_SELF)
        summary = replay(raw)
        after = resource.getrusage(resource.RUSAGE_SELF)
        report.update(
            {
                "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
                "peak_rss_mib": after.ru_maxrss / 1024.0,
                "completed": summary.get("completed_requests"),
                "mean_ttft_ms": summary.get("mean_ttft_ms"),
                "mean_e2e_latency_ms": summary.get("mean_e2e_latency_ms"),
            }
        )
        print(json.dumps(report, sort_keys=True))
        return
    with tempfile.TemporaryDirectory(prefix="aisim-bench-") as folder:
        trace = mooncake_from_csv(args.trace, folder)
        _measure(replay, trace, args.repeat, report)
    print(json.dumps(report, sort_keys=True))


def _measure(replay: Any, trace: str, repeat: int, report: dict[str, Any]) -> None:
    for case in ("off", "ngram"):
        raw = config(trace, case)
        replay(raw)
        timings = []
        for _ in range(max(1, repeat)):
            wall_start, cpu_start = time.perf_counter(), time.process_time()
            summary = replay(raw)
            timings.append((time.process_time() - cpu_start, time.perf_counter() - wall_start))
        cpu, wall = min(timings)
        report[case] = {
            "cpu_s": cpu,
            "wall_s": wall,
            "completed_requests": summary.get("completed_requests"),
        }
        print(f"AISimulate {case:5s}: cpu {cpu:.3f} s, wall {wall:.3f} s (best of {len(timings)})")


if __name__ == "__main__":
    main()
