"""``python -m qualification.bench``: print the performance figures the issues ask for.

Compiled vs interpreted ratios are measured in one run (interleaved, best of three), because the
machines are shared and noisy; absolute seconds are for orientation only.

The warm replay is compared with the reference simulator AISimulate when
``AISIM_BENCH_AISIMULATE_PYTHON`` names the interpreter of a venv it is installed in (it is not a
dependency of aisim; ``docs/sweep.md`` says how to install it): both replay the shared
trace in-process, warm, and the figure is the ratio of process CPU seconds.
"""

from __future__ import annotations

import argparse
import os

from qualification.bench import bench_replay
from qualification.bench._builds import (
    compare_builds,
    run_aisimulate,
    run_child,
    run_child_output,
)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m qualification.bench", description=__doc__)
    parser.add_argument("--resolve-count", type=int, default=100_000)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--skip-replay", action="store_true", help="only the resolve benchmark")
    parser.add_argument("--skip-sweep", action="store_true", help="no sweep or memory figures")
    parser.add_argument(
        "--scale-sizes",
        default="10000,100000",
        help="request counts of the replay-at-scale figures (bench_scale; '' skips them; add "
        "1000000 for the 1M case, about 7 CPU-minutes)",
    )
    parser.add_argument(
        "--side-by-side-size",
        type=int,
        default=100_000,
        help="requests of the aisim vs AISimulate replay of one trace (bench_side_by_side; "
        "needs AISIM_BENCH_AISIMULATE_PYTHON; 0 skips it)",
    )
    parser.add_argument(
        "--only-scale",
        action="store_true",
        help="only the replay-at-scale figures and the side-by-side replay",
    )
    parser.add_argument(
        "--only-sweep",
        action="store_true",
        help="only the sweep figures (200 points on 1 and 2 workers, interleaved; peak RSS)",
    )
    args = parser.parse_args()
    if args.only_scale:
        scale_figures(args.scale_sizes, args.side_by_side_size)
        return
    if args.only_sweep:
        print(run_child_output("qualification.bench.bench_sweep", ["sweep"], pure=False), end="")
        return

    resolve = compare_builds(
        "qualification.bench.bench_resolve",
        ["--count", str(args.resolve_count)],
        repetitions=args.repetitions,
    )
    print(
        f"resolve {args.resolve_count} speculation configs: "
        f"compiled {resolve['compiled_s']:.3f} s, pure {resolve['pure_s']:.3f} s, "
        f"speedup x{resolve['speedup']:.2f} "
        f"(builds: compiled={resolve['compiled_build_compiled']}, pure={resolve['pure_build_compiled']})"
    )
    for pure in (False, True):
        print(run_child_output("qualification.bench.bench_fpm", [], pure=pure), end="")
    if args.skip_replay or not os.path.exists(bench_replay.TRACE):
        print(f"replay: skipped (trace {bench_replay.TRACE} absent or --skip-replay)")
        return
    for timing in ("fixed", "roofline"):
        replay = compare_builds(
            "qualification.bench.bench_replay",
            ["--case", "ngram", "--timing", timing],
            repetitions=args.repetitions,
        )
        print(
            f"replay 4000-request trace, ngram K=3, {timing} timing: "
            f"compiled {replay['compiled_s']:.3f} s, pure {replay['pure_s']:.3f} s, "
            f"speedup x{replay['speedup']:.2f}"
        )
    warm_versus_aisimulate(args.repetitions)
    if not args.skip_sweep:
        print(run_child_output("qualification.bench.bench_sweep", ["sweep"], pure=False), end="")
        print(run_child_output("qualification.bench.bench_sweep", ["rss100k"], pure=False), end="")
    scale_figures(args.scale_sizes, args.side_by_side_size)


def scale_figures(sizes: str, side_by_side_size: int) -> None:
    """Peak RSS and CPU of 10k/100k/1M-request replays, each in its own process; then one
    trace replayed by aisim and by AISimulate, side by side (when AISimulate is installed)."""
    if sizes:
        scale = ["--sizes", sizes]
        print(run_child_output("qualification.bench.bench_scale", scale, pure=False), end="")
    if side_by_side_size <= 0:
        return
    if not os.environ.get("AISIM_BENCH_AISIMULATE_PYTHON"):
        print("side by side with AISimulate: skipped (set AISIM_BENCH_AISIMULATE_PYTHON)")
        return
    side = ["--size", str(side_by_side_size)]
    print(run_child_output("qualification.bench.bench_side_by_side", side, pure=False), end="")


def warm_versus_aisimulate(repetitions: int) -> None:
    """Warm in-process replay of the shared trace: compiled aisim vs AISimulate, interleaved;
    each side's least CPU seconds per case, and their ratio."""
    aisimulate = os.environ.get("AISIM_BENCH_AISIMULATE_PYTHON")
    best: dict[str, dict[str, float]] = {"aisim": {}, "aisimulate": {}}
    for _ in range(max(1, repetitions // 2 + 1)):
        ours = run_child("qualification.bench.bench_replay", ["--warm", "3"], pure=False)
        cpu_by_case: dict[str, float] = ours["cpu_s"]
        for case, cpu in cpu_by_case.items():
            best["aisim"][case] = min(cpu, best["aisim"].get(case, cpu))
        if aisimulate and os.path.exists(aisimulate):
            theirs = _aisimulate_child(aisimulate)
            for case in ("off", "ngram"):
                cpu = float(theirs[case]["cpu_s"])
                best["aisimulate"][case] = min(cpu, best["aisimulate"].get(case, cpu))
    for case, cpu in best["aisim"].items():
        line = f"warm replay 4000-request trace, {case}: aisim compiled cpu {cpu:.3f} s"
        if case in best["aisimulate"]:
            reference = best["aisimulate"][case]
            line += f", AISimulate cpu {reference:.3f} s, aisim faster x{reference / cpu:.2f}"
        else:
            line += " (AISimulate not installed: set AISIM_BENCH_AISIMULATE_PYTHON)"
        print(line)


def _aisimulate_child(python: str) -> dict[str, dict[str, float]]:
    result: dict[str, dict[str, float]] = run_aisimulate(
        python, ["--trace", bench_replay.TRACE], "AISimulate benchmark"
    )
    return result


if __name__ == "__main__":
    main()
