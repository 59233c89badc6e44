"""Build the replay of a served run from the engine's recorded settings, and run it.

The replay config carries exactly the settings read back from the engine (``ENGINE_SETTINGS``);
a recording that lacks one is refused, naming it. Passes are priced by an ``EngineStepModel``
over the step table of a *separate* recording (the grid), never the served run's own steps.
The SD acceptance given to replay is the one the grid's engine counters observed, read by
aisim's engine-metrics reader (``acceptance_from``, so the replay summary records the scrape's
SHA-256).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aisim.errors import ConfigError, DataIntegrityError
from aisim.fpm import FrontEndCost
from aisim.speculation import measure_engine_acceptance
from qualification.engine._recording import ServedRun, StepTable
from qualification.engine._schema import ENGINE_SETTINGS, METRICS_FILE
from qualification.engine._step_model import EngineStepModel

SPECULATION_KINDS = {"draft_model": "draft_model", "ngram": "ngram"}


def recorded_settings(run: ServedRun) -> dict[str, Any]:
    """The engine settings of ``run``; DataIntegrityError naming the first one missing."""
    settings = run.settings
    where = repr(str(run.directory / "requests.parquet.json"))
    for key in ENGINE_SETTINGS:
        if key not in settings:
            raise DataIntegrityError(
                f"{where}: engine_settings.{key}: missing; a replay needs every engine setting "
                f"({', '.join(ENGINE_SETTINGS)})"
            )
    if settings["num_kv_blocks"] is None:
        raise DataIntegrityError(f"{where}: engine_settings.num_kv_blocks: not recorded (null)")
    return settings


#: vLLM records one inter-token latency per request per engine step after its first token
#: (``vllm/v1/metrics/stats.py``, ``IterationStats.update_from_output``), so this histogram's
#: count is the number of decode rounds, drafted or not.
DECODE_ROUNDS = "vllm:inter_token_latency_seconds_count"
#: Finished requests, one series per finish reason (``vllm/v1/metrics/loggers.py``).
FINISHED_REQUESTS = "vllm:request_success"


def _read_counters(path: Path) -> tuple[Any, int | None, int | None] | None:
    """(aisim's ``MeasuredAcceptance`` of the file, decode rounds (``DECODE_ROUNDS``), finished
    requests (``FINISHED_REQUESTS``); each of the last two None when the file has no such
    counter), or None without SD drafts; DataIntegrityError naming the file when it is missing,
    unreadable or inconsistent."""
    from aisim.speculation import VLLM_COUNTERS, VLLM_DRAFTS, prometheus_samples

    where = repr(str(path))
    try:
        text = path.read_text(encoding="utf-8")
        series, _ = prometheus_samples(
            text, (*VLLM_COUNTERS, DECODE_ROUNDS, FINISHED_REQUESTS), str(path), ""
        )
        if not any(values.get(VLLM_DRAFTS) for values in series.values()):
            return None
        measured = measure_engine_acceptance(path, "vllm-prometheus")
    except FileNotFoundError:
        raise DataIntegrityError(
            f"{where}: missing; speculative decoding is scored with the engine's SD counters "
            f"({', '.join(VLLM_COUNTERS)})"
        ) from None
    except OSError as exc:
        raise DataIntegrityError(f"{where}: engine counters unreadable ({exc.strerror})") from None
    except ConfigError as exc:
        raise DataIntegrityError(f"engine counters: {exc}") from None
    drafts = int(measured.drafts or 0)
    found = [values for values in series.values() if DECODE_ROUNDS in values]
    rounds = int(sum(values[DECODE_ROUNDS] for values in found)) if found else None
    if rounds is not None and rounds < drafts:
        raise DataIntegrityError(
            f"{where}: {DECODE_ROUNDS}: {rounds:g} decode rounds, fewer than the {drafts} "
            f"drafts (every drafted round is a decode round); not one engine's counters"
        )
    done = [values for values in series.values() if FINISHED_REQUESTS in values]
    finished = int(sum(values[FINISHED_REQUESTS] for values in done)) if done else None
    return measured, rounds, finished


def _needed(value: int | None, name: str, path: Path, why: str) -> int:
    """``value``, or DataIntegrityError naming the counter missing from ``path``."""
    if value is None:
        raise DataIntegrityError(f"{str(path)!r}: {name}: missing; {why}")
    return value


def engine_counters(path: Path) -> dict[str, Any] | None:
    """vLLM's SD counters in a metrics file (``path``), read by aisim's engine-metrics reader:
    drafts, draft tokens, accepted tokens, rounds accepting at least i drafts, and the decode
    rounds (``DECODE_ROUNDS``, None when the file has none); None without SD. Acceptance length
    in vLLM's convention is 1 + accepted / drafts (rounds that drafted nothing are not
    counted); tokens per decode round is 1 + accepted / decode rounds (``ngram`` drafts nothing
    when no n-gram matches)."""
    read = _read_counters(path)
    if read is None:
        return None
    measured, rounds, finished = read
    drafts = int(measured.drafts)
    accepted = int(measured.accepted_tokens or 0)
    at_least = list(measured.accepted_at_least or ())
    return {
        "num_drafts": drafts,
        "num_draft_tokens": measured.draft_tokens,
        "num_accepted_tokens": accepted,
        "num_decode_rounds": rounds,
        "num_requests": finished,
        "accepted_at_least": at_least,
        "unconditional_rates": [count / drafts for count in at_least],
        "acceptance_length": 1.0 + accepted / drafts,
        "tokens_per_decode_round": None if not rounds else 1.0 + accepted / rounds,
    }


def observed_acceptance(run: ServedRun) -> dict[str, Any] | None:
    """A served run's SD counters (``engine_counters`` of its metrics file); None with SD off,
    where the metrics file is optional (a driver other than ours may not scrape one)."""
    path = run.directory / METRICS_FILE
    if run.settings.get("speculative_method") is None and not path.exists():
        return None
    return engine_counters(path)


def replay_backend(run: ServedRun) -> str:
    """The scheduler replay runs for a recording: ``sglang`` when ``identity.engine`` names
    SGLang (``sglang``, ``sglang-cpu``, ...: SGLang's scheduler, docs/replay.md), else ``vllm``
    (vLLM, and engines replayed as vLLM-like such as TensorRT-LLM). The plain layout states
    SGLang's settings in vLLM's names: ``max_num_batched_tokens`` is its
    ``--chunked-prefill-size``, ``max_num_seqs`` its ``--max-running-requests``."""
    engine = str((run.sidecar.get("identity") or {}).get("engine") or "")
    return "sglang" if engine.lower().startswith("sglang") else "vllm"


def replay_config(run: ServedRun, table: StepTable, *, admission_ms: float = 0.0) -> dict[str, Any]:
    """The replay mapping for ``run``: traffic = the served trace's arrivals (each
    ``admission_ms`` later: a front end's cost before the engine sees a request) and lengths,
    scheduler (``replay_backend``) and KV = the recorded engine settings, speculation = the recorded method and d
    with the acceptance observed on the grid's engine counters."""
    settings = recorded_settings(run)
    requests = [
        {
            "request_id": str(row["request_id"]),
            "timestamp": float(row["arrival_ms"]) + admission_ms,
            "input_length": int(row["prompt_tokens"]),
            "output_length": int(row["output_tokens"]),
        }
        for row in run.requests.to_dict("records")
    ]
    backend = replay_backend(run)
    budget, sequences = int(settings["max_num_batched_tokens"]), int(settings["max_num_seqs"])
    scheduler: dict[str, Any] = (
        {"chunked_prefill_size": budget, "max_running_requests": sequences}
        if backend == "sglang"
        else {"max_batched_tokens": budget, "max_sequences": sequences}
    )
    scheduler["chunked_prefill"] = bool(settings["chunked_prefill"])
    worker: dict[str, Any] = {
        "scheduler": scheduler,
        "kv_cache": {
            "block_size": int(settings["block_size"]),
            "prefix_caching": bool(settings["prefix_caching"]),
            "capacity": {"type": "fixed", "blocks": int(settings["num_kv_blocks"])},
        },
        "timing": {"type": "fixed", "prefill_ms": 0.0, "decode_ms": 0.0},
    }
    engine: dict[str, Any] = {"backend": backend, "workers": {"aggregated": worker}}
    method = settings["speculative_method"]
    if method is not None:
        kind = SPECULATION_KINDS.get(str(method))
        if kind is None:
            raise DataIntegrityError(
                f"{str(run.directory)!r}: engine_settings.speculative_method: {method!r} has no "
                f"replay equivalent; known: {', '.join(SPECULATION_KINDS)}"
            )
        depth = int(settings["num_speculative_tokens"])
        speculation: dict[str, Any] = {"kind": kind, "params": {"num_speculative_tokens": depth}}
        if kind == "ngram" and has_plain_decode_steps(table):
            rates, undrafted = _grid_undrafted_rounds(table, depth)
            speculation["unconditional_acceptance_rates"] = rates
            speculation["undrafted_rounds"] = undrafted
        else:
            speculation["unconditional_acceptance_rates"] = _grid_rates_per_round(table, depth)
        speculation["seed"] = 0
        if kind == "draft_model":
            speculation["draft_model_path"] = "models/draft"
        engine["speculation"] = speculation
    return {
        "traffic": {"source": {"type": "agentic", "requests": requests}},
        "engine": engine,
    }


def grid_counts(table: StepTable, depth: int) -> tuple[list[int], int, int, int | None]:
    """The grid's engine counters: (rounds accepting at least i drafts, i = 1..depth; decode
    rounds; drafted rounds; finished requests). A grid without SD counters, or with a
    per-position series of another depth, is refused naming the file."""
    path = table.directory / METRICS_FILE
    read = _read_counters(path)
    if read is None:
        raise DataIntegrityError(f"{str(path)!r}: the grid's engine counters show no SD drafts")
    measured, rounds, finished = read
    try:
        counts = measured.counts(depth, repr(str(path)))
    except ConfigError as exc:
        raise DataIntegrityError(f"grid engine counters: {exc}") from None
    assert counts is not None  # vLLM counters always carry the per-position series
    rounds = _needed(
        rounds, DECODE_ROUNDS, path, "replay's acceptance per decode round needs the decode rounds"
    )
    return list(counts), rounds, int(measured.drafts), finished


def _grid_rates_per_round(table: StepTable, depth: int) -> list[float]:
    """Per draft position, the share of the grid's decode rounds that accepted at least that
    many drafts: rounds that drafted nothing count as accepting none, so replay's tokens per
    round is the engine's. (Per drafted round, vLLM's acceptance-length convention, ``ngram``
    would over-state tokens per round: it drafts nothing until an n-gram matches,
    ``vllm/v1/spec_decode/ngram_proposer.py``.)"""
    counts, rounds, _, _ = grid_counts(table, depth)
    return [count / rounds for count in counts]


def has_plain_decode_steps(table: StepTable) -> bool:
    """Whether the step table timed plain decode steps (an SD grid: ``ngram``'s undrafted
    steps, ``qualification/engine/_record.py``)."""
    return "phase" in table.steps.columns and not table.timed("decode").empty


def _grid_undrafted_rounds(table: StepTable, depth: int) -> tuple[list[float], int]:
    """``ngram`` on a grid that timed plain decode steps: (per draft position, the share of the
    grid's *drafted* rounds accepting at least that many drafts; the undrafted decode rounds
    per request, rounded). vLLM's n-gram proposer drafts nothing until the context's suffix
    matches an earlier n-gram (``vllm/v1/spec_decode/ngram_proposer.py``,
    ``NgramProposer.propose``), which on the recorded requests happens after the first few
    rounds of every request; the grid's counters give their mean, (decode rounds - drafted
    rounds) / finished requests. Refused as ``grid_counts`` refuses, and when the counters
    count no finished request, naming the file."""
    counts, rounds, drafts, finished = grid_counts(table, depth)
    path = table.directory / METRICS_FILE
    requests = _needed(
        finished, FINISHED_REQUESTS, path, "the undrafted rounds per request need the requests"
    )
    if requests <= 0:
        raise DataIntegrityError(
            f"{str(path)!r}: {FINISHED_REQUESTS}: no finished request; the undrafted rounds per "
            "request are unknown"
        )
    undrafted = (rounds - drafts) / requests
    return [count / drafts for count in counts], int(undrafted + 0.5)


def check_same_engine(run: ServedRun, table: StepTable) -> None:
    """The step table must come from the same engine, model and settings as the served run."""
    where = f"{str(table.directory)!r} vs {str(run.directory)!r}"
    mine, theirs = run.sidecar.get("identity") or {}, table.sidecar.get("identity") or {}
    for key in ("engine", "engine_version", "target", "draft"):
        if mine.get(key) != theirs.get(key):
            raise DataIntegrityError(f"{where}: identity.{key} differs: not the same engine/model")
    for key in ENGINE_SETTINGS:
        if run.settings.get(key) != table.settings.get(key):
            raise DataIntegrityError(
                f"{where}: engine_settings.{key} differs ({table.settings.get(key)!r} vs "
                f"{run.settings.get(key)!r})"
            )


def replay_run(
    run: ServedRun,
    table: StepTable,
    *,
    latency_column: str = "wall_ms",
    scale: float = 1.0,
    frontend: FrontEndCost | None = None,
    cache: Any = None,
) -> tuple[Any, EngineStepModel, dict[str, Any]]:
    """Replay ``run`` priced by ``table`` (and ``frontend``: a serving front end's cost per
    step, and per request before the engine sees it: each request reaches the replayed engine
    ``frontend.request_ms`` after the client's arrival, its TTFT and E2E counted from that
    arrival: ``run_replay``'s ``admission_ms``, as ``aisim replay --step-table`` replays it);
    returns (ReplayResult, step model, config). ``cache``: the
    primitive caches as the replay of the engine's previous served run left them
    (``model.cache``: one engine process serves a recording's runs in turn), None for a fresh
    engine."""
    from aisim import run_replay

    check_same_engine(run, table)
    admission = 0.0 if frontend is None else frontend.request_ms
    config = replay_config(run, table)
    settings = recorded_settings(run)
    model = EngineStepModel(
        table,
        int(settings["num_speculative_tokens"] or 0),
        latency_column=latency_column,
        scale=scale,
        frontend=frontend,
        cache=cache,
    )
    result = run_replay(
        config, base_dir=Path("."), forward_pass_model=model, admission_ms=admission
    )
    return result, model, config
