"""``python -m qualification.uncertainty build [--check]``: (re)write
``aisim/uncertainty/cost_errors.v1.json`` from the committed evidence (``--check``: fail if the
committed file differs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aisim.files import atomic_write_text, canonical_json
from qualification.uncertainty._table import ABOUT, build_table

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "aisim/uncertainty/cost_errors.v1.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qualification.uncertainty")
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="write the cost-error table")
    build.add_argument("--check", action="store_true", help="only compare with the committed file")
    cover = commands.add_parser("coverage", help="coverage of the 90 %% intervals (held out)")
    cover.add_argument("--replicas", type=int, default=20)
    cover.add_argument("--seed", type=int, default=0)
    cover.add_argument("--json", action="store_true", help="print the whole JSON")
    gpu = commands.add_parser(
        "coverage-public-gpu", help="coverage on evidence/public-gpu serving points (slow)"
    )
    gpu.add_argument("--replicas", type=int, default=10)
    gpu.add_argument("--seed", type=int, default=0)
    gpu.add_argument(
        "--source", default="all", help="inferencex-latest, speculators or all (held out)"
    )
    gpu.add_argument("--workers", type=int, default=1, help="processes (default: %(default)s)")
    gpu.add_argument("--sources", default="all", help="the sources drawn (all; as --sources)")
    gpu.add_argument("--max-conc", type=int, help="only points at this concurrency or below (all)")
    gpu.add_argument("--out", help="write the JSON here (atomic) instead of printing it")
    args = parser.parse_args(argv)
    if args.command == "coverage-public-gpu":
        from aisim.errors import AisimError
        from aisim.uncertainty import Sources
        from qualification.uncertainty._coverage import public_gpu_coverage

        try:
            sources = Sources.parse(args.sources)
        except AisimError as exc:
            sys.stderr.write(f"error: {exc}\n")
            return 2

        chosen, most = args.source, args.max_conc

        def select(point: dict[str, object]) -> bool:
            source_ok = chosen == "all" or point["source"] == chosen
            return source_ok and (most is None or int(str(point["conc"])) <= most)

        result = public_gpu_coverage(
            ROOT / "evidence",
            args.replicas,
            args.seed,
            select,
            workers=args.workers,
            sources=sources,
            command=(
                "python -m qualification.uncertainty coverage-public-gpu "
                f"--replicas {args.replicas} --seed {args.seed} --source {chosen} "
                f"--sources {args.sources}" + ("" if most is None else f" --max-conc {most}")
            ),
        )
        if args.out:
            atomic_write_text(Path(args.out), canonical_json(result), overwrite=True)
            sys.stdout.write(f"wrote {args.out}\n")
        else:
            sys.stdout.write(canonical_json(result))
        return 0
    if args.command == "coverage":
        from qualification.uncertainty._coverage import coverage, to_markdown

        result = coverage(ROOT / "evidence", args.replicas, args.seed)
        sys.stdout.write(canonical_json(result) if args.json else to_markdown(result))
        return 0
    text = canonical_json(build_table(ROOT).to_dict(ABOUT))
    if args.check:
        same = TABLE.read_text(encoding="utf-8") == text
        sys.stdout.write("cost-error table up to date\n" if same else "cost-error table differs\n")
        return 0 if same else 1
    atomic_write_text(TABLE, text, overwrite=True)
    sys.stdout.write(f"wrote {TABLE.relative_to(ROOT)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
