"""``aisim replay CONFIG --out DIR``: run a replay and write ``summary.json`` and
``requests.parquet`` (plus ``tokens.parquet`` with ``--per-token`` and ``intervals.json`` with
``--intervals``) as one set (docs/replay.md): the parquet files are streamed into a staging
folder while the replay runs and the whole set is renamed into place at the end; a failed run
leaves none of them behind and an earlier run's set whole."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aisim._io import (
    StagedFiles,
    canonical_json,
    check_output_dir,
    check_path_text,
    write_synced,
)
from aisim.cli._args import ExamplesFormatter, integer
from aisim.cli._intervals import (
    add_interval_arguments,
    prepare_intervals,
    render_interval_report,
    run_intervals,
)
from aisim.errors import SimulationError

if TYPE_CHECKING:
    from aisim.replay import RunSummary

#: Progress is reported every this many simulation events.
PROGRESS_EVERY_EVENTS = 20_000


def register(commands: Any) -> None:
    """Add the ``replay`` subcommand."""
    parser = commands.add_parser(
        "replay",
        help="replay traffic through a simulated vLLM-/SGLang-like deployment",
        description=(
            "Run the discrete-event replay of CONFIG (YAML or JSON, docs/replay.md) and write "
            "DIR/summary.json and DIR/requests.parquet (and DIR/tokens.parquet with "
            "--per-token). Existing files are kept unless --overwrite is given."
        ),
        epilog=(
            "examples:\n"
            "  aisim replay docs/examples/replay/aggregated_mtp.yaml --out out/replay\n"
            "  aisim replay docs/examples/replay/aggregated_mtp.yaml --out out/replay --overwrite \\\n"
            "      --intervals 20 --acceptance-rounds 2000   # with 90 % intervals"
        ),
        formatter_class=ExamplesFormatter,
    )
    parser.add_argument("config", metavar="CONFIG", help="replay config file (YAML or JSON)")
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder")
    parser.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    parser.add_argument(
        "--per-token",
        action="store_true",
        help="also write DIR/tokens.parquet: every emission event (request_id, time_ms, tokens)",
    )
    parser.add_argument(
        "--intervals",
        type=integer,
        metavar="N",
        help="also write DIR/intervals.json: p50 and central 90 %% intervals over N Monte Carlo "
        "replays (docs/design.md#uncertainty)",
    )
    add_interval_arguments(parser, slo_flag=True)
    parser.add_argument(
        "--step-table",
        metavar="DIR",
        help=(
            "price every pass from an engine step table instead of the config's timing: an "
            "engine recording, its grid/ folder or grid_steps.parquet (decode, prefill, mixed "
            "steps and SD rounds as `aisim qualify engine` prices them, and a recording "
            "folder's front-end model per step and per request; docs/replay.md)"
        ),
    )
    parser.set_defaults(handler=replay_command)


def replay_command(args: argparse.Namespace) -> int:
    """Handler of ``aisim replay``; user errors raise ``ConfigError``."""
    check_path_text(args.config, "CONFIG")
    outputs = ("summary.json", "requests.parquet", *(("tokens.parquet",) if args.per_token else ()))
    if args.intervals is not None:
        # A folder named intervals.json was found only after the replay's files were written.
        outputs = (*outputs, "intervals.json")
    out = check_output_dir(args.out, args.overwrite, "--out", outputs)
    summary_path = out / "summary.json"
    intervals_path = prepare_intervals(args, out)
    model = None
    admission_ms = 0.0
    if args.step_table is not None:
        step_table = check_path_text(args.step_table, "--step-table")
        model = step_table_model(args.config, step_table)
        # The recording's front end: its per-request term delays each request's reach of the
        # engine, as `aisim qualify engine` replays it (run_replay's admission_ms).
        frontend = getattr(model, "frontend", None)
        admission_ms = 0.0 if frontend is None else float(frontend.request_ms)
    intervals = None
    if intervals_path is not None:
        # Before anything is written (a failing replica leaves no half-written folder), and
        # priced as the replay is: a step-table model is stateful (its primitive caches), so
        # the point and each replica get their own, a fresh engine as the replay's is.
        factory = None
        if args.step_table is not None:
            config = args.config

            def factory() -> object:
                return step_table_model(config, step_table)

        intervals = run_intervals(args, factory, admission_ms)
    files: dict[str, bytes | None] = {}
    if intervals is not None:
        files["intervals.json"] = canonical_json(intervals).encode("utf-8")
    elif args.overwrite:
        # An earlier run's intervals would read as this run's (they were kept beside it).
        files["intervals.json"] = None
    show = not args.no_progress and sys.stderr.isatty()
    with _progress(show) as callback:
        summary, written = write_replay(
            args.config,
            out,
            args.overwrite,
            args.per_token,
            callback,
            PROGRESS_EVERY_EVENTS,
            forward_pass_model=model,
            admission_ms=admission_ms,
            files=files,
        )
    if args.json:
        sys.stdout.write(summary_path.read_text(encoding="utf-8"))
    else:
        sys.stdout.write(render_text(summary, *(p for p in written if p != intervals_path)))
    if intervals is not None:
        sys.stdout.write(render_interval_report(args, intervals_path, intervals))
    return 0


def write_replay(
    config: str,
    out: Path,
    overwrite: bool,
    per_token: bool,
    progress: Callable[[int, int, float], None] | None = None,
    progress_every: int = PROGRESS_EVERY_EVENTS,
    forward_pass_model: object | None = None,
    admission_ms: float = 0.0,
    files: Mapping[str, bytes | None] | None = None,
    write: Callable[[Path, bytes], None] = write_synced,
) -> tuple[RunSummary, list[Path]]:
    """Replay ``config`` into ``out`` as one set (``aisim._io.StagedFiles``): ``requests.parquet``
    (and ``tokens.parquet`` when ``per_token`` or the config's ``simulation.per_token`` asks) is
    streamed into a hidden staging folder in ``out`` while the replay runs, ``summary.json`` (and
    ``files``: more outputs of this run, e.g. ``intervals.json``; None removes an earlier run's)
    is written there by ``write``, and only then are they all renamed into place. Anything that
    fails (a bad line deep in a trace, an interrupted run, a full disk at the last write)
    removes the staging folder and a folder this call created, so an earlier run's set is left
    whole and no partial output is left. Returns the summary and the paths written (summary
    first). ``forward_pass_model`` and ``admission_ms``: ``run_replay``'s."""
    from aisim.config import run_replay
    from aisim.replay import RequestsParquet, TokensParquet

    with StagedFiles(out, overwrite=overwrite, write=write) as staged:
        requests_stream = RequestsParquet(staged.path("requests.parquet"))
        tokens_stream = TokensParquet(staged.path("tokens.parquet"))
        try:
            result = run_replay(
                config,
                progress=progress,
                progress_every=progress_every,
                per_token=True if per_token else None,
                request_sink=requests_stream.sink,
                token_sink=tokens_stream.sink,
                forward_pass_model=forward_pass_model,
                admission_ms=admission_ms,
            )
            summary = result.run_summary
            summary_text = _summary_json(summary.to_dict())
            staged.add("summary.json", summary_text.encode("utf-8"))
            requests_stream.commit(overwrite=False)
            staged.adopt("requests.parquet")
            if per_token or tokens_stream.rows > 0:
                tokens_stream.commit(overwrite=False)
                staged.adopt("tokens.parquet")
            elif overwrite:
                # An earlier run's per-token file would read as this run's.
                staged.add("tokens.parquet", None)
            for name, data in (files or {}).items():
                staged.add(name, data)
        finally:
            requests_stream.discard()
            tokens_stream.discard()
        written = staged.commit()
    return summary, written


def step_table_model(config: str, step_table: Path) -> object:
    """The served-step model of ``step_table`` at the config's SD depth (0 without SD):
    ``aisim.fpm._engine_step_files.load_step_table_model``."""
    from aisim._io import load_config_file
    from aisim.config import resolve_speculation
    from aisim.fpm import load_step_table_model

    mapping = load_config_file(config, "config")
    engine = mapping.get("engine") if isinstance(mapping, dict) else None
    speculation = engine.get("speculation") if isinstance(engine, dict) else None
    depth = 0
    if speculation is not None:
        resolved = resolve_speculation(
            speculation, path="engine.speculation", base_dir=Path(config).resolve().parent
        )
        depth = resolved.replay_depth if resolved.enabled else 0
    return load_step_table_model(step_table, depth)


def _summary_json(summary: dict[str, Any]) -> str:
    """The summary as canonical JSON, before anything is written. The config edge bounds every
    time, rate and length so all figures are finite; a figure that is not anyway is reported
    (naming it) instead of a half-written output folder."""
    try:
        return canonical_json(summary)
    except ValueError:
        bad = sorted(
            key
            for key, value in summary.items()
            if isinstance(value, float) and not math.isfinite(value)
        )
        raise SimulationError(
            f"summary: {', '.join(bad) or 'a figure'} is not finite; nothing was written"
        ) from None


@contextmanager
def _progress(show: bool) -> Iterator[Callable[[int, int, float], None] | None]:
    """A rich progress line on stderr (simulated time, completed requests, events), or None."""
    if not show:
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = progress.add_task("replay starting")

    def update(events: int, completed: int, now_ms: float) -> None:
        progress.update(
            task,
            description=(
                f"replay: t={now_ms / 1000.0:.1f} s simulated, {completed} requests done, "
                f"{events} events"
            ),
        )

    with progress:
        yield update


def render_text(summary: RunSummary, *written: Path) -> str:
    """The headline figures of a summary."""

    def ms(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f} ms"

    lines = [
        f"completed requests: {summary.completed_requests} of {summary.total_requests}",
        f"duration: {summary.duration_ms / 1000.0:.3f} s of simulated time",
        f"throughput: {summary.request_throughput_rps:.3f} req/s, "
        f"{summary.output_throughput_tok_s:.1f} output tok/s",
        f"TTFT: mean {ms(summary.ttft.mean_ms)}, p99 {ms(summary.ttft.p99_ms)}",
        f"TPOT: mean {ms(summary.tpot.mean_ms)}, p99 {ms(summary.tpot.p99_ms)}",
        f"ITL: mean {ms(summary.itl.mean_ms)}; E2E: mean {ms(summary.e2e_latency.mean_ms)}",
    ]
    speculation = summary.speculation
    if speculation.sd_rounds and speculation.mean_acceptance_length is not None:
        lines.append(
            f"SD: {speculation.sd_rounds} rounds, mean acceptance length "
            f"{speculation.mean_acceptance_length:.4f}"
        )
    for reason, count in sorted(summary.not_completed_reasons.items()):
        lines.append(f"not completed ({count}): {reason}")
    sketch = summary.sketched_percentiles
    if sketch is not None:
        lines.append(
            f"percentiles of {', '.join(sketch.sketched)}: from a sketch, within "
            f"{sketch.relative_accuracy:.1%} of exact (over {sketch.exact_limit} samples)"
        )
    if summary.arrival_order is not None:
        lines.append(f"arrival order: {summary.arrival_order}")
    paths = [str(path) for path in written]
    lines.append(f"wrote {', '.join(paths[:-1])} and {paths[-1]}")
    return "\n".join(lines) + "\n"
