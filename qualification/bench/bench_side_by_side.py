"""The same large trace replayed by aisim and by the reference simulator AISimulate, side by side.

    AISIM_BENCH_AISIMULATE_PYTHON=PYTHON python -m qualification.bench.bench_side_by_side \\
        [--size 100000] [--repeat 1]

One trace of ``--size`` requests (``bench_scale``'s traffic: Poisson 8 req/s, prompts 64..2048,
outputs 16..512, seed 7) is written as Mooncake JSONL (timestamps in whole ms, every prompt its
own hash ids, so no prefix is shared) and both simulators replay that same file with the same
deployment (Llama-3.1-8B on h100_sxm, vLLM-like, 128 sequences, 4096 batched tokens, block 16,
prefix caching, ngram K=3 at [0.7, 0.5, 0.3]; aisim: roofline timing, default KV capacity,
``requests.parquet`` streamed to disk). aisim also replays the same requests as CSV (arrivals
``timestamp / 1000`` s, no hash ids): the same workload, since no prefix is shared in either
file, without the per-block prefix-cache keys the hash ids make aisim build; the two aisim
replays must agree (their mean TTFT and E2E are printed). Each replay runs cold in its own process (aisim: the
installed build, compiled under ``tox -e bench``; AISimulate: ``AISIM_BENCH_AISIMULATE_PYTHON``,
its own venv, importing nothing from aisim): CPU is user + sys seconds of the replay call
(trace reading and validation included, imports excluded), peak RSS the process's
``ru_maxrss``. With ``--repeat N`` the runs alternate and the least CPU / peak RSS count. The
host's load average is printed before and after, since the host is shared. Targets (issue
"replay at scale"): CPU ratio aisim / AISimulate <= 0.5, peak RSS ratio <= 1. The last line is
JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from qualification.bench._builds import check_build, run_aisimulate, run_child_output
from qualification.bench.bench_aisimulate import mooncake_from_csv
from qualification.bench.bench_scale import write_trace


def aisimulate_once(python: str, trace: str) -> dict[str, Any]:
    return run_aisimulate(python, ["--once", trace], "AISimulate replay")


def aisim_once(trace: str, out: Path) -> dict[str, Any]:
    printed = run_child_output(
        "qualification.bench.bench_scale", ["--child", trace, str(out)], pure=False
    )
    result: dict[str, Any] = json.loads(printed.strip().splitlines()[-1])
    check_build(result["compiled"], pure=False)
    return result


def csv_from_mooncake(trace: str, target: Path) -> None:
    """The Mooncake trace's requests as a CSV trace (no hash ids), written line by line."""
    with open(trace, encoding="utf-8") as source, target.open("w", encoding="utf-8") as sink:
        sink.write("arrival_s,prompt_tokens,output_tokens\n")
        for line in source:
            row = json.loads(line)
            sink.write(f"{row['timestamp'] / 1000},{row['input_length']},{row['output_length']}\n")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m qualification.bench.bench_side_by_side")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    python = os.environ.get("AISIM_BENCH_AISIMULATE_PYTHON")
    if not python or not os.path.exists(python):
        sys.exit(
            "bench_side_by_side: set AISIM_BENCH_AISIMULATE_PYTHON to the interpreter of a venv "
            "holding AISimulate (docs/sweep.md says how to install it)"
        )
    load_before = os.getloadavg()
    print(f"host load average before: {load_before[0]:.2f} {load_before[1]:.2f}", flush=True)
    runs: dict[str, list[dict[str, Any]]] = {"aisim": [], "aisim_csv": [], "aisimulate": []}
    with tempfile.TemporaryDirectory(prefix="aisim-bench-side-") as folder:
        csv_trace = Path(folder) / f"trace_{args.size}.csv"
        write_trace(csv_trace, args.size)
        trace = mooncake_from_csv(str(csv_trace), folder)
        csv_from_mooncake(trace, csv_trace)
        for attempt in range(max(1, args.repeat)):
            for name, path in (("aisim", trace), ("aisim_csv", str(csv_trace))):
                out = Path(folder) / f"out_{name}_{attempt}"
                out.mkdir()
                ours = aisim_once(path, out)
                runs[name].append(ours)
                label = "aisim" if name == "aisim" else "aisim CSV"
                print(
                    f"{label:10s} {args.size} requests: cpu {ours['cpu_s']:.1f} s, peak RSS "
                    f"{ours['peak_rss_mib']:.0f} MiB, {ours['completed']} completed, mean TTFT "
                    f"{ours['mean_ttft_ms']:.2f} ms, mean E2E {ours['mean_e2e_latency_ms']:.1f} ms",
                    flush=True,
                )
            theirs = aisimulate_once(python, trace)
            runs["aisimulate"].append(theirs)
            print(
                f"AISimulate {args.size} requests: cpu {theirs['cpu_s']:.1f} s, peak RSS "
                f"{theirs['peak_rss_mib']:.0f} MiB, {theirs['completed']} completed, mean TTFT "
                f"{theirs['mean_ttft_ms']:.2f} ms, mean E2E {theirs['mean_e2e_latency_ms']:.1f} ms",
                flush=True,
            )
    load_after = os.getloadavg()
    best = {
        name: {
            "cpu_s": min(run["cpu_s"] for run in found),
            "peak_rss_mib": min(run["peak_rss_mib"] for run in found),
        }
        for name, found in runs.items()
    }
    reference = best["aisimulate"]
    cpu_ratio = best["aisim"]["cpu_s"] / reference["cpu_s"]
    rss_ratio = best["aisim"]["peak_rss_mib"] / reference["peak_rss_mib"]
    csv_cpu_ratio = best["aisim_csv"]["cpu_s"] / reference["cpu_s"]
    csv_rss_ratio = best["aisim_csv"]["peak_rss_mib"] / reference["peak_rss_mib"]
    print(
        f"aisim / AISimulate on {args.size} requests, the same Mooncake file: CPU "
        f"x{cpu_ratio:.2f} (target <= 0.5), peak RSS x{rss_ratio:.2f} (target <= 1); aisim on "
        f"the same requests as CSV: CPU x{csv_cpu_ratio:.2f}, peak RSS x{csv_rss_ratio:.2f}; "
        f"host load average after: {load_after[0]:.2f} {load_after[1]:.2f}"
    )
    report = {
        "size": args.size,
        "best": best,
        "cpu_ratio": cpu_ratio,
        "rss_ratio": rss_ratio,
        "csv_cpu_ratio": csv_cpu_ratio,
        "csv_rss_ratio": csv_rss_ratio,
        "runs": runs,
        "load_average": {"before": list(load_before), "after": list(load_after)},
    }
    print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main()
