"""Why a served engine step can cost more than the same step in the grid: each candidate
measured on a real vLLM CPU engine, in one engine instance, as the difference between a step
that has the candidate and the same step that has not
(``.tox/engine/bin/python -m qualification.engine.probe_served_steps [--shape NAME]``; needs
vLLM, prints one line per candidate; a benchmark, not a test).

* **primitive creation on decode**: a decode step of B requests right after 40 prefill steps
  at 40 new token counts (vLLM's oneDNN cache keeps 32 per weight shape, so B's primitives were
  evicted: ``csrc/cpu/dnnl_helper.cpp``, ``MatMulPrimitiveHandler::get_matmul_cache``) against
  the same first decode step after a prefill that evicted nothing;
* **waiting requests**: decode steps of ``max_num_seqs`` running requests with 0 and with 32
  requests waiting (the scheduler walks its waiting queue every step:
  ``vllm/v1/core/sched/scheduler.py``, ``Scheduler.schedule``);
* **batch changes**: a decode step in which a request finishes (its output is processed and its
  state freed: ``Scheduler.update_from_output``, ``GPUModelRunner._update_states``) against a
  decode step of the same batch in which none does;
* **mixed contexts**: a decode step of 4 requests at contexts 16, 16, 16, 208 against one at
  64 each (the same past KV in total: what the table's per-request mean assumes);
* **steps since the prefill** (``--long``): the grid times a batch's decode steps right after
  its prefill (the recorder's ``record_grid``); a served request decodes for many steps. The
  2nd-4th decode steps of B requests against their 40th-42nd, less what the 40 tokens of
  context added cost (the same B at the later context, 2nd-4th steps after its own prefill).

* **after an idle spell** (``--idle MS``, paired): a prompt's prefill step after the engine
  sat idle MS ms against the same step right after other steps (a served prefill-only step
  starts an idle engine; the grid's follow one another); ``--out`` writes the wake model a step
  table carries (``grid/wake_model.json``, ``aisim.fpm.load_wake_cost``), ``--pool`` pools it
  with an earlier run;
* **admission** (``--admit``): the wall time of adding one request to a busy engine
  (``LLMEngine.add_request``, on the engine's thread between steps); ``--out`` writes the
  admission model a step table carries (``grid/admit_model.json``,
  ``aisim.fpm.load_admit_cost``);
* **prompt attention** (``--chunks``, paired): a chunk continuing a prompt against the same
  chunk as a fresh prompt, and two prompts of unequal length against two of equal length.

Every figure is the median over ``--reps`` repetitions of wall time (ms) with one OpenMP thread;
the host load is printed before and after. Run it on a quiet host.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def _load() -> float:
    return float(os.getloadavg()[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qualification.engine.probe_served_steps")
    parser.add_argument("--shape", default="llama-12x384")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--block-size", type=int, default=128)
    parser.add_argument(
        "--draft-shape",
        default=None,
        help="SD on (draft_model, d = 3) with this draft: only the prefill-step candidate runs",
    )
    parser.add_argument(
        "--long",
        action="store_true",
        help="only the steps-since-the-prefill candidate (decode steps 2-4 against 40-42)",
    )
    parser.add_argument(
        "--mixed", action="store_true", help="only the mixed-contexts candidate (paired)"
    )
    parser.add_argument(
        "--idle",
        type=float,
        default=None,
        metavar="MS",
        help="only the after-idle candidate (paired): a prompt's prefill step and first decode "
        "steps after the engine sat idle MS ms against the same steps right after other steps",
    )
    parser.add_argument(
        "--admit",
        action="store_true",
        help="only the admission candidate: the wall time of adding one request to a busy "
        "engine (LLMEngine.add_request, on the engine's thread between steps); --out writes "
        "it as an admission model (schema aisim.engine_admit v1)",
    )
    parser.add_argument(
        "--ends",
        action="store_true",
        help="only the prefill step of a request that ends with its first token (the grid's) "
        "against one that goes on decoding (paired); the default candidate with SD on",
    )
    parser.add_argument(
        "--chunks",
        action="store_true",
        help="only the prompt-attention candidates (paired): a chunk continuing a prompt "
        "against the same chunk as a fresh prompt, and two prompts of unequal length against "
        "two of equal length at the same tokens",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="with --idle: write the wake model (schema aisim.engine_wake v1) to this file",
    )
    parser.add_argument(
        "--pool",
        type=Path,
        default=None,
        help="with --idle and --out: pool this run's pairs with those of this earlier wake "
        "model file (another run of the same probe at another minute)",
    )
    parser.add_argument("--overwrite", action="store_true")
    parser.add_argument("--note", default="", help="with --out: a host note kept in the file")
    args = parser.parse_args(argv)
    if args.out is not None and args.out.exists() and not args.overwrite:
        print(f"error: {args.out}: exists (pass --overwrite)", file=sys.stderr)
        return 2
    from qualification.engine._vllm import set_process_environment

    set_process_environment()
    try:
        import vllm  # noqa: F401
    except ImportError as exc:
        print(f"error: needs vLLM (tox -e engine): {exc}", file=sys.stderr)
        return 2
    from aisim.files import atomic_write_text, canonical_json
    from qualification.engine._shapes import shape_config
    from qualification.engine._vllm import Clock, Engine, EngineOptions

    folder = Path(tempfile.mkdtemp(prefix="probe-served-"))
    config = shape_config(args.shape, "--shape")
    atomic_write_text(folder / "config.json", canonical_json(config))
    draft_dir = None
    if args.draft_shape is not None:
        draft = shape_config(args.draft_shape, "--draft-shape")
        draft["vocab_size"] = config["vocab_size"]
        draft_dir = folder / "draft"
        atomic_write_text(draft_dir / "config.json", canonical_json(draft))
    engine = Engine(
        EngineOptions(
            model_dir=folder,
            draft_dir=draft_dir,
            speculative_method=None if draft_dir is None else "draft_model",
            num_speculative_tokens=0 if draft_dir is None else 3,
            block_size=args.block_size,
            max_num_seqs=8,
            max_num_batched_tokens=512,
            kv_cache_memory_bytes=256 * 1024 * 1024,
            max_model_len=1024,
            prefix_caching=False,
            chunked_prefill=True,
            seed=0,
            served_model_name=args.shape,
        )
    )
    vocab = int(config["vocab_size"])
    rng = np.random.default_rng(0)
    clock = Clock()
    clock.start()
    counter = 0

    def prompt(length: int) -> list[int]:
        return [int(t) for t in rng.integers(10, vocab, size=length)]

    def add(length: int, output: int) -> str:
        nonlocal counter
        counter += 1
        rid = f"p{counter}"
        engine.add(rid, prompt(length), output)
        return rid

    def steps(until: Callable[[], bool] | None = None) -> list[Any]:
        out = []
        while engine.has_work() and (until is None or not until()):
            record, _ = engine.step(clock)
            if record is not None:
                out.append(record)
        return out

    def wall(record: Any) -> float:
        return float(record.end_ms - record.start_ms)

    print(f"load before: {_load():.2f}; shape {args.shape}, block {args.block_size}")
    for _ in range(3):  # warm the engine
        add(96, 16)
    steps()

    if args.idle is not None:
        load_before = _load()
        found = _after_idle(add, steps, wall, args.reps, args.idle)
        print(f"load after: {_load():.2f}")
        if args.out is not None:
            _write_wake(args, found, load_before)
        return 0
    if args.admit:
        load_before = _load()
        found = _admission(engine, clock, prompt, add, steps, wall, args.reps)
        print(f"load after: {_load():.2f}")
        if args.out is not None:
            _write_admit(args, found, load_before)
        return 0
    if args.chunks:
        _prompt_attention(engine, clock, add, steps, wall, args.reps)
        print(f"load after: {_load():.2f}")
        return 0
    if args.mixed:
        _mixed_contexts(add, steps, wall, args.reps)
        print(f"load after: {_load():.2f}")
        return 0
    if args.ends or (draft_dir is not None and not args.long):
        return _prefill_that_continues(engine, clock, add, args.reps)
    if args.long:
        per_round = 1 if draft_dir is None else 4  # tokens a decode step (SD round) emits
        for batch in (1, 4):
            early: list[float] = []
            late: list[float] = []
            control: list[float] = []
            for rep in range(args.reps):
                for _ in range(batch):
                    add(160 + rep, 48 * per_round)
                decodes = [r for r in steps() if r.num_prefill_requests == 0]
                early.append(statistics.median(wall(r) for r in decodes[1:4]))
                late.append(statistics.median(wall(r) for r in decodes[39:42]))
                # The same batch at the later context, right after its own prefill.
                for _ in range(batch):
                    add(160 + 40 * per_round + rep, 8 * per_round)
                decodes = [r for r in steps() if r.num_prefill_requests == 0]
                control.append(statistics.median(wall(r) for r in decodes[1:4]))
            print(
                f"steps since the prefill (B={batch}, ~160 tokens): decode steps 2-4 "
                f"{statistics.median(early):.2f} ms, 40-42 {statistics.median(late):.2f} ms, "
                f"the later context right after its prefill {statistics.median(control):.2f} ms; "
                f"late / control {statistics.median(late) / statistics.median(control):.3f}"
            )
        print(f"load after: {_load():.2f}")
        return 0

    # 1. primitive creation on a decode step after eviction.
    evicted: list[float] = []
    kept: list[float] = []
    base: list[float] = []
    fresh_lengths = iter(range(300, 500, 1))
    for rep in range(args.reps):
        for evict in (False, True):
            if evict:
                for _ in range(40):  # 40 prefill steps at 40 new token counts
                    add(next(fresh_lengths), 1)
                    steps()
            for _ in range(4):
                add(64 + rep, 6)
            records = steps()
            decodes = [r for r in records if r.num_prefill_requests == 0]
            (evicted if evict else kept).append(wall(decodes[0]) - wall(decodes[2]))
            base.append(wall(decodes[2]))
    print(
        "primitive creation on decode (B=4): first decode step - third, after 40 new counts "
        f"{statistics.median(evicted):+.2f} ms, without {statistics.median(kept):+.2f} ms, "
        f"difference {statistics.median(evicted) - statistics.median(kept):+.2f} ms; a cached "
        f"decode step {statistics.median(base):.2f} ms"
    )

    # 2. waiting requests.
    results: dict[int, list[float]] = {}
    for _ in range(args.reps):
        for waiting in (0, 32):
            running = [add(64, 40) for _ in range(8)]
            steps_until_decoding(engine, clock, running)
            for _ in range(waiting):
                add(64, 1)
            sample = []
            for _ in range(6):
                record, _ = engine.step(clock)
                if record is not None and record.num_prefill_requests == 0:
                    sample.append(wall(record))
            results.setdefault(waiting, []).append(
                statistics.median(sample) if sample else float("nan")
            )
            steps()
    idle = statistics.median(results[0])
    busy = statistics.median(results[32])
    print(
        f"waiting requests (B=8 decoding): 0 waiting {idle:.2f} ms, 32 waiting {busy:.2f} ms, "
        f"difference {busy - idle:+.2f} ms ({(busy - idle) / 32 * 1000:.1f} us per waiting request)"
    )

    # 3. a request finishing in the step.
    finishing: list[float] = []
    same: list[float] = []
    for _ in range(args.reps):
        ids = [add(64, 12 if index else 8) for index in range(4)]
        records = [r for r in steps() if r.num_prefill_requests == 0 and r.num_decode_requests == 4]
        del ids
        # outputs: one request 8 tokens (its last decode step is the 7th), others 12.
        finishing.append(wall(records[6]))
        same.append(statistics.median([wall(r) for r in records[3:6]]))
    print(
        f"(per repetition: finishing {[round(v, 1) for v in finishing]}, same "
        f"{[round(v, 1) for v in same]})"
    )
    print(
        "a request finishing in a decode step (B=4): "
        f"{statistics.median(finishing):.2f} ms vs {statistics.median(same):.2f} ms, difference "
        f"{statistics.median(finishing) - statistics.median(same):+.2f} ms"
    )

    # 4. mixed contexts at the same total past KV.
    _mixed_contexts(add, steps, wall, args.reps)
    print(f"load after: {_load():.2f}")
    return 0


def _admission(
    engine: Any,
    clock: Any,
    prompt: Callable[[int], list[int]],
    add: Callable[[int, int], str],
    steps: Callable[[], list[Any]],
    wall: Callable[[Any], float],
    reps: int,
) -> dict[str, Any]:
    """What admitting a request costs the engine's thread: with one request decoding (a busy
    engine), the wall time of ``LLMEngine.add_request`` for one more (its prompt built before
    the clock starts; ``vllm/v1/engine/llm_engine.py``, ``LLMEngine.add_request``:
    ``InputProcessor.process_inputs``, then the engine's ``Request`` with its block hashes,
    ``EngineCore.preprocess_add_request``), prompts of 32 and 200 tokens alternating, three
    steps after each; then, for the host's speed at the probe, the prefill steps of one fresh
    32- and 200-token prompt run right after other steps (as the wake probe's reference)."""
    import time

    engine.add("admit-runner", prompt(64), 20 * reps + 64)
    for _ in range(3):
        engine.step(clock)
    times: list[float] = []
    for rep in range(reps):
        tokens = prompt(32 if rep % 2 == 0 else 200)
        start = time.perf_counter()
        engine.add(f"admit-{rep}", tokens, 4)
        times.append((time.perf_counter() - start) * 1000.0)
        for _ in range(3):
            engine.step(clock)
    steps()
    reference = []
    for length in (32, 200):
        add(length, 2)  # the count's primitives
        steps()
        measured = []
        for _ in range(max(3, reps // 4)):
            add(48, 2)
            steps()
            add(length, 2)
            measured.append(wall(steps()[0]))
        reference.append([1, length, round(statistics.median(measured), 4)])
    quartiles = statistics.quantiles(times, n=4) if len(times) > 1 else [math.nan] * 3
    print(
        f"admitting a request to a busy engine: median {statistics.median(times):.3f} ms "
        f"(quartiles {quartiles[0]:.3f}, {quartiles[2]:.3f}; {len(times)} adds); reference "
        f"prefill steps {reference}"
    )
    return {
        "admit_ms": round(statistics.median(times), 4),
        "add_ms": [round(value, 4) for value in times],
        "reference_prefill": reference,
    }


def _write_admit(args: argparse.Namespace, found: dict[str, Any], load_before: float) -> None:
    """The admission probe as an admission model file (``aisim.fpm.load_admit_cost``)."""
    import datetime

    from aisim.files import atomic_write_text, canonical_json
    from aisim.fpm import ADMIT_SCHEMA

    document: dict[str, Any] = {
        "schema": {"name": ADMIT_SCHEMA, "version": 1},
        "terms": {"admit_ms": found["admit_ms"], "reference_prefill": found["reference_prefill"]},
        "probe": {
            "command": "python -m qualification.engine.probe_served_steps "
            + " ".join(sys.argv[1:] if len(sys.argv) > 1 else []),
            "recorded_utc": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "load_before": round(load_before, 2),
            "load_after": round(_load(), 2),
            "shape": args.shape,
            "draft_shape": args.draft_shape,
            "block_size": args.block_size,
            "add_ms": found["add_ms"],
            "host_note": args.note,
        },
        "source": f"probe_served_steps --admit ({args.shape}, {len(found['add_ms'])} adds)",
    }
    atomic_write_text(args.out, canonical_json(document), overwrite=args.overwrite)
    print(f"wrote {args.out}: admit {found['admit_ms']} ms")


def _write_wake(args: argparse.Namespace, found: dict[str, Any], load_before: float) -> None:
    """The after-idle probe as a wake model file (``aisim.fpm.load_wake_cost`` reads it); with
    ``--pool`` this run's pairs join an earlier run's and the terms are taken over all."""
    import datetime
    import json

    from aisim.files import atomic_write_text, canonical_json
    from aisim.fpm import WAKE_SCHEMA

    run = {
        "command": "python -m qualification.engine.probe_served_steps "
        + " ".join(sys.argv[1:] if len(sys.argv) > 1 else []),
        "recorded_utc": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "load_before": round(load_before, 2),
        "load_after": round(_load(), 2),
        "pairs": found["pairs"],
    }
    runs = [run]
    differences = list(found["prefill_differences_ms"])
    variants = {key: list(value) for key, value in found["variants"].items()}
    if args.pool is not None:
        earlier = json.loads(args.pool.read_text(encoding="utf-8"))["probe"]
        runs = list(earlier["runs"]) + runs
        differences = list(earlier["prefill_differences_ms"]) + differences
        for key in variants:
            variants[key] = list(earlier["variants"][key]) + variants[key]
    reference = [
        [
            1,
            length,
            round(statistics.median(row[1] for row in variants["busy"] if row[0] == length), 4),
        ]
        for length in sorted({int(row[0]) for row in variants["busy"]})
    ]
    wake_ms = round(max(0.0, statistics.median(differences)), 4)
    document: dict[str, Any] = {
        "schema": {"name": WAKE_SCHEMA, "version": 1},
        "terms": {
            "wake_ms": wake_ms,
            "reference_prefill": reference,
        },
        "probe": {
            "shape": args.shape,
            "draft_shape": args.draft_shape,
            "block_size": args.block_size,
            "idle_ms": found["idle_ms"],
            "runs": runs,
            "pairs": len(differences),
            "prefill_differences_ms": differences,
            "variants": variants,
            "variant_columns": [
                "prompt_tokens",
                "prefill_wall_ms",
                "prefill_cpu_ms",
                "decode1_wall_ms",
                "decode2_wall_ms",
                "decode3_wall_ms",
            ],
            "host_note": args.note,
        },
        "source": f"probe_served_steps --idle {found['idle_ms']:g} ({args.shape}, "
        f"{len(differences)} pairs)",
    }
    atomic_write_text(args.out, canonical_json(document), overwrite=args.overwrite)
    print(f"wrote {args.out}: wake {wake_ms} ms over {len(differences)} pairs")


def _prompt_attention(
    engine: Any,
    clock: Any,
    add: Callable[[int, int], str],
    steps: Callable[[], list[Any]],
    wall: Callable[[Any], float],
    reps: int,
) -> None:
    """What the prefill line's tokens^2 / requests term does not see, paired (each repetition
    runs every variant, back to back, so a drift of the host's speed falls on all):

    * a chunk continuing a prompt: a prompt of ``budget + 188`` tokens runs as a chunk of
      ``budget`` tokens, then one of 188 that attends to the ``budget`` before it (vLLM's CPU
      attention reads each query tile's visible KV: ``csrc/cpu/cpu_attn_impl.hpp``,
      ``AttentionScheduler::schedule``), against a fresh prompt of 188 tokens;
    * two prompts of 32 and 224 tokens in one step against two of 128 (the same 256 tokens;
      the causal work per request grows with its length squared: 32^2 + 224^2 = 51200 against
      2 x 128^2 = 32768 query x key pairs).

    The step token counts repeat (512, 188, 256), so no variant creates primitives after the
    first repetition (a warm-up repetition runs first)."""
    budget = int(engine.options.max_num_batched_tokens)
    found: dict[str, list[float]] = {"continued": [], "fresh": [], "unequal": [], "equal": []}
    for rep in range(reps + 1):
        add(budget + 188, 2)
        continued = [r for r in steps() if r.num_prefill_requests == 1 and r.prefill_tokens == 188]
        add(188, 2)
        fresh = [r for r in steps() if r.num_prefill_requests == 1 and r.prefill_tokens == 188]
        add(32, 2)
        add(224, 2)
        unequal = [r for r in steps() if r.num_prefill_requests == 2]
        add(128, 2)
        add(128, 2)
        equal = [r for r in steps() if r.num_prefill_requests == 2]
        if rep == 0 or not (continued and fresh and unequal and equal):
            continue
        found["continued"].append(wall(continued[0]))
        found["fresh"].append(wall(fresh[0]))
        found["unequal"].append(wall(unequal[0]))
        found["equal"].append(wall(equal[0]))
    for name, (a, b) in {
        f"a 188-token chunk after {budget} tokens of its prompt against a fresh 188-token prompt": (
            "continued",
            "fresh",
        ),
        "prompts of 32 + 224 tokens in one step against 128 + 128": ("unequal", "equal"),
    }.items():
        differences = [x - y for x, y in zip(found[a], found[b], strict=True)]
        if not differences:
            print(f"{name}: no pairs")
            continue
        quartiles = (
            statistics.quantiles(differences, n=4) if len(differences) > 1 else [math.nan] * 3
        )
        print(
            f"{name}: {statistics.median(found[b]):.2f} -> {statistics.median(found[a]):.2f} ms, "
            f"per pair {statistics.median(differences):+.2f} ms ({quartiles[0]:+.2f}, "
            f"{quartiles[2]:+.2f}; dearer in {sum(d > 0 for d in differences)} of "
            f"{len(differences)})"
        )


def _mixed_contexts(
    add: Callable[[int, int], str],
    steps: Callable[[], list[Any]],
    wall: Callable[[Any], float],
    reps: int,
) -> None:
    """Decode steps of 4 requests at contexts 64 each against 16, 16, 16, 208 (the same past
    KV), alternated so a drift of the host's speed falls on both; the median of the per-pair
    differences and their quartiles (the pairs are minutes apart at most, seconds apart here)."""
    uniform: list[float] = []
    mixed: list[float] = []
    for _ in range(reps):
        for lengths, sink in (((64, 64, 64, 64), uniform), ((16, 16, 16, 208), mixed)):
            for length in lengths:
                add(length, 6)
            records = [
                r for r in steps() if r.num_prefill_requests == 0 and r.num_decode_requests == 4
            ]
            sink.append(statistics.median([wall(r) for r in records[1:4]]))
    differences = [m - u for m, u in zip(mixed, uniform, strict=True)]
    quartiles = statistics.quantiles(differences, n=4) if len(differences) > 1 else [math.nan] * 3
    print(
        "mixed contexts (B=4, 256 KV): uniform 64 each "
        f"{statistics.median(uniform):.2f} ms, 16/16/16/208 {statistics.median(mixed):.2f} ms, "
        f"difference {statistics.median(mixed) - statistics.median(uniform):+.2f} ms; per pair "
        f"median {statistics.median(differences):+.2f} ms (quartiles {quartiles[0]:+.2f}, "
        f"{quartiles[2]:+.2f}; mixed dearer in {sum(d > 0 for d in differences)} of {reps})"
    )


def _after_idle(
    add: Callable[[int, int], str],
    steps: Callable[[], list[Any]],
    wall: Callable[[Any], float],
    reps: int,
    idle_ms: float,
) -> dict[str, Any]:
    """A served prompt's prefill step usually starts an idle engine (a pure prefill step runs
    only when nothing else is running; an idle engine core blocks on its input queue:
    ``vllm/v1/engine/core.py``, ``EngineCoreProc._process_input_queue``); the grid's prefill
    steps follow other steps at once. Per repetition both variants, in alternating order so a
    drift of the host's speed falls on both: a short request's steps, then (idle) ``idle_ms``
    of sleep or (busy) none, then one request of 32 or 200 prompt tokens (alternating; the same
    counts every time, so no primitive creation) decoding 24 tokens. Per variant the prefill
    step's wall and process CPU time and the first three decode steps' wall time; per pair the
    differences (idle - busy). Returns the figures the wake model needs
    (``aisim.fpm.load_wake_cost``): the median per-pair prefill difference over all pairs and,
    per prompt length, the busy prefill step's median (the host's speed at the probe, to be
    compared with a step table's price of the same step)."""
    import time

    rows: dict[str, list[tuple[int, float, float, float, float, float]]] = {"idle": [], "busy": []}
    for length in (32, 200):  # create the primitives of both counts before timing
        add(length, 24)
        steps()
    for rep in range(reps):
        length = 32 if rep % 2 == 0 else 200
        order = ("idle", "busy") if rep % 4 < 2 else ("busy", "idle")
        for variant in order:
            add(48, 4)
            steps()
            if variant == "idle":
                time.sleep(idle_ms / 1000.0)
            add(length, 24)
            records = steps()
            prefill, decodes = records[0], records[1:4]
            rows[variant].append(
                (
                    length,
                    wall(prefill),
                    float(prefill.cpu_ms),
                    wall(decodes[0]),
                    wall(decodes[1]),
                    wall(decodes[2]),
                )
            )
    reference = []
    for length in (32, 200):
        idle = [row for row in rows["idle"] if row[0] == length]
        busy = [row for row in rows["busy"] if row[0] == length]
        if not idle:
            continue
        reference.append([1, length, round(statistics.median(b[1] for b in busy), 4)])
        columns = ("prefill wall", "prefill CPU", "decode 1", "decode 2", "decode 3")
        parts = []
        for column, name in enumerate(columns, start=1):
            differences = [a[column] - b[column] for a, b in zip(idle, busy, strict=True)]
            quartiles = (
                statistics.quantiles(differences, n=4) if len(differences) > 1 else [math.nan] * 3
            )
            parts.append(
                f"{name} {statistics.median(b[column] for b in busy):.2f} -> "
                f"{statistics.median(a[column] for a in idle):.2f} ms, per pair "
                f"{statistics.median(differences):+.2f} ({quartiles[0]:+.2f}, "
                f"{quartiles[2]:+.2f}; dearer in {sum(d > 0 for d in differences)} of "
                f"{len(differences)})"
            )
        print(
            f"after {idle_ms:.0f} ms idle, prompt {length} tokens (busy -> idle): "
            + "; ".join(parts)
        )
    pairs = [round(a[1] - b[1], 4) for a, b in zip(rows["idle"], rows["busy"], strict=True)]
    print(
        f"after {idle_ms:.0f} ms idle, all {len(pairs)} pairs: prefill wall per pair median "
        f"{statistics.median(pairs):+.2f} ms (dearer in {sum(d > 0 for d in pairs)})"
    )
    return {
        "idle_ms": idle_ms,
        "pairs": len(pairs),
        "prefill_differences_ms": pairs,
        "wake_ms": round(max(0.0, statistics.median(pairs)), 4),
        "reference_prefill": reference,
        "variants": {
            variant: [[round(value, 4) for value in row] for row in values]
            for variant, values in rows.items()
        },
    }


def _prefill_that_continues(
    engine: Any, clock: Any, add: Callable[[int, int], str], reps: int
) -> int:
    """The prefill step of one 128-token request that ends with its first token (as the grid's
    prefill points) against one that goes on decoding (as a served request), in wall and
    process CPU time; paired (the two alternate in order per repetition) at one prompt length
    run once before timing, so neither creates primitives."""

    def first_step(output: int) -> Any:
        add(128, output)
        first = None
        while engine.has_work():
            record, _ = engine.step(clock)
            if first is None and record is not None:
                first = record
        assert first is not None and first.num_prefill_requests == 1
        return first

    first_step(8)  # the count's primitives
    results: dict[int, list[tuple[float, float]]] = {1: [], 8: []}
    for rep in range(reps):
        for output in (1, 8) if rep % 2 == 0 else (8, 1):
            first = first_step(output)
            results[output].append((first.end_ms - first.start_ms, first.cpu_ms))
    (ends_wall, ends_cpu), (goes_wall, goes_cpu) = (
        (statistics.median(w for w, _ in results[n]), statistics.median(c for _, c in results[n]))
        for n in (1, 8)
    )
    differences = [g[1] - e[1] for g, e in zip(results[8], results[1], strict=True)]
    print(
        "prefill step (1 request, 128 tokens): ends with its first token "
        f"{ends_wall:.2f} ms wall / {ends_cpu:.2f} ms CPU, goes on decoding {goes_wall:.2f} / "
        f"{goes_cpu:.2f} ms; per pair (goes on - ends) {statistics.median(differences):+.2f} ms "
        f"CPU (dearer in {sum(d > 0 for d in differences)} of {len(differences)})"
    )
    print(f"load after: {_load():.2f}")
    return 0


def steps_until_decoding(engine: Any, clock: Any, ids: list[str]) -> int:
    """Step until every one of ``ids`` decodes (their prefill done); returns the steps run."""
    count = 0
    while True:
        record, _ = engine.step(clock)
        count += 1
        if (
            record is not None
            and record.num_prefill_requests == 0
            and record.num_decode_requests == len(ids)
        ):
            return count
        if count > 1000:
            raise RuntimeError("probe: requests never all decoded")


if __name__ == "__main__":
    sys.exit(main())
