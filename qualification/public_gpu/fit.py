"""``python -m qualification.public_gpu.fit [EVIDENCE] [--out FILE]``: fit the terms, print or
write the artefact (``qualification.public_gpu._fit``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from aisim.files import atomic_write_text, canonical_json
from qualification.public_gpu._fit import fit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("evidence", nargs="?", type=Path, default=Path("evidence/public-gpu"))
    parser.add_argument("--out", type=Path, help="write the artefact (overwrites)")
    args = parser.parse_args()
    artefact = fit(args.evidence)
    text = canonical_json(artefact)
    if args.out is None:
        print(text, end="")
    else:
        atomic_write_text(args.out, text, overwrite=True)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
