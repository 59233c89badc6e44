"""``python -m qualification.bench.bench_advise``: how long ``aisim advise`` takes on a
40-configuration search at N = 20, and whether its recommendation is the same for two seeds.

The search: Qwen3-8B on one H100 SXM (vLLM-like, 128 sequences, 4096 batched tokens), the
committed 4000-request trace (``trace_n4000_q8_s7.csv``, the shared benchmark trace), SLOs p90
TPOT <= 50 ms and p90 TTFT <= 2 s; SD off, ngram at d = 1, 2, 3 (i.i.d. rate 0.5), EAGLE-3 at
d = 3 (the published vLLM CI profile for Qwen3-8B, with its 5 % tolerance as the acceptance
spread) and a Qwen3-0.6B draft model at d = 1, 2, 3 (i.i.d. rate 0.6): 8 configurations x 5
loads (0.5, 1, 1.5, 2, 3 x the trace's rate) = 40, each replayed 21 times (the point and N = 20
replicas) on ``--workers`` processes. ``--requests N`` replays the trace's first N requests
instead of all 4000. Prints wall and CPU seconds (this process and its helpers) per seed and
the two recommendations. A benchmark prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRACE = HERE / "trace_n4000_q8_s7.csv"
DRAFT = HERE.parent / "cases" / "drafts" / "eagle3_qwen3_8b.json"


def advise_argv(
    out: Path, seed: int, requests: int | None, replicas: int, workers: int
) -> list[str]:
    argv = [
        "advise",
        "--model", "Qwen/Qwen3-8B",
        "--hardware", "h100_sxm",
        "--max-sequences", "128",
        "--max-batched-tokens", "4096",
        "--trace", str(TRACE),
        "--slo", "tpot_ms:p90=50",
        "--slo", "ttft_ms:p90=2000",
        "--acceptance", "ngram=0.5",
        "--acceptance", "eagle3=vllm-ci/eagle3/qwen3-8b/mt-bench",
        "--acceptance", "draft_model=0.6",
        "--draft-config", str(DRAFT),
        "--draft-model", "Qwen/Qwen3-0.6B",
        "--depths", "1,2,3",
        "--loads", "0.5,1,1.5,2,3",
        "--replicas", str(replicas),
        "--seed", str(seed),
        "--workers", str(workers),
        "--out", str(out),
        "--json",
    ]  # fmt: skip
    if requests is not None:
        argv += ["--requests", str(requests)]
    return argv


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main(argv: list[str] | None = None) -> int:
    import contextlib
    import io

    from aisim import __compiled__
    from aisim.cli import main as aisim_main

    parser = argparse.ArgumentParser(prog="python -m qualification.bench.bench_advise")
    parser.add_argument("--requests", type=int, help="replay the trace's first N requests")
    parser.add_argument("--replicas", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seeds", default="0,1")
    args = parser.parse_args(argv)
    print(f"aisim compiled: {__compiled__}; trace {TRACE.name}, requests {args.requests or 4000}")
    answers = {}
    for seed in (int(text) for text in args.seeds.split(",")):
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "advice"
            start_wall, start_cpu = time.perf_counter(), cpu_seconds()
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                code = aisim_main(
                    advise_argv(out, seed, args.requests, args.replicas, args.workers)
                )
            wall, cpu = time.perf_counter() - start_wall, cpu_seconds() - start_cpu
            if code != 0:
                print(f"seed {seed}: aisim advise exited {code}")
                return code
            answer = json.loads(buffer.getvalue())
        answers[seed] = answer
        best = answer["ranking"][0]
        print(
            f"seed {seed}: {answer['configurations_searched']} configurations x "
            f"{answer['replicas'] + 1} replays in {wall:.1f} s wall, {cpu:.1f} s CPU; "
            f"recommendation {answer['recommendation']} (goodput p50 "
            f"{best['goodput_rps']['p50']:.3f} req/s); SD stops helping at "
            f"{answer['sd_stops_helping_at']}"
        )
    recommendations = {answer["recommendation"] for answer in answers.values()}
    print(f"recommendation stable across seeds {sorted(answers)}: {len(recommendations) == 1}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
