"""``python -m qualification.parity {check,update,list}``: see ``docs/qualification.md``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from qualification.cases import SUITE_NAMES, get_suite
from qualification.parity._commands import RTOL_ENV, check, parity_rtol, update
from qualification.parity._golden import goldens_dir


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m qualification.parity",
        description="Frozen-golden parity: compare aisim's outputs with goldens/, or update them.",
    )
    parser.add_argument("action", choices=("check", "update", "list"))
    parser.add_argument(
        "--suite", action="append", choices=SUITE_NAMES, help="a suite, repeatable (default: all)"
    )
    parser.add_argument("--goldens", type=Path, help="goldens directory (default: ./goldens)")
    parser.add_argument(
        "--rtol", type=float, help=f"relative tolerance for check (default: ${RTOL_ENV} or exact)"
    )
    args = parser.parse_args(argv)
    names = list(args.suite) if args.suite else list(SUITE_NAMES)
    if args.action == "list":
        for name in names:
            suite = get_suite(name)
            print(f"{name}: {len(suite.cases)} cases - {suite.description}")
        return 0
    directory = args.goldens if args.goldens is not None else goldens_dir()
    if args.action == "update":
        return update(names, directory)
    rtol = args.rtol if args.rtol is not None else parity_rtol()
    return check(names, directory, rtol)


if __name__ == "__main__":
    sys.exit(main())
