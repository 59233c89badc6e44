"""``python -m qualification.fuzz [--profile ci|long] [--cases N] [--seed S]``: the fuzz campaign.

``ci`` (what ``tox -e fuzz`` runs): a fixed seed, 300 cases, exits 1 on any failure.
``long``: 20,000 cases from a given (or random) seed; run it niced in the background:
``nice -n 19 python -m qualification.fuzz --profile long --seed 1``.
Both print counts per class and the minimal reproducer of every failure signature.
"""

from __future__ import annotations

import argparse
import random
import sys

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from qualification.fuzz._campaign import Executor, Tally, minimise, report, subprocess_outcome
from qualification.fuzz._mutate import Case, cases

#: cases, seed, per-case time bound (s), subprocess spot checks (every Nth case).
PROFILES: dict[str, tuple[int, int | None, float, int]] = {
    "ci": (300, 20261130, 30.0, 100),
    "long": (20_000, None, 20.0, 1000),
}


def campaign(count: int, seed: int, time_bound_s: float, spot_every: int) -> tuple[Tally, str]:
    """Run ``count`` cases drawn by hypothesis from ``seed``; returns the tally and the report."""
    executor = Executor(time_bound_s)
    tally = Tally()

    @hypothesis_seed(seed)
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(cases())
    def one(case: Case) -> None:
        outcome = executor.run(case)
        tally.add(case, outcome)
        if tally.counts["runs"] % spot_every == 1:
            code, err = subprocess_outcome(case, time_bound_s)
            tally.spot_checks += 1
            if outcome.code is not None and (code, err.strip()) != (
                outcome.code,
                outcome.err.strip(),
            ):
                tally.spot_mismatches.append(
                    f"{case.seed} {' '.join(case.argv)}: in-process {outcome.code} "
                    f"{outcome.err.strip()!r}, subprocess {code} {err.strip()[-200:]!r}"
                )

    try:
        one()
        minimal = {
            key: minimise(case, outcome, executor)
            for key, (case, outcome) in tally.failures.items()
        }
    finally:
        executor.close()
    return tally, report(tally, minimal)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qualification.fuzz")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="ci")
    parser.add_argument("--cases", type=int, help="number of cases (default: the profile's)")
    parser.add_argument("--seed", type=int, help="hypothesis seed (default: the profile's)")
    args = parser.parse_args(argv)
    count, seed, time_bound_s, spot_every = PROFILES[args.profile]
    count = args.cases if args.cases is not None else count
    if args.seed is not None:
        seed = args.seed
    if seed is None:
        seed = random.SystemRandom().randrange(2**32)
    print(f"fuzz profile {args.profile}: {count} cases, seed {seed}, bound {time_bound_s:g} s")
    sys.stdout.flush()
    tally, text = campaign(count, seed, time_bound_s, spot_every)
    sys.stdout.write(text)
    return 1 if tally.failed() else 0


if __name__ == "__main__":
    raise SystemExit(main())
