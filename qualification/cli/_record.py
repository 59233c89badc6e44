"""``aisim record``: record STP points and SD rounds (needs ``pip install 'aisim[record]'``);
``aisim record engine``: record a real vLLM engine (needs vLLM: ``tox -e engine``).

The recorders live in ``qualification.record`` and ``qualification.engine``; PyTorch and vLLM are
imported only when a command runs, and their absence is one clear error naming what to install.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from aisim.errors import ConfigError
from aisim.files import check_output_dir


def register(commands: Any) -> None:
    """Add the ``record`` subcommand."""
    from qualification.record import add_recorder_arguments

    parser = commands.add_parser(
        "record",
        help="record SD rounds of a PyTorch model, or a real vLLM engine (record engine)",
        description=(
            "Time STP forward passes at (B, K) and ((d+1)B, K) and whole SD rounds at (d, B, K) "
            "for a preset target and drafter with random weights; write a dataset directory "
            "(parquet + JSON sidecars). CPU time with one thread on CPU, CUDA events on GPU. "
            "'aisim record engine --help': record a real vLLM engine instead (docs/evidence.md)."
        ),
    )
    add_recorder_arguments(parser, required=False)
    parser.set_defaults(handler=record_command)
    targets = parser.add_subparsers(dest="record_target", metavar="[TARGET]")
    engine = targets.add_parser(
        "engine",
        help="record a real vLLM engine (CPU): a step table and served runs of a trace",
        description=(
            "Drive vLLM in process with a model built from config (dummy weights): time a grid "
            "of decode, prefill and SD-round steps, then serve a seeded trace in wall-clock time "
            "(--served-runs times, 3 by default) recording every request, token and step, the "
            "engine settings read back from the engine, the host load, and the engine's "
            "Prometheus counters."
        ),
    )
    try:
        from qualification.engine import add_engine_arguments
    except ModuleNotFoundError as exc:
        # Its arguments live with the harness (aisim[qualify]); without it the command still
        # parses and says which extra to install.
        from aisim.extras import EXTRA_OF, MissingExtra, missing_extra_message

        missing = (exc.name or "").split(".")[0]
        if missing not in EXTRA_OF:
            raise
        message = missing_extra_message(missing, "aisim record engine")

        def refuse(args: argparse.Namespace) -> int:
            raise MissingExtra(message)

        engine.add_argument("arguments", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        engine.set_defaults(handler=refuse)
        return
    add_engine_arguments(engine)
    engine.set_defaults(handler=record_engine_command)


def record_command(args: argparse.Namespace) -> int:
    from qualification.record import run_recorder

    _check_dataset_folder(args.out, args.overwrite)
    return run_recorder(args)


def record_engine_command(args: argparse.Namespace) -> int:
    from qualification.engine import record_engine

    _check_dataset_folder(args.out, args.overwrite)
    # record_engine checks every flag, then that vLLM is there (a bad --rate is named even
    # where vLLM is missing), before it writes anything.
    return record_engine(args)


def _check_dataset_folder(out: Path | None, overwrite: bool) -> None:
    """Before anything is imported, built or timed: ``--out`` can become the dataset folder
    (not a file, not under one, writable) and holds no earlier dataset unless ``overwrite``."""
    if out is None:
        return  # the recorder names the missing option
    folder = check_output_dir(out, overwrite, "--out")
    if folder.is_dir() and any(folder.iterdir()) and not overwrite:
        raise ConfigError(f"{str(folder)!r} already exists; pass --overwrite to replace it")
