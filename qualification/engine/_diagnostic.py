"""The command line the recording diagnostics share (``step_diff``, ``step_causes``,
``ttft_diff``, ``undrafted``): recordings as arguments, loaded and checked in turn, bad input
refused with one line naming the path and what is missing, exit 2."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from aisim.cli import ExamplesFormatter, OneLineParser
from aisim.errors import AisimError, DataIntegrityError
from qualification.engine._recording import EngineRecording, load_recording
from qualification.engine._schema import GRID_DIR, SERVED_PREFIX

#: The exit status for bad input (a missing recording, one without what the diagnostic needs,
#: a bad option value), as ``aisim`` and argparse use it.
BAD_INPUT: Final = 2

#: A committed recording every diagnostic runs on, shown in ``--help``.
EXAMPLE: Final = "evidence/engine/vllm-cpu-quiet-llama-4x256-ngram"


def diagnostic_parser(module: str, description: str) -> argparse.ArgumentParser:
    """``python -m qualification.engine.MODULE DIR [DIR ...]``, with an example in ``--help``."""
    command = f"python -m qualification.engine.{module}"
    parser = OneLineParser(
        prog=command,
        description=f"{description} No engine needed.",
        epilog=f"examples:\n  {command} {EXAMPLE}\n  {command} evidence/engine/vllm-cpu-*",
        formatter_class=ExamplesFormatter,
    )
    parser.add_argument(
        "recordings",
        nargs="+",
        type=Path,
        metavar="DIR",
        help=f"an engine recording: a folder with {GRID_DIR}/ and {SERVED_PREFIX}N/ folders "
        "(aisim record engine, aisim qualify engine-import); several are read in turn",
    )
    return parser


def run_diagnostic(
    paths: Sequence[Path],
    each: Callable[[EngineRecording], None],
    *,
    need_grid: bool,
    after: Callable[[], None] | None = None,
) -> int:
    """Load each recording in turn and hand it to ``each``, then call ``after``; 0, or
    ``BAD_INPUT`` with one line ``error: ...`` on stderr for any ``AisimError`` (a path that is
    no recording, one without ``grid/`` when ``need_grid``, bad data in a table)."""
    try:
        for path in paths:
            recording = load_recording(path)
            if need_grid and recording.grid is None:
                raise DataIntegrityError(
                    f"{str(path)!r}: no {GRID_DIR}/ step table; this diagnostic prices the served "
                    f"steps with the recording's own grid (aisim record engine --part grid --out DIR with the served runs' flags)"
                )
            each(recording)
        if after is not None:
            after()
    except AisimError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    return 0
