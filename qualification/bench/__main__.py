"""``python -m qualification.bench``: print the performance figures the issues ask for.

Compiled vs interpreted ratios are measured in one run (interleaved, best of three), because the
machines are shared and noisy; absolute seconds are for orientation only.
"""

from __future__ import annotations

import argparse

from qualification.bench._builds import compare_builds


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m qualification.bench", description=__doc__)
    parser.add_argument("--resolve-count", type=int, default=100_000)
    parser.add_argument("--repetitions", type=int, default=3)
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


if __name__ == "__main__":
    main()
