"""Step-level diff of replay against an engine recording: where the step table's prices and
replay's schedule differ from what the engine's steps did
(``python -m qualification.engine.step_diff evidence/engine/NAME [...]``).

Two views per served run, by step kind (``prefill`` only, ``mixed`` = chunked prefill beside
decodes, ``decode``; with SD, ``decode`` steps split by the drafts the engine actually scheduled:
``decode-drafted`` every request d drafts, ``decode-partial`` some, ``decode-undrafted`` none):

* **prices**: every recorded step priced as replay prices a pass of the same composition
  (``EngineStepModel``: decode part + prefill part), and its measured wall time divided by that
  price and by the run's step-cost drift (1.00: the table's price is right for this kind of
  step once the engine's speed of the minute is taken out). The idle time before a step (end of
  the previous step to its start) is kept: a step after the engine sat idle can pay for it.
* **schedule**: the engine's step count and total time per kind beside replay's pass count and
  total price per kind (replay's passes are recorded as it prices them);
* **per request**: the mean signed E2E error by third of the requests by output length (a trend
  says replay gives every request the same tokens per round where the engine did not).

One engine process served a recording's runs in turn, so the primitive caches of the model
that prices run k start as the engine's history left them: the recorded steps of the runs
before it priced first (``warmed_model``; replay's own passes for the schedule view,
``diff_runs``). It reads only the committed recording (no engine); it is a diagnostic, not a
score.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from qualification.engine._diagnostic import diagnostic_parser, run_diagnostic
from qualification.engine._recording import EngineRecording

#: A step that began more than this (ms) after the step before it ended started an engine that
#: had sat idle (``diff_run``'s after-idle / busy split; ``step_causes`` uses the same bound).
IDLE_MS = 5.0

KINDS = ("prefill", "mixed", "decode", "decode-drafted", "decode-partial", "decode-undrafted")


def step_kind(
    num_prefill_requests: int, num_decode_requests: int, draft_tokens: int, depth: int
) -> str:
    """The kind of one engine step (or replay pass) from its composition; ``depth`` is the SD
    depth d (0: SD off). ``draft_tokens`` counts the drafts scheduled in the step."""
    if num_prefill_requests and num_decode_requests:
        return "mixed"
    if num_prefill_requests:
        return "prefill"
    if depth == 0:
        return "decode"
    if draft_tokens == 0:
        return "decode-undrafted"
    if draft_tokens < depth * num_decode_requests:
        return "decode-partial"
    return "decode-drafted"


def prefill_chunks(steps: Any, prompts: Mapping[str, int]) -> list[list[tuple[int, int]] | None]:
    """Per recorded step, (tokens in the step, the prompt's tokens computed before) of each of
    its prefill requests, from the step's ``request_ids`` (in the order vLLM scheduled them:
    running requests, then new ones; only the last of them can be cut short by the token
    budget), the requests' prompt lengths (``prompts``) and the steps before it; None for a
    step it cannot account for (an unknown request, or chunks that do not add up to the
    step's prefill tokens)."""
    computed: dict[str, int] = {}
    out: list[list[tuple[int, int]] | None] = []
    for step in steps.to_dict("records"):
        remaining = int(step["prefill_tokens"])
        chunks: list[tuple[int, int]] | None = []
        for rid in (part for part in str(step["request_ids"]).split(";") if part):
            prompt = prompts.get(rid)
            if prompt is None:
                chunks = None
                break
            before = computed.get(rid, 0)
            if before >= prompt:
                continue  # decoding
            chunk = min(prompt - before, remaining)
            assert chunks is not None
            chunks.append((chunk, before))
            remaining -= chunk
            computed[rid] = before + chunk
        if chunks is None or remaining != 0 or len(chunks) != int(step["num_prefill_requests"]):
            out.append(None)
        else:
            out.append(chunks)
    return out


def run_prompts(run: Any) -> dict[str, int]:
    """A served run's prompt length per request id."""
    frame = run.requests
    return {
        str(rid): int(tokens)
        for rid, tokens in zip(frame["request_id"], frame["prompt_tokens"], strict=True)
    }


def priced_steps(
    steps: Any, model: Any, drift: float, depth: int, prompts: Mapping[str, int] | None = None
) -> list[dict[str, Any]]:
    """One row per recorded step: its kind, measured ms, replay's price for the same composition
    (decode part, prefill part, and the price ``model`` gives the pass: their sum, less one
    step's overhead in a mixed step), ratio = measured / (price x drift), the idle ms
    before it, whether its token count paid primitive creation (``created``) and the wake
    cost it was charged (``wake_ms``, 0 when none). With ``prompts`` (prompt length per request id) each step's prompt chunks and
    what their prompts computed before are reconstructed (``prefill_chunks``) and priced
    (``ServedStepModel.price_step(prefill_chunks=...)``)."""
    from aisim.fpm import ForwardPassMetrics

    scratch: Counter[str] = Counter()
    rows = []
    previous_end = None
    plain = getattr(model, "plain_decode_model", None)
    chunk_list = prefill_chunks(steps, prompts) if prompts is not None else None
    for index, step in enumerate(steps.to_dict("records")):
        # A step whose decode requests drafted nothing is priced as replay prices its
        # undrafted rounds: by the table's plain decode steps when it has them.
        undrafted = depth > 0 and int(step["draft_tokens"]) == 0 and step["num_decode_requests"]
        pricer = plain if undrafted and plain is not None else model
        decode_ms = (
            pricer.decode.price(
                int(step["num_decode_requests"]), int(step["decode_kv_tokens"]), scratch
            )
            if step["num_decode_requests"]
            else 0.0
        )
        prefill_ms = (
            pricer.prefill.price(
                int(step["num_prefill_requests"]), int(step["prefill_tokens"]), scratch
            )
            if step["num_prefill_requests"]
            else 0.0
        )
        measured = float(step["end_ms"]) - float(step["start_ms"])
        served = getattr(pricer, "served", None)
        charged: dict[str, int] = {}
        if served is not None:
            charged = dict(served.coverage)
            # As replay prices a pass of this composition, with the drafts the engine
            # actually scheduled (a partially drafted ngram step: fewer than d per request).
            price = float(
                served.price_step(
                    int(step["num_decode_requests"]),
                    int(step["decode_kv_tokens"]),
                    int(step["num_prefill_requests"]),
                    int(step["prefill_tokens"]),
                    int(step["draft_tokens"]) if depth > 0 else None,
                    None if chunk_list is None else chunk_list[index],
                )
            )
        else:
            price = pricer.estimate_forward_pass_time_ms(  # exactly as replay prices the pass
                ForwardPassMetrics(
                    int(step["num_decode_requests"]),
                    int(step["decode_kv_tokens"]),
                    int(step["num_prefill_requests"]),
                    int(step["prefill_tokens"]),
                )
            )
        if served is not None:
            # What the served-step model charged this step beyond its line prices.
            charged = {
                key: count - charged.get(key, 0)
                for key, count in served.coverage.items()
                if count != charged.get(key, 0)
            }
        rows.append(
            {
                "kind": step_kind(
                    int(step["num_prefill_requests"]),
                    int(step["num_decode_requests"]),
                    int(step["draft_tokens"]),
                    depth,
                ),
                # The step's shape (step_shapes).
                "decode_requests": int(step["num_decode_requests"]),
                "decode_kv_tokens": int(step["decode_kv_tokens"]),
                "prefill_requests": int(step["num_prefill_requests"]),
                "prefill_tokens": int(step["prefill_tokens"]),
                "draft_tokens": int(step["draft_tokens"]),
                "measured_ms": measured,
                "decode_price_ms": decode_ms,
                "prefill_price_ms": prefill_ms,
                "price_ms": price,
                "ratio": measured / (price * drift) if price > 0 else float("nan"),
                "idle_before_ms": (
                    float("nan") if previous_end is None else float(step["start_ms"]) - previous_end
                ),
                # The step's token count paid primitive creation; the wake cost it was
                # charged (ms; 0 when none).
                "created": "primitives:created" in charged,
                "wake_ms": float(served.wake_ms)
                if served is not None and "wake" in charged
                else 0.0,
            }
        )
        previous_end = float(step["end_ms"])
    return rows


class _RecordingPricer:
    """Wraps a step model; keeps (kind, price) of every pass replay prices (the passes of its
    plain decode model, replay's undrafted rounds, in the same list)."""

    def __init__(
        self,
        model: Any,
        depth: int,
        passes: list[tuple[str, float]] | None = None,
        undrafted: bool = False,
    ) -> None:
        self.model = model
        self.depth = depth
        self.undrafted = undrafted
        self.name = model.name
        self.prices_speculation_natively = model.prices_speculation_natively
        self.supports_draft_length = model.supports_draft_length
        self.passes: list[tuple[str, float]] = [] if passes is None else passes
        plain = getattr(model, "plain_decode_model", None)
        self.plain_decode_model = (
            None if plain is None else _RecordingPricer(plain, depth, self.passes, True)
        )

    def estimate_forward_pass_time_ms(self, metrics: Any, draft_length: int | None = None) -> float:
        price = float(self.model.estimate_forward_pass_time_ms(metrics))
        ranks = metrics if isinstance(metrics, list) else [metrics]
        for rank in ranks:
            drafts = 0 if self.undrafted else self.depth * rank.num_decode_requests
            kind = step_kind(
                rank.num_prefill_requests, rank.num_decode_requests, drafts, self.depth
            )
            self.passes.append((kind, price))
        return price


def warmed_model(table: Any, depth: int, earlier: Sequence[Any] = (), **options: Any) -> Any:
    """An ``EngineStepModel`` of ``table`` (``options`` as its own) whose primitive caches
    hold what the engine process ran before: the recorded steps of the ``earlier`` served
    runs (in order), priced through it first."""
    from qualification.engine._step_model import EngineStepModel

    model = EngineStepModel(table, depth, **options)
    for run in earlier:
        priced_steps(run.steps, model, 1.0, depth)
    return model


def replay_passes(
    run: Any, table: Any, cache: Any = None
) -> tuple[list[tuple[str, float]], Any, Any]:
    """(kind, price) of every pass of ``run``'s replay priced by ``table`` (as ``replay_run``;
    ``cache``: the primitive caches the replay of the previous run left), the replay's
    result, and the caches it leaves."""
    from aisim import run_replay
    from qualification.engine._replay import check_same_engine, recorded_settings, replay_config
    from qualification.engine._step_model import EngineStepModel

    check_same_engine(run, table)
    depth = int(recorded_settings(run)["num_speculative_tokens"] or 0)
    model = EngineStepModel(table, depth, cache=cache)
    pricer = _RecordingPricer(model, depth)
    result = run_replay(replay_config(run, table), base_dir=Path("."), forward_pass_model=pricer)
    return pricer.passes, result, model.cache


def error_by_output_length(run: Any, result: Any) -> list[dict[str, Any]]:
    """Per third of the requests by output length (shortest first): the output lengths, and the
    mean signed per-request E2E error of the replay (``result``) against ``run``, in percent.
    A model that gives every request the same tokens per round where the engine does not (with
    ``ngram``, a request drafts nothing until an n-gram matches) shows a trend here."""
    from qualification.engine._measured import measured_latencies

    measured = measured_latencies(run)
    frame = result.requests.set_index(result.requests["request_id"].astype(str))
    predicted = frame.loc[measured["request_id"], "e2e_latency_ms"].astype(float).tolist()
    rows = sorted(
        zip(measured["output_tokens"], predicted, measured["e2e"], strict=True),
        key=lambda row: row[0],
    )
    thirds = [part.tolist() for part in np.array_split(np.arange(len(rows)), 3)]
    out = []
    for indices in thirds:
        part = [rows[i] for i in indices]
        if not part:
            continue
        errors = [(pred - meas) / meas * 100.0 for _, pred, meas in part]
        out.append(
            {
                "output_tokens": (int(part[0][0]), int(part[-1][0])),
                "requests": len(part),
                "mean_signed_e2e_error_pct": float(np.mean(errors)),
            }
        )
    return out


def price_errors(rows: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Per step kind, every step's price error (price - measured) / measured, the grid as the
    only input (no drift), in the run's step order; what ``engine.json`` keeps per run
    (``step_errors``) for error distributions."""
    out: dict[str, list[float]] = {}
    for row in rows:
        if row["measured_ms"] > 0:
            error = (row["price_ms"] - row["measured_ms"]) / row["measured_ms"]
            out.setdefault(row["kind"], []).append(round(float(error), 5))
    return out


#: Steps either side of a step whose decode steps give the engine's speed at that moment.
LOCAL_WINDOW = 15


def local_speed(rows: list[dict[str, Any]], window: int = LOCAL_WINDOW) -> list[float | None]:
    """Per row of ``priced_steps``, the engine's speed at that moment relative to the step
    table: the median measured / price of the decode steps (every ``decode*`` kind) among the
    ``window`` rows either side of it, itself left out; None where there are none. Read from
    the served run itself: a diagnostic of how much of a step's price error is the minute's
    speed, never a price."""
    ratios = [
        row["measured_ms"] / row["price_ms"]
        if row["kind"].startswith("decode") and row["price_ms"] > 0
        else None
        for row in rows
    ]
    out: list[float | None] = []
    for index in range(len(rows)):
        near = [
            ratio
            for other, ratio in enumerate(
                ratios[max(0, index - window) : index + window + 1], max(0, index - window)
            )
            if ratio is not None and other != index
        ]
        out.append(float(np.median(near)) if near else None)
    return out


def local_price_errors(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Per step kind, the median of (price x the local speed - measured) / measured in percent
    (``local_speed``): the table's price with the minute's speed taken out."""
    found: dict[str, list[float]] = {}
    for row, speed in zip(rows, local_speed(rows), strict=True):
        if speed is not None and row["measured_ms"] > 0:
            error = (row["price_ms"] * speed - row["measured_ms"]) / row["measured_ms"] * 100.0
            found.setdefault(row["kind"], []).append(error)
    return {kind: float(np.median(values)) for kind, values in found.items()}


def run_speed(rows: list[dict[str, Any]]) -> float | None:
    """The engine's speed over a whole served run relative to the step table: the median
    measured / price of the run's decode steps (every ``decode*`` kind, each priced as in
    ``rows``); None without any. Read from the served run itself: a diagnostic (what the grid's
    price would reach if it knew each run's speed), never a price."""
    ratios = [
        row["measured_ms"] / row["price_ms"]
        for row in rows
        if row["kind"].startswith("decode") and row["price_ms"] > 0
    ]
    return float(np.median(ratios)) if ratios else None


def run_speed_price_errors(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Per step kind, the median of (price x the run's speed - measured) / measured in percent
    (``run_speed``: one number per run, so every step of a run is scaled alike); empty
    without decode steps."""
    speed = run_speed(rows)
    if speed is None:
        return {}
    found: dict[str, list[float]] = {}
    for row in rows:
        if row["measured_ms"] > 0:
            error = (row["price_ms"] * speed - row["measured_ms"]) / row["measured_ms"] * 100.0
            found.setdefault(row["kind"], []).append(error)
    return {kind: float(np.median(values)) for kind, values in found.items()}


def step_shapes(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per step kind, what its steps carried: mean decode requests, median past KV per decode
    request, mean prefill requests (prompts or prompt chunks), median prompt tokens per step
    (None where the kind has none)."""
    out: dict[str, dict[str, float | None]] = {}
    for kind in dict.fromkeys(row["kind"] for row in rows):
        mine = [row for row in rows if row["kind"] == kind]
        decode = [row for row in mine if row["decode_requests"] > 0]
        prefill = [row for row in mine if row["prefill_requests"] > 0]
        out[kind] = {
            "decode_requests": float(np.mean([row["decode_requests"] for row in mine])),
            "context_tokens": (
                float(
                    np.median([row["decode_kv_tokens"] / row["decode_requests"] for row in decode])
                )
                if decode
                else None
            ),
            "prefill_requests": float(np.mean([row["prefill_requests"] for row in mine])),
            "prefill_tokens": (
                float(np.median([row["prefill_tokens"] for row in prefill])) if prefill else None
            ),
        }
    return out


def common_factor_ceiling(medians_pct: Sequence[float], tolerance_pct: float = 5.0) -> int:
    """The most of ``medians_pct`` (one recording's served runs, one step kind: each run's
    median price error in percent) that one factor on the price, the same for every run, can
    bring within +-``tolerance_pct``. The runs serve the same trace on the same engine, so any
    price that gives a step the same price in every run (a better grid, a better model) moves
    all of them by the same factor f: a median error e becomes f (1 + e) - 1. The count is the
    most intervals [(1 - t) / (1 + e), (1 + t) / (1 + e)] that share a point."""
    low = 1.0 - tolerance_pct / 100.0
    high = 1.0 + tolerance_pct / 100.0
    bounds = [(low / (1.0 + e / 100.0), high / (1.0 + e / 100.0)) for e in medians_pct]
    best = 0
    for start, _ in bounds:
        # Some best factor is the lower end of one of the intervals.
        best = max(best, sum(1 for a, b in bounds if a <= start <= b))
    return best


def within_counts(runs: Sequence[dict[str, Any]], tolerance_pct: float = 5.0) -> dict[str, int]:
    """Over the ``diff_run`` results of one recording's served runs: how many (run, kind)
    medians are within +-``tolerance_pct`` from the grid alone (``grid``), at the run's own
    speed (``run_speed``), at the local speed (``local``), and the most any price giving a
    step the same price in every run could bring within (``ceiling``: per kind,
    ``common_factor_ceiling``), out of ``total``."""
    counts = {"total": 0, "grid": 0, "run_speed": 0, "local": 0, "ceiling": 0}
    by_kind: dict[str, list[float]] = {}
    for run in runs:
        for kind, row in run["price_error"].items():
            counts["total"] += 1
            counts["grid"] += abs(row["median_pct"]) <= tolerance_pct
            at_speed = run["price_error_run_speed"].get(kind)
            counts["run_speed"] += at_speed is not None and abs(at_speed) <= tolerance_pct
            local = run["price_error_local"].get(kind)
            counts["local"] += local is not None and abs(local) <= tolerance_pct
            by_kind.setdefault(kind, []).append(row["median_pct"])
    counts["ceiling"] = sum(
        common_factor_ceiling(values, tolerance_pct) for values in by_kind.values()
    )
    return counts


def _spread(errors: list[float]) -> dict[str, Any]:
    values = np.array(errors, dtype=float) * 100.0
    return {
        "steps": len(errors),
        "median_pct": float(np.median(values)),
        "median_abs_pct": float(np.median(np.abs(values))),
        "p10_pct": float(np.percentile(values, 10)),
        "p90_pct": float(np.percentile(values, 90)),
    }


def step_price_errors(run: Any, table: Any, earlier: Sequence[Any] = ()) -> dict[str, Any]:
    """Per kind, the price error of every recorded step of ``run`` priced from ``table`` alone
    (no drift): with the served-step model (``errors``, ``summary``) and with the table alone
    (``table_only``, the engine model off); and, where both the table and the run recorded
    per-step process CPU time, the same in CPU time (``cpu``, ``cpu_table_only``: the table's
    CPU-time medians against each served step's CPU time, which takes out what other
    processes on a shared host did to the wall clock). ``earlier``: the runs the engine
    process served before ``run`` (``warmed_model``)."""
    depth = int(run.settings["num_speculative_tokens"] or 0)

    def errors(steps: Any, latency: str, engine_model: bool) -> dict[str, list[float]]:
        model = warmed_model(
            table, depth, earlier, latency_column=latency, engine_model=engine_model
        )
        return price_errors(priced_steps(steps, model, 1.0, depth, run_prompts(run)))

    modelled = errors(run.steps, "wall_ms", True)
    out: dict[str, Any] = {
        "errors": modelled,
        "summary": {kind: _spread(values) for kind, values in modelled.items()},
        "table_only": {
            kind: _spread(values) for kind, values in errors(run.steps, "wall_ms", False).items()
        },
        "cpu": None,
        "cpu_table_only": None,
    }
    timed = table.steps[~table.steps["warmup"]]
    if bool(run.steps["cpu_ms"].notna().all()) and bool(timed["cpu_ms"].notna().all()):
        cpu_steps = run.steps.assign(end_ms=run.steps["start_ms"] + run.steps["cpu_ms"])
        for key, engine_model in (("cpu", True), ("cpu_table_only", False)):
            found = errors(cpu_steps, "cpu_ms", engine_model)
            out[key] = {kind: _spread(values) for kind, values in found.items()}
    return out


def diff_runs(runs: Sequence[Any], table: Any) -> list[dict[str, Any]]:
    """``diff_run`` of every served run of one recording, in the order the engine served
    them, each priced with the primitive caches its engine process's history left."""
    out = []
    cache = None
    for index, run in enumerate(runs):
        diff, cache = diff_run(run, table, runs[:index], cache)
        out.append(diff)
    return out


def diff_run(
    run: Any, table: Any, earlier: Sequence[Any] = (), replay_cache: Any = None
) -> tuple[dict[str, Any], Any]:
    """Per kind: engine steps (count, total ms, median and P10/P90 ratio to price x drift;
    median ratio after more / less than 5 ms idle; median ratio to the decode + prefill price
    sum x drift, each part carrying its own step overhead) and replay passes (count, total ms);
    and the median excess (measured - price x drift, ms) over every step carrying prompt
    tokens (prefill-only and mixed together). ``earlier``: the runs the engine served before
    (their recorded steps warm the pricing model); ``replay_cache``: the primitive caches the
    replay of the previous run left. Returns (the diff, the caches this run's replay left)."""
    from qualification.engine._measured import step_cost_drift

    depth = int(run.settings["num_speculative_tokens"] or 0)
    model = warmed_model(table, depth, earlier)
    drift = step_cost_drift(run.steps, model)
    rows = priced_steps(run.steps, model, drift, depth, run_prompts(run))
    passes, result, left = replay_passes(run, table, replay_cache)
    kinds: dict[str, Any] = {}
    for kind in KINDS:
        mine = [row for row in rows if row["kind"] == kind]
        theirs = [price for k, price in passes if k == kind]
        if not mine and not theirs:
            continue
        ratios = np.array([row["ratio"] for row in mine], dtype=float)
        after_idle = [row["ratio"] for row in mine if row["idle_before_ms"] > IDLE_MS]
        busy = [row["ratio"] for row in mine if not row["idle_before_ms"] > IDLE_MS]
        kinds[kind] = {
            "engine_steps": len(mine),
            "engine_ms": float(sum(row["measured_ms"] for row in mine)),
            "priced_ms_x_drift": float(sum(row["price_ms"] * drift for row in mine)),
            "ratio_median": float(np.median(ratios)) if mine else None,
            "excess_ms_median": (
                float(np.median([row["measured_ms"] - row["price_ms"] * drift for row in mine]))
                if mine
                else None
            ),
            "ratio_to_sum_median": (
                float(
                    np.median(
                        [
                            row["measured_ms"]
                            / ((row["decode_price_ms"] + row["prefill_price_ms"]) * drift)
                            for row in mine
                        ]
                    )
                )
                if mine
                else None
            ),
            "ratio_p10": float(np.percentile(ratios, 10)) if mine else None,
            "ratio_p90": float(np.percentile(ratios, 90)) if mine else None,
            "ratio_median_after_idle": float(np.median(after_idle)) if after_idle else None,
            "steps_after_idle": len(after_idle),
            "ratio_median_busy": float(np.median(busy)) if busy else None,
            "replay_passes": len(theirs),
            "replay_ms": float(sum(theirs)),
        }
    prompt = [row for row in rows if row["kind"] in ("prefill", "mixed")]
    errors = step_price_errors(run, table, earlier)
    diff = {
        "run": run.name,
        "drift": drift,
        "kinds": kinds,
        "price_error": errors["summary"],
        "price_error_table_only": errors["table_only"],
        # The same steps priced at the engine's speed of their moment, and of the whole run
        # (diagnostics), and what the steps of each kind carried.
        "price_error_local": local_price_errors(rows),
        "price_error_run_speed": run_speed_price_errors(rows),
        "shapes": step_shapes(rows),
        "cpu_price_error": errors["cpu"],
        "cpu_price_error_table_only": errors["cpu_table_only"],
        "decode_by_composition": decode_by_composition(run.steps, rows),
        "stretched": stretched_steps(run.steps, rows),
        "prompt_excess_ms_median": (
            float(np.median([row["measured_ms"] - row["price_ms"] * drift for row in prompt]))
            if prompt
            else None
        ),
        "by_output_length": error_by_output_length(run, result),
    }
    return diff, left


def decode_by_composition(steps: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Decode-only steps' median measured / (price x drift), split by what the served step had
    that a grid step has not: requests waiting, a batch different from the step before (a
    request joined or left), or neither."""
    groups: dict[str, list[float]] = {"same batch": [], "batch changed": [], "requests waiting": []}
    previous: set[str] = set()
    for step, row in zip(steps.to_dict("records"), rows, strict=True):
        ids = set(str(step["request_ids"]).split(";")) if step["request_ids"] else set()
        if row["kind"].startswith("decode"):
            if int(step["waiting"]) > 0:
                groups["requests waiting"].append(row["ratio"])
            elif ids != previous:
                groups["batch changed"].append(row["ratio"])
            else:
                groups["same batch"].append(row["ratio"])
        previous = ids
    return {
        name: {"steps": len(values), "ratio_median": float(np.median(values)) if values else None}
        for name, values in groups.items()
    }


def stretched_steps(steps: Any, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Per kind, the share of served steps whose wall time exceeds 1.25 x their process CPU
    time (the engine's process was off the CPU for part of the step: another process's work,
    not the engine's), and the median wall / CPU; None without per-step CPU times."""
    if not bool(steps["cpu_ms"].notna().all()):
        return None
    ratios: dict[str, list[float]] = {}
    for step, row in zip(steps.to_dict("records"), rows, strict=True):
        if float(step["cpu_ms"]) > 0:
            ratios.setdefault(row["kind"], []).append(row["measured_ms"] / float(step["cpu_ms"]))
    return {
        kind: {
            "steps": len(values),
            "share_over_1_25": float(np.mean([value > 1.25 for value in values])),
            "wall_over_cpu_median": float(np.median(values)),
        }
        for kind, values in ratios.items()
    }


def _fmt(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def to_markdown(name: str, runs: list[dict[str, Any]]) -> str:
    lines = [
        f"### {name}",
        "",
        "| run (drift) | kind | engine steps | replay passes | engine ms | table price x drift ms "
        "| replay ms | measured / (price x drift): median [P10, P90] | after > 5 ms idle (n) "
        "| busy | measured - price x drift: median ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        for kind, row in run["kinds"].items():
            lines.append(
                f"| {run['run']} ({run['drift']:.2f}) | {kind} | {row['engine_steps']} "
                f"| {row['replay_passes']} | {row['engine_ms']:.0f} "
                f"| {row['priced_ms_x_drift']:.0f} | {row['replay_ms']:.0f} "
                f"| {_fmt(row['ratio_median'], '.2f')} [{_fmt(row['ratio_p10'], '.2f')}, "
                f"{_fmt(row['ratio_p90'], '.2f')}] "
                f"| {_fmt(row['ratio_median_after_idle'], '.2f')} ({row['steps_after_idle']}) "
                f"| {_fmt(row['ratio_median_busy'], '.2f')} "
                f"| {_fmt(row['excess_ms_median'], '+.1f')} |"
            )
    lines += [
        "",
        "Step price error, (price - measured) / measured with the grid as the only input (no "
        "drift): median [P10, P90] and median |error|, served-step model / table alone; and "
        f"the model's median at the local speed (each price x the median measured / price of "
        f"the decode steps within {LOCAL_WINDOW} steps of it: the minute's speed, read from the "
        "run, taken out; a diagnostic), and at the run's speed (every price x the median "
        "measured / price of the run's decode steps: one number per run, a diagnostic); the "
        "steps' shape: mean decode requests, median past KV per decode request, mean prefill "
        "requests, median prompt tokens per step:",
        "",
        "| run | kind | steps | served-step model | median abs | table alone | median abs "
        "| at the local speed | at the run's speed | shape (requests, context, prompts, "
        "prompt tokens) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        for kind, row in run["price_error"].items():
            alone = run["price_error_table_only"].get(kind, {})
            local = run["price_error_local"].get(kind)
            at_speed = run["price_error_run_speed"].get(kind)
            shape = run["shapes"].get(kind, {})
            lines.append(
                f"| {run['run']} | {kind} | {row['steps']} | {row['median_pct']:+.1f} % "
                f"[{row['p10_pct']:+.1f}, {row['p90_pct']:+.1f}] | {row['median_abs_pct']:.1f} % "
                f"| {_fmt(alone.get('median_pct'), '+.1f')} % | "
                f"{_fmt(alone.get('median_abs_pct'), '.1f')} % | {_fmt(local, '+.1f')} % "
                f"| {_fmt(at_speed, '+.1f')} % | {_fmt(shape.get('decode_requests'), '.1f')}, "
                f"{_fmt(shape.get('context_tokens'), '.0f')}, "
                f"{_fmt(shape.get('prefill_requests'), '.2f')}, "
                f"{_fmt(shape.get('prefill_tokens'), '.0f')} |"
            )
    lines += ["", _within_line(within_counts(runs))]
    if all(run["cpu_price_error"] for run in runs):
        lines += [
            "",
            "The same in process CPU time (the table's CPU-time medians against each served "
            "step's CPU time: what other processes did to the wall clock taken out):",
            "",
            "| run | kind | steps | served-step model | median abs | table alone | median abs |",
            "|---|---|---|---|---|---|---|",
        ]
        for run in runs:
            for kind, row in run["cpu_price_error"].items():
                alone = run["cpu_price_error_table_only"].get(kind, {})
                lines.append(
                    f"| {run['run']} | {kind} | {row['steps']} | {row['median_pct']:+.1f} % "
                    f"[{row['p10_pct']:+.1f}, {row['p90_pct']:+.1f}] | "
                    f"{row['median_abs_pct']:.1f} % | {_fmt(alone.get('median_pct'), '+.1f')} % | "
                    f"{_fmt(alone.get('median_abs_pct'), '.1f')} % |"
                )
    if all(run["stretched"] for run in runs):
        lines += ["", "Steps whose wall time exceeds 1.25 x their process CPU time (share):", ""]
        for run in runs:
            parts = [
                f"{kind} {100 * row['share_over_1_25']:.0f} % of {row['steps']}"
                for kind, row in run["stretched"].items()
            ]
            lines.append(f"- {run['run']}: " + "; ".join(parts))
    lines += ["", "Decode steps by composition, measured / (price x drift), median (steps):", ""]
    for run in runs:
        parts = [
            f"{name} {_fmt(group['ratio_median'], '.2f')} ({group['steps']})"
            for name, group in run["decode_by_composition"].items()
        ]
        lines.append(f"- {run['run']}: " + "; ".join(parts))
    lines += [
        "",
        "Mean signed per-request E2E error (replay vs engine) by output length, shortest third "
        "first:",
        "",
    ]
    for run in runs:
        parts = [
            f"{part['output_tokens'][0]}-{part['output_tokens'][1]} tokens: "
            f"{part['mean_signed_e2e_error_pct']:+.1f} %"
            for part in run["by_output_length"]
        ]
        lines.append(f"- {run['run']}: " + "; ".join(parts))
    return "\n".join(lines) + "\n"


def _within_line(counts: Mapping[str, int]) -> str:
    total = counts["total"]
    return (
        f"(run, kind) medians within 5 %: {counts['grid']} of {total} from the grid alone, "
        f"{counts['run_speed']} at the run's speed, {counts['local']} at the local speed; any "
        "price that gives a step the same price in every served run (one factor per kind on "
        f"these prices) could bring at most {counts['ceiling']} of {total} within."
    )


def main(argv: list[str] | None = None) -> int:
    args = diagnostic_parser(
        "step_diff",
        "Per step kind: the engine's measured steps against the step table's prices (relative "
        "to each run's step-cost drift), and the engine's schedule against replay's.",
    ).parse_args(argv)
    totals: Counter[str] = Counter()

    def each(recording: EngineRecording) -> None:
        assert recording.grid is not None  # run_diagnostic(need_grid=True)
        runs = diff_runs(recording.served, recording.grid)
        print(to_markdown(recording.name, runs))
        totals.update(within_counts(runs))

    def after() -> None:
        if len(args.recordings) > 1:
            print(f"### All {len(args.recordings)} recordings\n\n{_within_line(totals)}")

    return run_diagnostic(args.recordings, each, need_grid=True, after=after)


if __name__ == "__main__":
    sys.exit(main())
