"""Command line of the recorder, shared by ``aisim record`` and ``python -m qualification.record``.

On CPU the recorder needs glibc malloc settings that only take effect at process start; when they
are missing, the command re-runs itself once in a child process with them set.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from aisim.cli import integer_argument as integer
from aisim.errors import ConfigError
from aisim.files import int_text_problem
from qualification.record._geometry import DRAFTER_KINDS, PRESETS, Grid, get_preset

_REEXEC_MARK = "AISIM_RECORD_CHILD"


def add_arguments(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """``required=False`` (``aisim record``, which also has the ``engine`` target): the three
    required options are checked by ``run`` instead of argparse."""
    parser.add_argument("--preset", required=required, choices=sorted(PRESETS), help="target shape")
    parser.add_argument("--drafter", required=required, choices=DRAFTER_KINDS, help="draft method")
    parser.add_argument("--out", required=required, type=Path, help="dataset directory to write")
    parser.add_argument("--d", dest="draft_lengths", help="draft lengths, e.g. 1,2,3,4")
    parser.add_argument("--batch", dest="batch_sizes", help="logical batch sizes, e.g. 1,4,8")
    parser.add_argument("--kv", dest="kv_totals", help="total past KV tokens, e.g. 256,1024")
    parser.add_argument(
        "--reps", type=integer, help="timed repetitions per point (after 1 warm-up)"
    )
    parser.add_argument(
        "--device",
        default="auto",
        choices=("auto", "cpu", "cuda"),
        help="where the model runs; auto: cuda when available (default: %(default)s)",
    )
    parser.add_argument("--threads", type=integer, default=1, help="torch threads (1 recommended)")
    parser.add_argument(
        "--seed",
        type=integer,
        default=0,
        help="seed of the random weights and inputs (default: %(default)s)",
    )
    parser.add_argument(
        "--dtype",
        default="float32",
        choices=("float32", "bfloat16", "float16"),
        help="weights, activations and KV cache; bfloat16 is usual on GPU (default: %(default)s)",
    )
    parser.add_argument(
        "--evidence-type",
        default="local-measurement",
        choices=("local-measurement", "hardware"),
        help="the sidecar's label: hardware for recordings on the GPUs predicted "
        "(docs/evidence.md) (default: %(default)s)",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing dataset")
    parser.add_argument(
        "--allow-dirty",
        action="store_true",
        help="record even with uncommitted changes in the source tree (the sidecar says so)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


#: Bounds of the grid flags (``--d``, ``--batch``, ``--kv``): the largest value and the most
#: values of each. Real recordings use d 1..5, B 1..64, K up to 32k; beyond these a grid runs
#: for hours (``--d 1000`` built a 1000-token draft chain per point).
GRID_LIMITS = {"d": 16, "batch": 1024, "kv": 1_048_576}
MAX_GRID_VALUES = 32


def _int_list(text: str | None, default: tuple[int, ...], flag: str) -> tuple[int, ...]:
    """``flag``'s comma list (``--d``, ``--batch``, ``--kv``), sorted; ``default`` if not given.
    Refusals are one line naming ``flag``, the value and what is allowed."""
    if text is None:
        return default
    highest = GRID_LIMITS[flag[2:]]
    parts = text.split(",")
    if len(parts) > MAX_GRID_VALUES:
        raise ConfigError(
            f"{flag}: at most {MAX_GRID_VALUES} values, got {len(parts)} in {_short(text)}"
        )
    values: list[int] = []
    for part in parts:
        if int_text_problem(part) is not None or not 1 <= int(part) <= highest:
            raise ConfigError(
                f"{flag}: expected comma-separated integers in 1..{highest}, got {_short(text)}"
            )
        if int(part) in values:  # a slip (one typed twice for another), not dropped unseen
            raise ConfigError(
                f"{flag}: {int(part)} is given twice in {_short(text)}; expected "
                f"comma-separated distinct integers in 1..{highest}"
            )
        values.append(int(part))
    return tuple(sorted(values))


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def grid_from_args(args: argparse.Namespace) -> Grid:
    """The preset's grid with any --d/--batch/--kv/--reps overrides applied and checked."""
    base = get_preset(args.preset).grid
    reps = base.repetitions if args.reps is None else args.reps
    if reps < 1 or reps > 1000:
        raise ConfigError(f"--reps: expected an integer in 1..1000, got {reps}")
    return Grid(
        _int_list(args.draft_lengths, base.draft_lengths, "--d"),
        _int_list(args.batch_sizes, base.batch_sizes, "--batch"),
        _int_list(args.kv_totals, base.kv_totals, "--kv"),
        reps,
    )


def command_line(args: argparse.Namespace, grid: Grid) -> str:
    """The canonical command that reproduces this recording (written into the sidecar)."""
    parts = [
        "python",
        "-m",
        "qualification.record",
        "--preset",
        args.preset,
        "--drafter",
        args.drafter,
        "--out",
        str(args.out),
        "--d",
        ",".join(map(str, grid.draft_lengths)),
        "--batch",
        ",".join(map(str, grid.batch_sizes)),
        "--kv",
        ",".join(map(str, grid.kv_totals)),
        "--reps",
        str(grid.repetitions),
        "--device",
        args.device,
        "--threads",
        str(args.threads),
        "--seed",
        str(args.seed),
        "--dtype",
        args.dtype,
        "--evidence-type",
        args.evidence_type,
    ]
    return shlex.join(parts)


def run(args: argparse.Namespace) -> int:
    """Record one dataset; prints where it went and how long it took."""
    from qualification.record._recorder import record_dataset, require_torch
    from qualification.record._summaries import MALLOC_ENV

    missing_options = [
        f"--{name}" for name in ("preset", "drafter", "out") if getattr(args, name) is None
    ]
    if missing_options:
        raise ConfigError(
            f"record: {', '.join(missing_options)} required (or `aisim record engine ...` to "
            "record a vLLM engine)"
        )
    grid = grid_from_args(args)
    if args.threads < 1 or args.threads > 256:
        raise ConfigError(f"--threads: expected an integer in 1..256, got {args.threads}")
    if not 0 <= args.seed < 2**32:
        raise ConfigError(f"--seed: expected an integer in 0..4294967295, got {args.seed}")
    torch = require_torch()
    if args.device == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            "--device cuda: torch.cuda.is_available() is False; expected auto or cpu here"
        )
    wants_cpu = args.device == "cpu" or (args.device == "auto" and not torch.cuda.is_available())
    missing = any(key not in os.environ for key in MALLOC_ENV)
    if wants_cpu and missing and _REEXEC_MARK not in os.environ:
        argv = shlex.split(command_line(args, grid))[1:]
        argv += ["--overwrite"] if args.overwrite else []
        argv += ["--no-progress"] if args.no_progress else []
        argv += ["--allow-dirty"] if args.allow_dirty else []
        env = {**os.environ, **MALLOC_ENV, _REEXEC_MARK: "1"}
        print(
            "aisim record: re-running with glibc malloc settings for stable CPU timing",
            file=sys.stderr,
        )
        return subprocess.run([sys.executable, *argv], env=env, check=False).returncode

    started = time.monotonic()
    progress, finish = _progress_reporter(not args.no_progress)
    try:
        dataset = record_dataset(
            args.preset,
            args.drafter,
            args.out,
            grid=grid,
            device=args.device,
            threads=args.threads,
            seed=args.seed,
            dtype=args.dtype,
            command=command_line(args, grid),
            evidence_type=args.evidence_type,
            overwrite=args.overwrite,
            progress=progress,
            allow_dirty=args.allow_dirty,
        )
    finally:
        finish()
    elapsed = time.monotonic() - started
    print(
        f"recorded {len(dataset.sd_rounds)} rounds and {len(dataset.stp_points)} STP points "
        f"into {dataset.directory} in {elapsed:.1f} s"
    )
    if _REEXEC_MARK in os.environ:
        _leave_recording_process()
    return 0


def _leave_recording_process() -> None:
    """End the re-run recording process now that the dataset is written, closed and renamed
    into place, without interpreter teardown. Both torch and pyarrow keep native thread pools;
    tearing them down at exit aborted this process once in CI ("terminate called without an
    active exception", exit status -6, seen by the parent as 250) on a run whose output was
    complete, as pyarrow's threaded reader once did for parquet reads. The process exists only
    to record, so nothing is left for teardown to do."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _progress_reporter(
    enabled: bool,
) -> tuple[Callable[[str, int, int], None] | None, Callable[[], None]]:
    """A rich progress bar on stderr (no refresh thread: it would add to process CPU time)."""
    if not enabled:
        return None, lambda: None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        auto_refresh=False,
        transient=False,
    )
    bar.start()
    task = bar.add_task("recording", total=None)

    def update(label: str, done: int, total: int) -> None:
        bar.update(task, description=label, completed=done, total=total, refresh=True)

    return update, bar.stop


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m qualification.record",
        description="Record STP points and SD rounds of a model built from config.",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except ConfigError as exc:
        print(f"aisim: error: {exc}", file=sys.stderr)
        return 2
