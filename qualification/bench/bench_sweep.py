"""Sweep and memory figures: a 200-point sweep on 1 and 2 local workers, peak RSS.

    python -m qualification.bench.bench_sweep sweep [--trace CSV] [--workers 1,2] [--repeat 3]
    python -m qualification.bench.bench_sweep rss100k

``sweep``: 200 points over the first 200 requests of the bench trace (Poisson load at 10 rates
x 4 speculation settings x 5 sequence caps, fixed timing), run in process with 1 worker and on a
pool of 2, interleaved, best of ``--repeat`` each after one untimed warm-up sweep; prints wall
seconds, points/s, the CPU seconds of the calling process and of its helpers per point beside
what the points cost alone, the 1 -> 2 scaling with the host's load average and ceiling, and
the peak RSS of the driver and of its largest worker. Run it under the compiled build (from
outside the source tree, or ``tox -e bench``): the figures are the compiled sweep's.
``rss100k``: replays 100,000 synthetic requests (roofline timing, ngram K=3) and prints the
process's peak RSS. The last line of each is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from typing import Any

from qualification.bench.bench_replay import TRACE

SPECULATION: list[Any] = [
    None,
    {"kind": "ngram", "params": {"num_speculative_tokens": 1}, "acceptance_rates": [0.7]},
    {"kind": "ngram", "params": {"num_speculative_tokens": 2}, "acceptance_rates": [0.7, 0.5]},
    {"kind": "ngram", "params": {"num_speculative_tokens": 3}, "acceptance_rates": [0.7, 0.5, 0.3]},
]


def sweep_config(trace: str) -> dict[str, Any]:
    return {
        "base": {
            "traffic": {
                "source": {"type": "trace", "path": trace},
                "max_requests": 200,
                "load": {"type": "poisson", "rate_rps": 4},
            },
            "engine": {
                "backend": "vllm",
                "workers": {
                    "aggregated": {
                        "scheduler": {"max_batched_tokens": 4096},
                        "kv_cache": {
                            "block_size": 16,
                            "capacity": {"type": "fixed", "blocks": 8192},
                        },
                        "timing": {"type": "fixed", "prefill_ms": 30.0, "decode_ms": 12.0},
                    }
                },
            },
        },
        "axes": {
            "traffic.load.rate_rps": {"start": 2, "stop": 20, "step": 2},
            "engine.speculation": SPECULATION,
            "engine.workers.aggregated.scheduler.max_sequences": [16, 32, 64, 128, 256],
        },
        "slos": {"tpot_ms": {"p90": 20}},
    }


def peak_rss_mib(who: int) -> float:
    """Peak resident set (MiB) of this process or of its largest waited-for child (Linux KiB)."""
    return resource.getrusage(who).ru_maxrss / 1024.0


def _cpu_s(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _evaluate_points(trace: str, points: list[int]) -> tuple[float, float]:
    """(wall, CPU) seconds to evaluate ``points`` of the bench sweep in this process (no sweep
    machinery: no pool, no point files)."""
    from aisim.config import apply_axes, load_sweep
    from aisim.sweep import evaluate_point, expand

    plan = load_sweep(sweep_config(trace))
    chosen = [point for point in expand(plan) if point.index in set(points)]
    configs = [apply_axes(plan.base, point.assignment) for point in chosen]
    start, cpu = time.perf_counter(), time.process_time()
    for config in configs:
        evaluate_point(config, plan.base_dir, plan.slos)
    return time.perf_counter() - start, time.process_time() - cpu


def _ceiling(trace: str, count: int) -> tuple[float, float, float, float]:
    """(wall of one process evaluating every point, wall of two processes each evaluating half
    at once, CPU of the one process, CPU of the two): the host's own 1 -> 2 scaling for this
    work, which no pool can beat, and what the points cost without any sweep machinery, alone
    and two at a time (on a VM, two busy cores may each run slower than one).

    Its processes are forked from this warm process (spawned off Linux) and gone, with the
    pool's threads, before the sweep runs: a thread left running would make the sweep start
    its helpers by forkserver instead of fork, which ``aisim sweep`` does not do."""
    import multiprocessing

    method = "fork" if sys.platform.startswith("linux") else "spawn"
    pool = multiprocessing.get_context(method).Pool(2)
    try:
        for warm_up in [pool.apply_async(_evaluate_points, (trace, [0])) for _ in range(2)]:
            warm_up.get()
        everything = list(range(count))
        one, one_cpu = pool.apply(_evaluate_points, (trace, everything))
        start = time.perf_counter()
        halves = [pool.apply_async(_evaluate_points, (trace, everything[i::2])) for i in (0, 1)]
        two_cpu = sum(half.get()[1] for half in halves)
        two = time.perf_counter() - start
    finally:
        pool.close()
        pool.join()
    return one, two, one_cpu, two_cpu


def bench_sweep(trace: str, workers: list[int], repeat: int = 3) -> dict[str, Any]:
    """Each worker count ``repeat`` times, interleaved (1, 2, 2, 1, ... so a load change on the
    host hits both alike); the best wall of each, its points/s, the least CPU seconds of the
    calling process (driver) and of its helpers, per point, beside the CPU the same points
    take evaluated in one process without the sweep machinery; the load average around the
    runs. Each turn also measures the host's ceiling: the same points in one process vs split
    over two independent warm processes, so a loaded host shows as a low ceiling rather than
    as a slow sweep. CPU seconds are the figures a loaded host disturbs least."""
    import threading

    import pandas  # noqa: F401  (imported before timing: both worker counts use it warm)

    from aisim.sweep import run, start_method

    warm = sweep_config(trace)
    warm["axes"] = {"traffic.load.rate_rps": [2]}
    run(warm, workers=1)  # untimed: imports done, the trace parsed once in this process
    order = [
        count for turn in range(repeat) for count in (workers if turn % 2 == 0 else workers[::-1])
    ]
    runs: dict[str, list[dict[str, float]]] = {str(count): [] for count in workers}
    ceilings: list[tuple[float, float, float, float]] = []
    load_before = os.getloadavg()
    points = 0
    for position, count in enumerate(order):
        if position % len(workers) == 0:
            ceilings.append(_ceiling(trace, 200))
        if threading.active_count() != 1:
            raise SystemExit("bench_sweep: a thread is running; the sweep would not fork")
        with tempfile.TemporaryDirectory() as out:
            driver, helpers = _cpu_s(resource.RUSAGE_SELF), _cpu_s(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            frame = run(sweep_config(trace), workers=count, out=out)
            wall = time.perf_counter() - start
            driver = _cpu_s(resource.RUSAGE_SELF) - driver
            helpers = _cpu_s(resource.RUSAGE_CHILDREN) - helpers
        ok = int((frame["status"] == "ok").sum())
        points = len(frame)
        runs[str(count)].append(
            {"wall_s": wall, "driver_cpu_s": driver, "helpers_cpu_s": helpers, "ok": ok}
        )
        print(
            f"sweep {points} points, {count} worker(s): wall {wall:.2f} s, "
            f"{points / wall:.2f} points/s, CPU driver {driver:.2f} s + helpers {helpers:.2f} s "
            f"({ok} ran)"
        )
    load_after = os.getloadavg()
    report: dict[str, Any] = {
        "load_average_before": load_before,
        "load_average_after": load_after,
        "start_method": start_method(),
        "points": points,
    }
    one = min(walls[0] for walls in ceilings)
    two = min(walls[1] for walls in ceilings)
    alone_ms = min(walls[2] for walls in ceilings) / points * 1e3
    paired_ms = min(walls[3] for walls in ceilings) / points * 1e3
    report["host_ceiling_1_to_2"] = one / two
    report["evaluation_alone_cpu_ms_per_point"] = alone_ms
    report["evaluation_two_at_a_time_cpu_ms_per_point"] = paired_ms
    print(
        f"host ceiling (same points in 1 process: {one:.2f} s, in 2 independent processes: "
        f"{two:.2f} s): x{one / two:.2f}; the points alone (no sweep machinery): "
        f"{alone_ms:.2f} CPU-ms per point in one process, {paired_ms:.2f} in two at once"
    )
    for label, results in runs.items():
        best = min(results, key=lambda result: result["wall_s"])
        driver = min(result["driver_cpu_s"] for result in results)
        helpers = min(result["helpers_cpu_s"] for result in results)
        report[label] = {
            **best,
            "points_per_s": points / best["wall_s"],
            "least_driver_cpu_s": driver,
            "least_helpers_cpu_s": helpers,
        }
        total_ms = (driver + helpers) / points * 1e3
        # Against the points' own cost run the same way: one at a time, or two at once.
        base_ms = alone_ms if label == "1" else paired_ms
        print(
            f"CPU per point, {label} worker(s) (least of {repeat}): driver "
            f"{driver / points * 1e3:.2f} ms + helpers {helpers / points * 1e3:.2f} ms = "
            f"{total_ms:.2f} ms; over the points alone "
            f"({'one' if label == '1' else 'two'} at a time): {total_ms - base_ms:+.2f} ms "
            f"(x{total_ms / base_ms:.2f})"
        )
    if "1" in report and "2" in report:
        report["scaling_1_to_2"] = report["1"]["wall_s"] / report["2"]["wall_s"]
        print(
            f"sweep scaling 1 -> 2 workers (best of {repeat} each, helpers by "
            f"{report['start_method']}): x{report['scaling_1_to_2']:.2f}; host ceiling in the "
            f"same run x{report['host_ceiling_1_to_2']:.2f}; load average {load_before[0]:.1f} "
            f"before, {load_after[0]:.1f} after (on a loaded host the walls are noise)"
        )
    report["driver_peak_rss_mib"] = peak_rss_mib(resource.RUSAGE_SELF)
    report["worker_peak_rss_mib"] = peak_rss_mib(resource.RUSAGE_CHILDREN)
    print(
        f"sweep peak RSS: driver {report['driver_peak_rss_mib']:.0f} MiB, largest child "
        f"process (sweep helpers, ceiling processes) {report['worker_peak_rss_mib']:.0f} MiB"
    )
    return report


def bench_rss_100k() -> dict[str, Any]:
    import aisim
    from aisim import run_replay as run

    config = {
        "traffic": {
            "seed": 1,
            "source": {
                "type": "synthetic",
                "num_requests": 100_000,
                "prompt_tokens": {"type": "uniform", "min": 50, "max": 600},
                "output_tokens": {"type": "uniform", "min": 20, "max": 200},
            },
            "load": {"type": "poisson", "rate_rps": 25},
        },
        "engine": {
            "model": "meta-llama/Meta-Llama-3.1-8B",
            "hardware": "h100_sxm",
            "backend": "vllm",
            "speculation": {
                "kind": "ngram",
                "params": {"num_speculative_tokens": 3},
                "acceptance_rates": [0.7, 0.5, 0.3],
            },
            "workers": {
                "aggregated": {
                    "scheduler": {"max_batched_tokens": 4096, "max_sequences": 128},
                    "kv_cache": {"block_size": 16, "capacity": {"type": "default"}},
                    "timing": {"estimator": "roofline"},
                }
            },
        },
    }
    start = time.process_time()
    result = run(config)
    cpu = time.process_time() - start
    rss = peak_rss_mib(resource.RUSAGE_SELF)
    build = "compiled" if aisim.__compiled__ else "pure"
    print(
        f"replay 100k requests ({build}): peak RSS {rss:.0f} MiB, cpu {cpu:.1f} s, "
        f"{result.run_summary.completed_requests} completed"
    )
    return {"peak_rss_mib": rss, "cpu_s": cpu, "compiled": aisim.__compiled__}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m qualification.bench.bench_sweep")
    parser.add_argument("what", choices=("sweep", "rss100k"))
    parser.add_argument("--trace", default=TRACE)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--repeat", type=int, default=3, help="runs per worker count (best)")
    args = parser.parse_args()
    if args.what == "rss100k":
        print(json.dumps(bench_rss_100k(), sort_keys=True))
        return
    if not os.path.exists(args.trace):
        print(f"bench_sweep: skipped, trace not found: {args.trace}", file=sys.stderr)
        print(json.dumps({"skipped": True}))
        return
    workers = [int(text) for text in args.workers.split(",")]
    print(json.dumps(bench_sweep(args.trace, workers, args.repeat), sort_keys=True))


if __name__ == "__main__":
    main()
