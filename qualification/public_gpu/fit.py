"""``python -m qualification.public_gpu.fit [EVIDENCE] [--out FILE [--overwrite]] [--hybrid | --dspark |
--acceptance]``: fit the terms,
print or write the artefact (``qualification.public_gpu._fit``). ``--hybrid`` fits only the
hybrid-model terms on the Qwen3.8-27B HumanEval half (``fit_hybrid``, full replays: minutes)
and writes them as the ``hybrid`` block of the existing artefact ``EVIDENCE/fitted_terms.json``
(or ``--out``), leaving its other blocks as they are; ``--dspark`` likewise fits only DSpark's
host time per drafted position on the HumanEval DSpark points (``fit_dspark``, the ``dspark``
block, with the vLLM request overhead of the ``hybrid`` block); ``--acceptance`` refits only the
MTP acceptance rates (``fit_mtp_acceptance``, the ``mtp_acceptance`` block) on the committed
scored run's H200 pairs (seconds); without any of them the other terms
are fitted and existing ``hybrid`` and ``dspark`` blocks are kept."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from aisim.cli import OneLineParser
from aisim.errors import AisimError, DataIntegrityError
from aisim.files import atomic_write_text, canonical_json, check_output_file, load_config_file
from qualification.public_gpu import request_overheads
from qualification.public_gpu._fit import fit, fit_dspark, fit_hybrid, fit_mtp_acceptance

PROG = "python -m qualification.public_gpu.fit"


def main(argv: list[str] | None = None) -> int:
    """Bad input (a missing evidence folder, an unreadable ``fitted_terms.json``, an ``--out``
    that cannot be written) is one line ``error: ...`` on stderr and exit 2, before any
    fitting; they used to end in tracebacks, an unwritable ``--out`` after minutes of fitting."""
    parser = OneLineParser(prog=PROG, description=__doc__)
    parser.add_argument(
        "evidence",
        nargs="?",
        type=Path,
        default=Path("evidence/public-gpu"),
        help="the public GPU evidence folder (default: %(default)s)",
    )
    parser.add_argument("--out", type=Path, help="write the artefact to FILE")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace --out if it exists (refused otherwise)"
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--hybrid", action="store_true", help="fit the hybrid terms only")
    group.add_argument("--dspark", action="store_true", help="fit the DSpark term only")
    group.add_argument(
        "--acceptance", action="store_true", help="fit the MTP acceptance rates only"
    )
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except AisimError as exc:
        print(f"error: {' '.join(str(exc).splitlines())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted; nothing written", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
    if args.out is not None:
        # Refused before minutes of fitting, not after.
        check_output_file(args.out, args.overwrite, "--out")
    if not args.evidence.is_dir():
        found = "not found" if not args.evidence.exists() else "not a folder"
        raise DataIntegrityError(
            f"EVIDENCE {str(args.evidence)!r}: {found}; expected the public GPU evidence folder "
            "(default evidence/public-gpu, from a checkout's root)"
        )
    existing = args.evidence / "fitted_terms.json"
    previous: Any = {}
    if existing.exists():
        previous = load_config_file(existing, "fitted_terms.json")
        if not isinstance(previous, dict):
            raise DataIntegrityError(
                f"{str(existing)!r}: expected a JSON object (the fitted terms), got "
                f"{type(previous).__name__}"
            )
    if args.hybrid:
        artefact = {**previous, "hybrid": fit_hybrid(args.evidence)}
    elif args.acceptance:
        artefact = {**previous, "mtp_acceptance": fit_mtp_acceptance(args.evidence)}
    elif args.dspark:
        fitted = fit_dspark(args.evidence, request_overheads(previous))
        artefact = {**previous, "dspark": fitted}
    else:
        artefact = fit(args.evidence)
        for block in ("hybrid", "dspark"):
            if block in previous:
                artefact[block] = previous[block]
    text = canonical_json(artefact)
    if args.out is None:
        print(text, end="")
    else:
        atomic_write_text(args.out, text, overwrite=args.overwrite)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
