"""Argument parsing shared by the subcommands: strict number syntax and one-line usage errors."""

from __future__ import annotations

import argparse
import re
import sys
from typing import NoReturn

from aisim._io import float_text_problem, int_text_problem


def one_line(message: str) -> str:
    """``message`` with every control character and Unicode line separator escaped
    (``\\x0b``), so a user value echoed in an error (a key, a file name) cannot break the
    one-line contract; everything else is left as is."""
    return "".join(
        repr(char)[1:-1]
        if (ord(char) < 32 or 0x7F <= ord(char) < 0xA0 or char in "\u2028\u2029")
        else char
        for char in message
    )


def reject_unknown(
    parser: argparse.ArgumentParser, args: argparse.Namespace, unknown: list[str]
) -> NoReturn:
    """Refuse arguments no parser took, in the words of the (sub)command they were given to
    (``aisim estimate: error: unrecognized arguments: --bogus (see aisim estimate --help)``),
    not the top-level parser's."""
    chosen = parser
    while True:
        actions = [a for a in chosen._actions if isinstance(a, argparse._SubParsersAction)]
        if not actions:
            break
        name = getattr(args, actions[0].dest, None)
        sub = actions[0].choices.get(name) if isinstance(name, str) else None
        if not isinstance(sub, argparse.ArgumentParser):
            break
        chosen = sub
    chosen.error(f"unrecognized arguments: {' '.join(unknown)}")


class ExamplesFormatter(argparse.HelpFormatter):
    """Help text wrapped as argparse wraps it, except a block starting ``examples``, which is
    printed line by line as written (command lines must not be reflowed)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("examples"):
            return "\n".join(indent + line if line else "" for line in text.splitlines())
        return super()._fill_text(text, width, indent)


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line on stderr (exit 2), like every
    other aisim error; the usage itself is one ``--help`` away."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")
        sys.exit(2)


def integer(text: str) -> int:
    """``type=`` for integer flags: ASCII digits and an optional leading '-' only."""
    problem = int_text_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return int(text)


def number(text: str) -> float:
    """``type=`` for real-valued flags: a finite decimal number in JSON's syntax."""
    problem = float_text_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return float(text)


def named_by_flag(message: str, fields: tuple[tuple[str, str], ...]) -> str:
    """``message`` (a ConfigError's) with the config field path it starts with named as the
    flag that set it, from ``fields`` ((field, flag); a path under a field counts):
    ``--output-tokens (traffic.source.output_tokens): ...``, ``--depth
    (speculation.params.depth, kind mtp): ...``. A leading ``--loads L: `` (a searched load)
    stays in front; a message naming no listed field is returned as is."""
    head, sep, rest = message.partition(": ") if message.startswith("--loads ") else ("", "", "")
    body = rest if sep else message
    match = re.match(r"[A-Za-z_][\w.\[\]]*", body)
    path = match.group(0) if match else ""
    for field, flag in fields:
        if path == field or path.startswith((field + ".", field + "[")):
            after = body[len(path) :]
            if after.startswith(" (") and ")" in after:
                inner, _, after = after[2:].partition(")")
                body = f"{flag} ({path}, {inner}){after}"
            else:
                body = f"{flag} ({path}){after}"
            break
    return f"{head}{sep}{body}"
