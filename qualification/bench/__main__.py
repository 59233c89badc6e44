"""``python -m qualification.bench``: print the performance figures the issues ask for.

Compiled vs interpreted ratios are measured in one run (interleaved, best of three), because the
machines are shared and noisy; absolute seconds are for orientation only.
"""

from __future__ import annotations

import argparse
import os

from qualification.bench import bench_replay
from qualification.bench._builds import compare_builds, run_child_output


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m qualification.bench", description=__doc__)
    parser.add_argument("--resolve-count", type=int, default=100_000)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--skip-replay", action="store_true", help="only the resolve benchmark")
    args = parser.parse_args()

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


if __name__ == "__main__":
    main()
