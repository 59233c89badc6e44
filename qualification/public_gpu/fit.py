"""``python -m qualification.public_gpu.fit [EVIDENCE] [--out FILE] [--hybrid]``: fit the terms,
print or write the artefact (``qualification.public_gpu._fit``). ``--hybrid`` fits only the
hybrid-model terms on the Qwen3.8-27B HumanEval half (``fit_hybrid``, full replays: minutes)
and writes them as the ``hybrid`` block of the existing artefact ``EVIDENCE/fitted_terms.json``
(or ``--out``), leaving its other blocks as they are; without it the other terms are fitted and
an existing ``hybrid`` block is kept."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from aisim.files import atomic_write_text, canonical_json
from qualification.public_gpu._fit import fit, fit_hybrid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("evidence", nargs="?", type=Path, default=Path("evidence/public-gpu"))
    parser.add_argument("--out", type=Path, help="write the artefact (overwrites)")
    parser.add_argument("--hybrid", action="store_true", help="fit the hybrid terms only")
    args = parser.parse_args()
    existing = args.evidence / "fitted_terms.json"
    previous = json.loads(existing.read_text("utf-8")) if existing.is_file() else {}
    if args.hybrid:
        artefact = {**previous, "hybrid": fit_hybrid(args.evidence)}
    else:
        artefact = fit(args.evidence)
        if "hybrid" in previous:
            artefact["hybrid"] = previous["hybrid"]
    text = canonical_json(artefact)
    if args.out is None:
        print(text, end="")
    else:
        atomic_write_text(args.out, text, overwrite=True)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
