"""``aisim sweep SWEEP --out DIR``: run a sweep (docs/sweep.md) and write ``points.parquet``,
``summary.json``, the plots and, when asked to merge over axes, ``merged.parquet``; resumable
(finished points in ``DIR/points/`` are skipped)."""

from __future__ import annotations

import argparse
import io
import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from aisim._io import (
    StagedFiles,
    canonical_json,
    check_output_dir,
    check_path_text,
    write_synced,
)
from aisim.cli._args import ExamplesFormatter, integer
from aisim.cli._intervals import MAX_WORKERS
from aisim.errors import ConfigError

#: Least time between two redraws of the progress bar.
REDRAW_INTERVAL_S: Final = 0.1
#: The files a sweep (re)writes in DIR, and its folders (checked before the first point).
OUTPUT_FILES: Final = ("sweep.json", "points.parquet", "summary.json", "merged.parquet")
OUTPUT_FOLDERS: Final = ("points", "plots")
#: Every plot a sweep may write in DIR/plots (one it did not write this time is an earlier
#: run's, and is removed).
PLOT_FILES: Final = ("throughput_vs_latency.png", "sd_gain_vs_load.png")


def register(commands: Any) -> None:
    """Add the ``sweep`` subcommand."""
    parser = commands.add_parser(
        "sweep",
        help="run many replays over axes of a base config; best config under SLOs, SD gains",
        description=(
            "Run every point of SWEEP (YAML or JSON, docs/sweep.md) and write DIR/points.parquet "
            "(one row per point), DIR/summary.json and DIR/plots/. Points already finished in "
            "DIR are skipped, so an interrupted sweep resumes where it stopped."
        ),
        epilog=(
            "examples:\n"
            "  aisim sweep docs/examples/sweep/sd_vs_load.yaml --out out/sd-vs-load --workers 2\n"
            "  aisim sweep docs/examples/sweep/sd_vs_load.yaml --out out/sd-vs-load \\\n"
            "      --merge-over traffic.load.rate_rps   # each scheme's percentiles over its loads"
        ),
        formatter_class=ExamplesFormatter,
    )
    parser.add_argument("sweep", metavar="SWEEP", help="sweep file (YAML or JSON)")
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder")
    parser.add_argument(
        "--backend",
        choices=("pool", "ray"),
        default="pool",
        help="where points run (default: %(default)s)",
    )
    parser.add_argument(
        "--workers",
        type=_positive,
        default=None,
        metavar="N",
        help="processes evaluating points (1: this one; N >= 2: N helper processes this one "
        "feeds) or local Ray CPUs (default: one per CPU)",
    )
    parser.add_argument("--address", default=None, help="Ray cluster address (with --backend ray)")
    parser.add_argument(
        "--overwrite", action="store_true", help="start DIR afresh (drop finished points)"
    )
    parser.add_argument(
        "--merge-over",
        action="append",
        default=None,
        metavar="PATH",
        help="pool latency percentiles over this axis (repeatable): points that differ only in "
        "the named axes have their sketches merged into DIR/merged.parquet (default: the sweep "
        "file's merge_over)",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    parser.add_argument(
        "--intervals",
        type=integer,
        metavar="N",
        help="every point also carries <metric>_p50/_low/_high over N Monte Carlo replicas "
        "(docs/uncertainty.md)",
    )
    parser.add_argument("--interval-seed", type=integer, default=0, help="seed of the replicas")
    parser.add_argument(
        "--sources",
        default="all",
        help="what the intervals include: all, none, or a list (default: %(default)s)",
    )
    parser.set_defaults(handler=sweep_command)


def _positive(text: str) -> int:
    value = integer(text)
    if not 1 <= value <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"expected an integer in 1..{MAX_WORKERS}, got {text!r}")
    return value


def sweep_command(args: argparse.Namespace) -> int:
    from aisim.sweep import render_merged, render_text, run, summarize

    check_path_text(args.sweep, "SWEEP")
    # The sweep replaces its own outputs (it resumes), so there only their kind and place are
    # checked; a folder it did not write (no sweep.json: a replay's summary.json, a user's
    # plots) keeps its files unless --overwrite.
    out = check_output_dir(args.out, True, "--out", OUTPUT_FILES)
    for name in OUTPUT_FOLDERS:
        check_output_dir(out / name, True, "--out")
    if not args.overwrite and not (out / "sweep.json").is_file():
        check_output_dir(out, False, "--out", OUTPUT_FILES)
        check_output_dir(out / "plots", False, "--out", PLOT_FILES)
    if args.address is not None and args.backend != "ray":
        raise ConfigError("--address: only with --backend ray")
    if args.merge_over is not None:
        from aisim.config import check_merge_over, load_sweep

        # Before any point runs, and under the option's own name.
        check_merge_over(args.merge_over, load_sweep(args.sweep).axis_paths, "--merge-over")
    if args.intervals is None:
        from aisim.cli._intervals import refuse_without_intervals

        flags = {"--interval-seed": ("interval_seed", 0), "--sources": ("sources", "all")}
        refuse_without_intervals(args, flags)
    else:
        from aisim.uncertainty import Sources, check_replicas, check_seed

        check_replicas(args.intervals)
        check_seed(args.interval_seed, "--interval-seed")
        Sources.parse(args.sources)
    show = not args.no_progress and sys.stderr.isatty()
    with _progress(show) as callback:
        frame = run(
            args.sweep,
            backend=args.backend,
            workers=args.workers,
            address=args.address,
            out=out,
            overwrite=args.overwrite,
            progress=callback,
            merge_over=args.merge_over,
        )
    if args.intervals is not None:
        from aisim.uncertainty import Sources, add_sweep_intervals

        frame = add_sweep_intervals(
            frame,
            args.sweep,
            args.intervals,
            seed=args.interval_seed,
            sources=Sources.parse(args.sources),
            backend=args.backend,
            workers=args.workers,
            address=args.address,
        )
    summary = summarize(frame)
    summary["skipped_points"] = frame.attrs["skipped_points"]
    if "intervals" in frame.attrs:
        summary["intervals"] = frame.attrs["intervals"]
    written = write_outputs(out, frame, summary)
    if args.json:
        sys.stdout.write(canonical_json(summary))
    else:
        sys.stdout.write(render_text(summary))
        if "merged" in summary:
            sys.stdout.write(render_merged(summary["merged"]))
        sys.stdout.write(
            f"skipped {summary['skipped_points']} finished points; wrote "
            f"{', '.join(str(p) for p in written)}\n"
        )
    return 0


def write_outputs(
    out: Path,
    frame: Any,
    summary: dict[str, Any],
    write: Callable[[Path, bytes], None] = write_synced,
) -> list[Path]:
    """Write the sweep's final outputs under ``out`` as one set (``write_together``, each file
    by ``write``): ``points.parquet``, ``merged.parquet`` when the frame was merged over axes
    (``summary`` gains its digest, ``merged``), ``summary.json`` and ``plots/*.png``; an output
    not made this run (``merged.parquet``, a plot) is removed, lest an earlier run's read as
    this one's. A failure part way leaves the earlier run's set whole. The sweep owns these
    names (checked before the first point), so they are replaced. Returns the paths written."""
    from aisim.sweep import merge, plot_images, summarize_merged

    files: dict[str, bytes | None] = {"points.parquet": _parquet_bytes(frame)}
    if "merge_over" in frame.attrs:
        merged = merge(frame)
        summary["merged"] = summarize_merged(merged)
        files["merged.parquet"] = _parquet_bytes(merged)
    else:
        files["merged.parquet"] = None
    files["summary.json"] = canonical_json(summary).encode("utf-8")
    images = plot_images(frame)
    for name in PLOT_FILES:
        files[f"plots/{name}"] = images.get(name)
    with StagedFiles(out, overwrite=True, write=write) as staged:
        for name, data in files.items():
            staged.add(name, data)
        return staged.commit()


def _parquet_bytes(frame: Any) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


@contextmanager
def _progress(show: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar over points on stderr, or None."""
    if not show:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    progress = Progress(
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
        # Redrawn from the points' callback, not by a refresh thread: with no thread running,
        # the sweep pool may fork its helpers (aisim.sweep._backends.start_method).
        auto_refresh=False,
    )
    task = progress.add_task("sweep", total=None)
    last_redraw = -math.inf

    def update(done: int, total: int) -> None:
        # A redraw costs ~0.9 CPU-ms, as much as a point file's write: at most every
        # REDRAW_INTERVAL_S (and at the start and the end), not on each ~15 ms point.
        nonlocal last_redraw
        now = time.monotonic()
        redraw = done in (0, total) or now - last_redraw >= REDRAW_INTERVAL_S
        if redraw:
            last_redraw = now
        progress.update(task, completed=done, total=total, refresh=redraw)

    with progress:
        yield update
