"""The ``aisim`` command: one subcommand per capability, each in its own module.

Public: ``main(argv)`` (what the ``aisim`` script runs), ``build_parser()`` and the strict
``type=`` converters ``integer_argument`` / ``number_argument``, the ``OneLineParser`` whose
usage errors are one line (exit 2) and the ``ExamplesFormatter`` that prints an ``examples``
epilog as written, which the harness's commands share (``aisim record``'s flags,
its ``python -m`` tools); the subcommand modules are private. Subcommands of other
installed packages come from the ``aisim.commands`` entry-point group (``_plugin_commands``):
that is how the harness adds ``snapshot``, ``compare``, ``record`` and ``qualify`` without this
package importing it (docs/design.md#import-graph).
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final

from aisim.cli._args import ExamplesFormatter
from aisim.cli._args import Parser as OneLineParser
from aisim.cli._args import integer as integer_argument
from aisim.cli._args import number as number_argument
from aisim.errors import AisimError

__all__ = [
    "ExamplesFormatter",
    "OneLineParser",
    "build_parser",
    "integer_argument",
    "main",
    "number_argument",
]


#: The group a package declares its ``aisim`` subcommands in (pyproject.toml
#: ``[project.entry-points."aisim.commands"]``): each entry point is a ``register(commands)``
#: function, as the built-in command modules have. aisim's own harness adds ``snapshot``/``compare``
#: (entry point ``gate``), ``record`` and ``qualify`` this way, so this package never imports it.
_COMMAND_GROUP = "aisim.commands"

#: The order commands are listed in ``aisim --help``; entry points not named here follow, by name.
#: A user's path first (configure, price, replay, search, decide), then the harness.
_ORDER = (
    "speculation",
    "estimate",
    "replay",
    "sweep",
    "advise",
    "schema",
    "qualify",
    "record",
    "gate",
)

#: ``aisim --help``'s closing lines: a first command per question, from a checkout's root.
_EXAMPLES = """\
examples (from a checkout's root; docs/ explains each command):
  aisim speculation explain docs/examples/speculation/eagle3.yaml
  aisim estimate --model Qwen3-8B --hardware h100 --batch 8 --kv 1024 --scheme mtp --depth 3
  aisim replay docs/examples/replay/aggregated_mtp.yaml --out out/replay
  aisim sweep docs/examples/sweep/sd_vs_load.yaml --out out/sd-vs-load
  aisim advise --model Qwen/Qwen3-8B --hardware h100_sxm --rate 4 --requests 100 \\
      --acceptance ngram=0.5 --replicas 5 --out out/advice
  aisim qualify report --out out/report

'aisim COMMAND --help' describes a command and its options."""


def build_parser() -> argparse.ArgumentParser:
    from aisim.cli import _advise, _estimate, _replay, _schema, _speculation, _sweep
    from aisim.cli._args import Parser

    parser = Parser(
        prog="aisim",
        description="Predict what speculative decoding does to LLM serving, with evidence.",
        epilog=_EXAMPLES,
        formatter_class=ExamplesFormatter,
    )
    parser.add_argument("--version", action="version", version=_version())
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    registers: dict[str, Callable[[Any], None]] = {
        "speculation": _speculation.register,
        "estimate": _estimate.register,
        "replay": _replay.register,
        "schema": _schema.register,
        "sweep": _sweep.register,
        "advise": _advise.register,
    }
    plugins = _plugin_commands()
    for name in (*_ORDER, *sorted(set(plugins) - set(_ORDER))):
        register = registers.get(name) or plugins.get(name)
        if register is not None:
            register(commands)
    return parser


def _plugin_commands() -> dict[str, Callable[[Any], None]]:
    """The ``register`` functions of the installed ``aisim.commands`` entry points, by name
    (the first of two with one name wins; a built-in command's name is never replaced)."""
    from importlib.metadata import entry_points

    found: dict[str, Callable[[Any], None]] = {}
    for point in entry_points(group=_COMMAND_GROUP):
        found.setdefault(point.name, point.load())
    return found


#: Why a write to stdout fails when the fault is the destination's: no space, over quota, too
#: large for the file system, a device error.
_OUTPUT_ERRNOS: Final = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


class Terminated(BaseException):
    """Raised in the main thread on SIGTERM, so a command killed by ``timeout`` or a job
    scheduler unwinds like one interrupted by Ctrl-C: temp files and half-made outputs are
    deleted by the same ``except BaseException``/``finally`` blocks."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: user errors (argument errors included) print one line to stderr and exit 2;
    never a traceback. SIGINT exits 130 and SIGTERM 143, leaving no partial output."""
    import signal
    import threading

    from aisim.cli._args import one_line, reject_unknown

    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        reject_unknown(parser, args, unknown)
    previous: Any = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        code = int(args.handler(args))
        sys.stdout.flush()  # a full disk fails here, not in the interpreter's final flush
        return code
    except Terminated:
        print("aisim: terminated", file=sys.stderr)
        return 143
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
    except OSError as exc:
        # Writing to stdout failed (`aisim schema replay > /dev/full`: no space left): file
        # errors at the edges are ConfigErrors naming the file, so one without a file name is
        # the output's. Anything else is a bug to see in full.
        if exc.filename is not None or exc.errno not in _OUTPUT_ERRNOS:
            raise
        print(f"aisim: error: cannot write the output: {exc.strerror}", file=sys.stderr)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 2
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _version() -> str:
    import aisim

    build = "compiled" if aisim.__compiled__ else "pure"
    return f"aisim {aisim.__version__} ({build})"
