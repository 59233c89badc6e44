"""Replay at scale: peak RSS and CPU seconds of 10k / 100k / 1M-request replays.

    python -m qualification.bench.bench_scale [--sizes 10000,100000[,1000000]] [--per-token]

Each size is a generated CSV trace (Poisson arrivals at 8 req/s, prompts uniform in 64..2048
tokens, outputs uniform in 16..512, seed 7) replayed as ``aisim replay`` does it: Llama-3.1-8B on
h100_sxm, vLLM-like (128 sequences, 4096 batched tokens, block 16, default KV capacity,
roofline timing), ngram K=3 at rates [0.7, 0.5, 0.3], ``requests.parquet`` streamed to disk.
Every replay runs in its own child process, so its peak RSS (``ru_maxrss``) and CPU seconds
(user + sys, trace reading and validation included) are its own. The last line is JSON; the
figures to read are the peak RSS of the largest size and the CPU ratio between the two largest
(linear scaling is a ratio equal to the size ratio).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from qualification.bench._builds import run_child_output
from qualification.bench.bench_replay import config as bench_config

RATE_RPS = 8.0
PROMPT_TOKENS = (64, 2048)
OUTPUT_TOKENS = (16, 512)
SEED = 7


def write_trace(path: Path, count: int) -> None:
    """``count`` requests of the module's traffic, written in chunks (bounded memory)."""
    rng = np.random.default_rng(SEED)
    now_s = 0.0
    with path.open("w", encoding="utf-8") as handle:
        handle.write("arrival_s,prompt_tokens,output_tokens\n")
        for start in range(0, count, 100_000):
            size = min(100_000, count - start)
            gaps = rng.exponential(1.0 / RATE_RPS, size)
            prompts = rng.integers(PROMPT_TOKENS[0], PROMPT_TOKENS[1] + 1, size)
            outputs = rng.integers(OUTPUT_TOKENS[0], OUTPUT_TOKENS[1] + 1, size)
            arrivals = now_s + np.concatenate(([0.0], np.cumsum(gaps[:-1])))
            now_s = float(arrivals[-1] + gaps[-1])
            handle.writelines(
                f"{arrival:.6f},{prompt},{output}\n"
                for arrival, prompt, output in zip(
                    arrivals.tolist(), prompts.tolist(), outputs.tolist(), strict=True
                )
            )


def replay_child(trace: str, out: str, per_token: bool) -> dict[str, Any]:
    """One replay in this process, outputs streamed to ``out``; its own RSS and CPU."""
    import aisim
    from aisim.config import run_replay
    from aisim.replay import RequestsParquet, TokensParquet

    requests = RequestsParquet(Path(out) / "requests.parquet")
    tokens = TokensParquet(Path(out) / "tokens.parquet")
    before = resource.getrusage(resource.RUSAGE_SELF)
    result = run_replay(
        bench_config("ngram", "roofline", trace),
        per_token=per_token,
        request_sink=requests.sink,
        token_sink=tokens.sink if per_token else None,
    )
    requests.commit(overwrite=True)
    if per_token:
        tokens.commit(overwrite=True)
    after = resource.getrusage(resource.RUSAGE_SELF)
    summary = result.run_summary
    sketched = summary.sketched_percentiles
    return {
        "compiled": aisim.__compiled__,
        "requests": summary.total_requests,
        "completed": summary.completed_requests,
        "events": summary.events,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "peak_rss_mib": after.ru_maxrss / 1024.0,
        "sketched": [] if sketched is None else list(sketched.sketched),
        "p99_itl_ms": summary.itl.p99_ms,
        "mean_ttft_ms": summary.ttft.mean_ms,
        "mean_e2e_latency_ms": summary.e2e_latency.mean_ms,
        "requests_parquet_mib": os.path.getsize(Path(out) / "requests.parquet") / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m qualification.bench.bench_scale")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--per-token", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("TRACE", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(replay_child(args.child[0], args.child[1], args.per_token)))
        return
    sizes = [int(text) for text in args.sizes.split(",")]
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="aisim-bench-scale-") as folder:
        for size in sizes:
            trace = Path(folder) / f"trace_{size}.csv"
            out = Path(folder) / f"out_{size}"
            out.mkdir()
            write_trace(trace, size)
            child = ["--child", str(trace), str(out)] + (["--per-token"] if args.per_token else [])
            # The installed build (compiled under tox -e bench), never the source tree.
            printed = run_child_output("qualification.bench.bench_scale", child, pure=False)
            figure = json.loads(printed.strip().splitlines()[-1])
            figures[str(size)] = figure
            trace.unlink()
            print(
                f"replay {size} requests ({'compiled' if figure['compiled'] else 'pure'}"
                f"{', per-token' if args.per_token else ''}): peak RSS "
                f"{figure['peak_rss_mib']:.0f} MiB, cpu {figure['cpu_s']:.1f} s, "
                f"{figure['completed']} completed, {figure['events']} events, "
                f"sketched percentiles: {', '.join(figure['sketched']) or 'none'}",
                flush=True,
            )
    if len(sizes) >= 2:
        small, large = sizes[-2], sizes[-1]
        ratio = figures[str(large)]["cpu_s"] / figures[str(small)]["cpu_s"]
        figures["cpu_ratio"] = {"sizes": [small, large], "ratio": ratio}
        print(f"cpu {large} / cpu {small}: x{ratio:.2f} (size ratio x{large / small:.0f})")
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
