"""``aisim record``: record STP points and SD rounds (needs ``pip install 'aisim[record]'``).

The recorder lives in ``qualification.record``; PyTorch is imported only when the command runs,
and its absence is one clear error naming the extra to install.
"""

from __future__ import annotations

import argparse
from typing import Any


def register(commands: Any) -> None:
    """Add the ``record`` subcommand."""
    from qualification.record._cli import add_arguments

    parser = commands.add_parser(
        "record",
        help="record STP points and SD rounds of a model built from config (PyTorch)",
        description=(
            "Time STP forward passes at (B, K) and ((d+1)B, K) and whole SD rounds at (d, B, K) "
            "for a preset target and drafter with random weights; write a dataset directory "
            "(parquet + JSON sidecars). CPU time with one thread on CPU, CUDA events on GPU."
        ),
    )
    add_arguments(parser)
    parser.set_defaults(handler=record_command)


def record_command(args: argparse.Namespace) -> int:
    from qualification.record._cli import run

    return run(args)
