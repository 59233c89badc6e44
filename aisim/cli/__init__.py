"""The ``aisim`` command: one subcommand per capability, each in its own module.

Public: ``main(argv)`` (what the ``aisim`` script runs), ``build_parser()`` and the strict
``type=`` converters ``integer_argument`` / ``number_argument`` that the harness's commands
share (``aisim record``'s flags); the subcommand modules are private.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from aisim.cli._args import integer as integer_argument
from aisim.cli._args import number as number_argument
from aisim.errors import AisimError

__all__ = ["build_parser", "integer_argument", "main", "number_argument"]


def build_parser() -> argparse.ArgumentParser:
    from aisim.cli import (
        _estimate,
        _gate,
        _qualify,
        _record,
        _replay,
        _schema,
        _speculation,
        _sweep,
    )
    from aisim.cli._args import Parser

    parser = Parser(
        prog="aisim",
        description="Predict what speculative decoding does to LLM serving, with evidence.",
    )
    parser.add_argument("--version", action="version", version=_version())
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in (_speculation, _gate, _estimate, _record, _qualify, _replay, _schema, _sweep):
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: user errors (argument errors included) print one line to stderr and exit 2;
    never a traceback."""
    from aisim.cli._args import one_line

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except AisimError as exc:
        print(f"aisim: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        # An optional dependency this command needs is not installed: name its extra.
        from aisim._extras import EXTRA_OF, missing_extra_message

        top = (exc.name or "").split(".")[0]
        if top not in EXTRA_OF:
            raise
        print(
            f"aisim: error: {missing_extra_message(top, f'aisim {args.command}')}", file=sys.stderr
        )
        return 2
    except KeyboardInterrupt:
        print("aisim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`aisim compare ... | head`): stop quietly, as Unix tools do.
        # Point stdout at devnull so the interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


def _version() -> str:
    import aisim

    build = "compiled" if aisim.__compiled__ else "pure"
    return f"aisim {aisim.__version__} ({build})"
