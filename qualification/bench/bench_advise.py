"""``python -m qualification.bench.bench_advise``: how long ``aisim advise`` takes on a
40-configuration search at N = 20, and whether its recommendation is the same for two seeds.

The search: Qwen3-8B on one H100 SXM (vLLM-like, 128 sequences, 4096 batched tokens), the
committed 4000-request trace (``trace_n4000_q8_s7.csv``, the shared benchmark trace), SLOs p90
TPOT <= 50 ms and p90 TTFT <= 2 s; SD off, ngram at d = 1, 2, 3 (i.i.d. rate 0.5), EAGLE-3 at
d = 3 (the published vLLM CI profile for Qwen3-8B, with its 5 % tolerance as the acceptance
spread) and a Qwen3-0.6B draft model at d = 1, 2, 3 (i.i.d. rate 0.6): 8 configurations x 5
loads (0.5, 1, 1.5, 2, 3 x the trace's rate) = 40, each replayed at most 21 times (the
point and N = 20 replicas; ``aisim advise``'s race, ``--screen 5`` by default, stops clearly
dominated configurations after 5) on ``--workers`` processes. ``--requests N`` replays the
trace's first N requests instead of all 4000; ``--screen 20`` is the full search.

Prints per seed: wall seconds, CPU seconds of this process and of its helpers, the host's load
average (1 min) before and after (the machine may be shared), the replays run, and two
estimates of the wall time on ``--workers`` idle cores, for a host where other work makes the
measured wall meaningless: "CPU / workers" = this process's CPU + the helpers' CPU / workers
(perfect sharing), and "stages" = this process's CPU + the sum over the search's stages (each
a pool run with its own helpers) of the busiest helper's CPU in that stage (it counts the
cores left idle at the end of each stage; it leaves out pipe latency, and counts this
process's own CPU as if nothing ran beside it); then whether the recommendation is the same
for every seed. A benchmark prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import Any, cast

HERE = Path(__file__).resolve().parent
TRACE = HERE / "trace_n4000_q8_s7.csv"
DRAFT = HERE.parent / "cases" / "drafts" / "eagle3_qwen3_8b.json"


def advise_argv(
    out: Path,
    seed: int,
    requests: int | None,
    replicas: int,
    workers: int,
    screen: int | None = None,
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
    if screen is not None:
        argv += ["--screen", str(screen)]
    return argv


def cpu_seconds() -> tuple[float, float]:
    """CPU seconds (user + system) of this process and of its finished helpers."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


class StageClock:
    """Per stage of the search (one pool run), each helper's CPU seconds: the pool's helper
    entry point is wrapped (helpers fork from this process, so they run the wrapper) to append
    ``stage helper-CPU`` to a file when the helper ends."""

    def __init__(self, folder: Path) -> None:
        import importlib

        self.log = folder / "helpers.txt"
        self.stage = 0
        self.backends: Any = cast(Any, importlib.import_module("aisim.sweep._backends"))
        self.helper_main: Any = self.backends._helper_main
        self.run_pool: Any = self.backends._run_pool
        clock = self

        def helper_main(*args: Any, **kwargs: Any) -> None:
            try:
                clock.helper_main(*args, **kwargs)
            finally:
                used = resource.getrusage(resource.RUSAGE_SELF)
                with open(clock.log, "a", encoding="utf-8") as handle:
                    handle.write(f"{clock.stage} {used.ru_utime + used.ru_stime}\n")

        def run_pool(*args: Any, **kwargs: Any) -> None:
            clock.stage += 1
            clock.run_pool(*args, **kwargs)

        self.backends._helper_main = helper_main
        self.backends._run_pool = run_pool

    def close(self) -> None:
        self.backends._helper_main = self.helper_main
        self.backends._run_pool = self.run_pool

    def busiest(self) -> list[float]:
        """Per stage, in order: the CPU seconds of its busiest helper."""
        stages: dict[int, float] = {}
        if self.log.exists():
            for line in self.log.read_text(encoding="utf-8").splitlines():
                stage, seconds = line.split()
                stages[int(stage)] = max(stages.get(int(stage), 0.0), float(seconds))
        return [stages[stage] for stage in sorted(stages)]


def _crossover_text(answer: dict[str, Any]) -> str:
    """The load where SD stops helping, or why there is none (the answer holds None then)."""
    crossover = answer["sd_stops_helping_at"]
    if crossover is not None:
        return f"{crossover:g}"
    return "no load searched (its median gain does not cross 0 between the loads)"


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
    parser.add_argument("--screen", type=int, help="aisim advise --screen (default: its own)")
    args = parser.parse_args(argv)
    print(f"aisim compiled: {__compiled__}; trace {TRACE.name}, requests {args.requests or 4000}")
    answers = {}
    for seed in (int(text) for text in args.seeds.split(",")):
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "advice"
            load_before = os.getloadavg()[0]
            start_wall, (start_own, start_helpers) = time.perf_counter(), cpu_seconds()
            buffer = io.StringIO()
            clock = StageClock(Path(folder))
            try:
                with contextlib.redirect_stdout(buffer):
                    code = aisim_main(
                        advise_argv(
                            out, seed, args.requests, args.replicas, args.workers, args.screen
                        )
                    )
            finally:
                clock.close()
            wall = time.perf_counter() - start_wall
            end_own, end_helpers = cpu_seconds()
            stages = clock.busiest()
            own, helpers = end_own - start_own, end_helpers - start_helpers
            load_after = os.getloadavg()[0]
            if code != 0:
                print(f"seed {seed}: aisim advise exited {code}")
                return code
            answer = json.loads(buffer.getvalue())
        answers[seed] = answer
        best = answer["ranking"][0]
        search = answer["search"]
        print(
            f"seed {seed}: {answer['configurations_searched']} configurations, N = "
            f"{answer['replicas']}, {search['kind']} (screen {search['screen']}): "
            f"{search['replays']} replays (full search {search['replays_of_a_full_search']}); "
            f"{wall:.1f} s wall, CPU {own + helpers:.1f} s ({own:.1f} this process + "
            f"{helpers:.1f} helpers), load average {load_before:.1f} -> {load_after:.1f}; "
            f"wall on {args.workers} idle cores ~ {own + helpers / args.workers:.1f} s (CPU / "
            f"workers), ~ {own + sum(stages):.1f} s (stages: {len(stages)}, busiest helper "
            f"{', '.join(f'{value:.1f}' for value in stages)} s); "
            f"recommendation {answer['recommendation']} (goodput p50 "
            f"{best['goodput_rps']['p50']:.3f} req/s, {best['replicas']} replicas); best SD "
            f"{answer['best_sd']}; SD stops helping at {_crossover_text(answer)}",
            flush=True,
        )
    recommendations = {answer["recommendation"] for answer in answers.values()}
    print(f"recommendation stable across seeds {sorted(answers)}: {len(recommendations) == 1}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
