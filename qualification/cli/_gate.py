"""``aisim snapshot`` and ``aisim compare``: the prediction-regression gate (docs/design.md#qualification).

``snapshot`` evaluates a scenario file and writes every prediction; ``compare OLD NEW`` exits 1
and lists each prediction that moved beyond ``--rtol`` (case, metric, old, new, relative change),
else exits 0 with a one-line summary. The logic lives in ``qualification.gate``.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from aisim.cli import number_argument as number
from aisim.errors import ConfigError
from aisim.files import check_output_file


def register(commands: Any) -> None:
    """Add the ``snapshot`` and ``compare`` subcommands."""
    snapshot = commands.add_parser(
        "snapshot",
        help="write the predictions of a scenario set (prediction-regression gate)",
        description="Evaluate every scenario of FILE and write the predictions as JSON.",
    )
    snapshot.add_argument(
        "--scenarios",
        metavar="FILE",
        help="scenario file, YAML or JSON "
        "(default: the packaged qualification/gate/scenarios.yaml)",
    )
    snapshot.add_argument("--out", metavar="SNAPSHOT", required=True, help="output JSON file")
    snapshot.add_argument("--overwrite", action="store_true", help="replace an existing file")
    snapshot.set_defaults(handler=snapshot_command)

    compare = commands.add_parser(
        "compare",
        help="fail when any prediction moved between two snapshots",
        description=(
            "Compare two snapshots: exit 1 listing every prediction that moved beyond the "
            "relative tolerance (or vanished), exit 0 with a one-line summary otherwise."
        ),
    )
    compare.add_argument("old", metavar="OLD", help="baseline snapshot (e.g. the base branch)")
    compare.add_argument("new", metavar="NEW", help="candidate snapshot (e.g. the pull request)")
    compare.add_argument(
        "--rtol", type=number, default=None, help="relative tolerance (default: 1e-9)"
    )
    compare.set_defaults(handler=compare_command)


def snapshot_command(args: argparse.Namespace) -> int:
    from qualification.gate import DEFAULT_SCENARIOS, take_snapshot, write_snapshot

    scenarios = args.scenarios if args.scenarios is not None else DEFAULT_SCENARIOS
    check_output_file(args.out, args.overwrite, "--out")
    document = take_snapshot(scenarios)
    write_snapshot(args.out, document, overwrite=args.overwrite)
    predictions = document["predictions"]
    failing = sorted(key for key, value in predictions.items() if "error" in value)
    count = sum(len(value) for value in predictions.values())
    print(
        f"aisim snapshot: {count} predictions from {len(predictions)} scenarios "
        f"({document['build']} build) -> {args.out}"
        + (f"; {len(failing)} scenario(s) answered with an error" if failing else "")
    )
    return 0


def compare_command(args: argparse.Namespace) -> int:
    from qualification.gate import DEFAULT_RTOL, compare_snapshots, load_snapshot

    rtol = DEFAULT_RTOL if args.rtol is None else args.rtol
    if not (math.isfinite(rtol) and rtol >= 0):
        raise ConfigError(f"--rtol: expected a finite number >= 0, got {rtol!r}")
    report = compare_snapshots(load_snapshot(args.old), load_snapshot(args.new), rtol)
    for line in report.lines():
        print(line)
    return 0 if report.passed else 1
