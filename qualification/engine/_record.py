"""Record a real engine: a step table (grid) and served traces, written as verified tables.

``record_grid`` times engine steps at a grid of decode batches x contexts, prefill lengths and (SD
on) whole SD rounds; ``record_served`` adds the requests of a seeded trace when the wall clock
reaches their arrivals and records every step and every token. Both write through
``qualification.datasets.write_table`` (parquet + hashed JSON sidecar, atomic, no clobbering).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import statistics
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aisim.files import atomic_write_text
from qualification.datasets import STP_POINTS, write_table
from qualification.engine._prometheus import counter_delta
from qualification.engine._schema import (
    GRID_DIR,
    GRID_STEPS,
    METRICS_FILE,
    SERVED_REQUESTS,
    SERVED_STEPS,
)
from qualification.engine._trace import TraceRequest
from qualification.engine._vllm import Clock, Engine, StepRecord

EVIDENCE_TYPE = "engine-measurement"
Progress = Callable[[str], None]
#: Extra decode rounds given to every grid request under ``ngram``: vLLM's n-gram proposer
#: drafts nothing until the context's suffix matches an earlier n-gram
#: (``vllm/v1/spec_decode/ngram_proposer.py``), which with dummy weights takes a few generated
#: tokens, and an SD round is timed only once every request in the batch drafted d tokens.
#: The steps before, where no request drafted, are timed as plain decode steps (phase
#: ``decode``): replay prices its undrafted rounds with them.
NGRAM_SETTLE_ROUNDS = 12


@dataclass(frozen=True)
class GridSpec:
    batch_sizes: tuple[int, ...]
    contexts: tuple[int, ...]
    prefill_batches: tuple[int, ...]
    prefill_lengths: tuple[int, ...]
    repetitions: int
    warmup: int


def host_snapshot() -> dict[str, Any]:
    """CPU model, CPU count and the load average now (recorded before and after each part)."""
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu_model": model,
        "cpus": os.cpu_count(),
        "load_average": [round(value, 3) for value in os.getloadavg()],
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "cpu_affinity": sorted(os.sched_getaffinity(0)),
    }


def model_identity(directory: Path) -> dict[str, Any]:
    """A model folder's config.json (geometry) and its SHA-256."""
    data = (directory / "config.json").read_bytes()
    return {
        "config_sha256": hashlib.sha256(data).hexdigest(),
        "config": json.loads(data),
    }


def _prompt(rng: Any, length: int, vocab: int) -> list[int]:
    return [int(token) for token in rng.integers(10, vocab, size=length)]


def new_token_count_length(batch: int, length: int, budget: int, seen: Container[int]) -> int:
    """The per-request prompt length nearest ``length`` (the shorter first on a tie) whose step
    token count ``batch x length`` the engine has never scheduled (``seen``) and that fits the
    token ``budget``; ``length`` itself when every candidate was seen.

    Why: vLLM's CPU build runs every linear layer through oneDNN, which creates a matmul
    primitive per step token count and keeps 32 per weight shape
    (``vllm/model_executor/layers/utils.py``, ``dispatch_cpu_unquantized_gemm``:
    ``create_onednn_mm(weight.t(), 32)``; ``csrc/cpu/dnnl_helper.cpp``,
    ``MatMulPrimitiveHandler::get_matmul_cache``). A served trace's prompts have lengths the
    engine has rarely scheduled, so its prefill steps pay that creation; prefill points timed at
    the same token count again and again did not (docs/replay.md, "Against a real engine")."""
    limit = budget // batch
    for offset in range(max(length, limit) + 1):
        for candidate in (length,) if offset == 0 else (length - offset, length + offset):
            if 1 <= candidate <= limit and batch * candidate not in seen:
                return candidate
    return length


def _run_until_idle(
    engine: Engine, clock: Clock, on_step: Callable[[StepRecord], None] | None = None
) -> None:
    guard = 0
    while engine.has_work():
        record, _ = engine.step(clock)
        if record is not None and on_step is not None:
            on_step(record)
        guard += 1
        if guard > 100_000:
            raise RuntimeError("record engine: the engine did not finish (100000 steps)")


def record_grid(
    engine: Engine,
    spec: GridSpec,
    out: Path,
    common: dict[str, Any],
    *,
    seed: int,
    vocab: int,
    overwrite: bool,
    progress: Progress,
    between_passes: Callable[[int], None] | None = None,
    acceptance_sample: Sequence[TraceRequest] = (),
) -> Path:
    """Time the grid; write ``out/grid/`` (grid steps, STP points, measured SD rounds).

    ``between_passes(rep)`` runs after every grid pass but the last (the CLI serves the trace
    there, so the step table's repetitions and the served runs share the same minutes: the same
    engine step's cost moves by 10-30 % between minutes even on an idle shared host). The
    ``metrics.prom`` written is the engine's counters over ``acceptance_sample`` only (requests
    like the served trace's, another seed, served back to back), so the grid's acceptance does
    not depend on the grid's own request lengths; without a sample, over the grid passes."""
    import numpy as np

    rng = np.random.default_rng(seed)
    clock = Clock()
    draft_length = engine.options.num_speculative_tokens if engine.options.speculative_method else 0
    phase = "sd" if draft_length else "decode"
    rows: dict[str, list[Any]] = {name: [] for name in GRID_STEPS.column_names}
    host_before = host_snapshot()
    metrics_before = engine.prometheus_text()
    paused: list[tuple[str, str]] = []
    counter = 0
    drafted_only = engine.options.speculative_method == "ngram"

    def add_row(
        point: str, batch: int, context: int, rep: int, step: StepRecord, kind: str, warmup: bool
    ) -> None:
        accepted = sum(step.emitted.values()) - step.num_decode_requests if kind == "sd" else 0
        values = {
            "phase": kind,
            "point_id": point,
            "batch_size": batch,
            "context_tokens": context,
            "total_kv_tokens": step.decode_kv_tokens,
            "scheduled_tokens": step.scheduled_tokens,
            "num_draft_tokens": draft_length if kind == "sd" else 0,
            "repetition": rep,
            "warmup": warmup,
            "start_ms": step.start_ms,
            "wall_ms": step.end_ms - step.start_ms,
            "cpu_ms": step.cpu_ms,
            "accepted_tokens": max(accepted, 0),
        }
        for name, value in values.items():
            rows[name].append(value)

    def decode_point(batch: int, context: int, rep: int) -> None:
        nonlocal counter
        point = f"{phase}-b{batch}-c{context}" + (f"-d{draft_length}" if draft_length else "")
        # Chunked prefill may decode early requests while later ones still prefill: give every
        # request enough output to still be decoding when the whole batch is.
        budget = engine.options.max_num_batched_tokens
        prefill_steps = -(-batch * context // budget) + 1
        settle = NGRAM_SETTLE_ROUNDS if drafted_only else 0
        output = 1 + (spec.warmup + 2 + prefill_steps + settle) * (draft_length + 1)
        for _ in range(batch):
            counter += 1
            engine.add(f"grid-{counter}", _prompt(rng, context, vocab), output)
        seen = 0
        seen_plain = 0
        last: dict[str, int] = {}
        while engine.has_work():
            record, state = engine.step(clock)
            if record is None:
                continue
            record.emitted = {rid: n - last.get(rid, 0) for rid, (n, _) in state.items()}
            last.update({rid: n for rid, (n, _) in state.items()})
            full = record.num_prefill_requests == 0 and record.num_decode_requests == batch
            if drafted_only and full and record.draft_tokens == 0:
                # No request drafted yet: a plain decode step of the same engine.
                if seen_plain <= spec.warmup:
                    plain = f"decode-b{batch}-c{context}"
                    add_row(plain, batch, context, rep, record, "decode", seen_plain < spec.warmup)
                    seen_plain += 1
                continue
            if drafted_only:  # an SD round of d drafts per request, not an undrafted step
                full = full and record.draft_tokens == batch * draft_length
            if full and seen <= spec.warmup:
                add_row(point, batch, context, rep, record, phase, seen < spec.warmup)
                seen += 1
        engine.reset_prefix_cache()

    def prefill_point(batch: int, nominal: int, rep: int, warmup: bool) -> None:
        nonlocal counter
        # At a step token count new to the engine, as a served prompt's prefill mostly is.
        length = new_token_count_length(
            batch, nominal, engine.options.max_num_batched_tokens, engine.token_counts_seen
        )
        for _ in range(batch):
            counter += 1
            engine.add(f"grid-{counter}", _prompt(rng, length, vocab), 1)
        first: list[StepRecord] = []

        def keep(step: StepRecord) -> None:
            if not first:
                first.append(step)

        _run_until_idle(engine, clock, keep)
        step = first[0]
        if step.num_prefill_requests == batch and step.prefill_tokens == batch * length:
            add_row(f"prefill-b{batch}-c{nominal}", batch, nominal, rep, step, "prefill", warmup)
        engine.reset_prefix_cache()
        # The same step token count again (other prompts, so no prefix hit): the primitives
        # are cached now. The difference is what a served step at a new count pays
        # (aisim/fpm/_engine_steps.py, PrimitiveCache; the step model's creation cost).
        for _ in range(batch):
            counter += 1
            engine.add(f"grid-{counter}", _prompt(rng, length, vocab), 1)
        first.clear()
        _run_until_idle(engine, clock, keep)
        step = first[0]
        if step.num_prefill_requests == batch and step.prefill_tokens == batch * length:
            point = f"prefill-cached-b{batch}-c{nominal}"
            add_row(point, batch, nominal, rep, step, "prefill-cached", warmup)
        engine.reset_prefix_cache()

    # Repetitions are interleaved (every point once per pass), so a slow spell of the shared
    # host spreads over points instead of biasing one; each decode pass starts from a fresh
    # prefill, runs ``warmup`` flagged steps, then one timed step.
    for rep in range(spec.repetitions):
        progress(f"grid pass {rep + 1}/{spec.repetitions}")
        for batch in spec.batch_sizes:
            for context in spec.contexts:
                decode_point(batch, context, rep)
        for batch in spec.prefill_batches:
            for length in spec.prefill_lengths:
                if batch * length > engine.options.max_num_batched_tokens:
                    continue  # would be chunked over several steps: not one prefill step
                for _ in range(spec.warmup if rep == 0 else 0):
                    prefill_point(batch, length, rep, True)
                prefill_point(batch, length, rep, False)
        if between_passes is not None and rep < spec.repetitions - 1:
            pause = engine.prometheus_text()
            between_passes(rep)
            paused.append((pause, engine.prometheus_text()))
    metrics_after = engine.prometheus_text()
    if acceptance_sample:
        progress(f"acceptance sample: {len(acceptance_sample)} requests")
        metrics_before = engine.prometheus_text()
        paused = []
        for request in acceptance_sample:
            engine.add(f"sample-{request.request_id}", request.prompt, request.output_tokens)
        _run_until_idle(engine, clock)
        engine.reset_prefix_cache()
        metrics_after = engine.prometheus_text()
    grid_dir = out / GRID_DIR
    sidecar = {
        **common,
        "part": "grid",
        "grid": {
            "batch_sizes": list(spec.batch_sizes),
            "contexts": list(spec.contexts),
            "prefill_batches": list(spec.prefill_batches),
            "prefill_lengths": list(spec.prefill_lengths),
            "repetitions": spec.repetitions,
            "warmup": spec.warmup,
            "interleaved_with_served_runs": between_passes is not None,
            "prefill_token_counts": (
                "new to the engine at every prefill point (phase prefill), then the same "
                "count again, cached (phase prefill-cached)"
            ),
            "metrics": (
                f"engine counters over an acceptance sample of {len(acceptance_sample)} requests"
                if acceptance_sample
                else "engine counters over the grid passes"
            ),
        },
        "host": {**common.get("host", {}), "before": host_before, "after": host_snapshot()},
        "timing_metric": "wall",
    }
    write_table(grid_dir, GRID_STEPS, rows, sidecar, overwrite=overwrite)
    atomic_write_text(
        grid_dir / METRICS_FILE,
        counter_delta(metrics_before, metrics_after, excluded=paused),
        overwrite=overwrite,
    )
    _write_derived_tables(grid_dir, rows, sidecar, draft_length, overwrite=overwrite)
    return grid_dir


def _write_derived_tables(
    grid_dir: Path,
    rows: dict[str, list[Any]],
    sidecar: dict[str, Any],
    draft_length: int,
    *,
    overwrite: bool,
) -> None:
    """The decode points as ``aisim.stp_points`` and the SD rounds as ``aisim.measured_rounds``
    (medians of the timed, non-warm-up steps), so aisim's own table loaders read them."""
    from aisim.fpm import write_table_file

    groups: dict[tuple[str, int], list[tuple[int, float]]] = {}
    for index, phase in enumerate(rows["phase"]):
        if rows["warmup"][index] or phase.startswith("prefill"):
            continue
        key = (phase, int(rows["batch_size"][index]))
        point = rows["point_id"][index]
        groups.setdefault((point, key[1]), []).append(
            (int(rows["total_kv_tokens"][index]), float(rows["wall_ms"][index]))
        )
    stp: dict[str, list[Any]] = {name: [] for name in STP_POINTS.column_names}
    rounds: list[dict[str, Any]] = []
    for (point, batch), samples in sorted(groups.items()):
        kv_total = int(statistics.median_low(sorted(kv for kv, _ in samples)))
        reps = [wall for _, wall in samples]
        if point.startswith("sd-"):
            rounds.append(
                {
                    "batch_size": batch,
                    "total_kv_tokens": kv_total,
                    "latency_ms": statistics.median(reps),
                }
            )
            continue
        mean = statistics.fmean(reps)
        values = {
            "point_id": f"b{batch}-k{kv_total}",
            "batch_size": batch,
            "total_kv_tokens": kv_total,
            "kv_tokens_min": kv_total // batch,
            "kv_tokens_max": -(-kv_total // batch),
            "is_baseline": True,
            "reference_for": "",
            "repetitions": len(reps),
            "latency_ms_median": statistics.median(reps),
            "latency_ms_min": min(reps),
            "latency_ms_max": max(reps),
            "latency_cv": statistics.pstdev(reps) / mean if mean > 0 else 0.0,
            "latency_ms_reps": reps,
            "wall_ms_median": statistics.median(reps),
            "wall_ms_reps": reps,
        }
        for name, value in values.items():
            stp[name].append(value)
    if stp["point_id"]:
        write_table(
            grid_dir,
            STP_POINTS,
            stp,
            {**sidecar, "derived_from": GRID_STEPS.file_name},
            overwrite=overwrite,
        )
    if rounds:
        draft = sidecar["identity"].get("draft") or {}
        write_table_file(
            grid_dir / "sd_rounds.measured.parquet",
            rounds,
            identity={
                "kind": sidecar["engine_settings"]["speculative_method"],
                "draft_length": draft_length,
                "draft_identity": f"engine-draft:{draft.get('config_sha256', 'none')}",
                "timing_scope": "round",
                "role": "decode",
            },
            schema="aisim.measured_rounds",
            overwrite=overwrite,
        )


def record_served(
    engine: Engine,
    trace: Sequence[TraceRequest],
    run_dir: Path,
    common: dict[str, Any],
    *,
    overwrite: bool,
    progress: Progress,
) -> Path:
    """Serve ``trace`` in wall-clock time; write ``run_dir`` (requests, steps, metrics)."""
    clock = Clock()
    host_before = host_snapshot()
    metrics_before = engine.prometheus_text()
    pending = sorted(trace, key=lambda request: (request.arrival_ms, request.request_id))
    added: dict[str, float] = {}
    token_times: dict[str, list[float]] = {request.request_id: [] for request in trace}
    finished: dict[str, float] = {}
    steps: list[StepRecord] = []
    clock.start()
    cursor = 0
    while cursor < len(pending) or engine.has_work():
        now = clock.now_ms()
        while cursor < len(pending) and pending[cursor].arrival_ms <= now:
            request = pending[cursor]
            added[request.request_id] = clock.now_ms()
            engine.add(request.request_id, request.prompt, request.output_tokens)
            cursor += 1
        if not engine.has_work():
            clock.sleep_until(pending[cursor].arrival_ms)
            continue
        record, state = engine.step(clock)
        for rid, (count, done) in state.items():
            times = token_times[rid]
            new = count - len(times)
            if record is not None:
                record.emitted[rid] = new
            times.extend([clock_end(record, clock)] * new)
            if done:
                finished[rid] = times[-1] if times else clock.now_ms()
        if record is not None:
            record.tokens_emitted = sum(record.emitted.values())
            steps.append(record)
        if len(steps) % 50 == 0 and record is not None:
            progress(f"served {len(finished)}/{len(trace)} requests, {len(steps)} steps")
    metrics_after = engine.prometheus_text()
    host_after = host_snapshot()
    requests_columns: dict[str, list[Any]] = {name: [] for name in SERVED_REQUESTS.column_names}
    for request in trace:
        times = token_times[request.request_id]
        values = {
            "request_id": request.request_id,
            "prompt_tokens": len(request.prompt),
            "output_tokens": request.output_tokens,
            "arrival_ms": request.arrival_ms,
            "added_ms": added[request.request_id],
            "first_token_ms": times[0],
            "finish_ms": finished[request.request_id],
            "token_times_ms": times,
        }
        for name, value in values.items():
            requests_columns[name].append(value)
    steps_columns: dict[str, list[Any]] = {name: [] for name in SERVED_STEPS.column_names}
    for index, step in enumerate(steps):
        values = {
            "step_index": index,
            "start_ms": step.start_ms,
            "end_ms": step.end_ms,
            "cpu_ms": step.cpu_ms,
            "num_prefill_requests": step.num_prefill_requests,
            "prefill_tokens": step.prefill_tokens,
            "num_decode_requests": step.num_decode_requests,
            "decode_kv_tokens": step.decode_kv_tokens,
            "draft_tokens": step.draft_tokens,
            "scheduled_tokens": step.scheduled_tokens,
            "tokens_emitted": step.tokens_emitted,
            "preempted": step.preempted,
            "waiting": step.waiting,
            "request_ids": ";".join(step.request_ids),
        }
        for name, value in values.items():
            steps_columns[name].append(value)
    sidecar = {
        **common,
        "part": "served",
        "host": {**common.get("host", {}), "before": host_before, "after": host_after},
        "timing_metric": "wall",
        "metrics_file": METRICS_FILE,
    }
    write_table(run_dir, SERVED_REQUESTS, requests_columns, sidecar, overwrite=overwrite)
    write_table(run_dir, SERVED_STEPS, steps_columns, sidecar, overwrite=overwrite)
    atomic_write_text(
        run_dir / METRICS_FILE,
        counter_delta(metrics_before, metrics_after),
        overwrite=overwrite,
    )
    return run_dir


def clock_end(record: StepRecord | None, clock: Clock) -> float:
    """Tokens appear when the step that produced them returns."""
    return record.end_ms if record is not None else clock.now_ms()
