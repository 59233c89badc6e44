"""Build the replay of a served run from the engine's recorded settings, and run it.

The replay config carries exactly the settings read back from the engine (``ENGINE_SETTINGS``);
a recording that lacks one is refused, naming it. Passes are priced by an ``EngineStepModel``
over the step table of a *separate* recording (the grid), never the served run's own steps.
The SD acceptance given to replay is the one the grid's engine counters observed, read by
aisim's engine-metrics reader (``acceptance_from``, so the replay summary records the scrape's
SHA-256).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from aisim.errors import ConfigError, DataIntegrityError
from aisim.speculation import measure_engine_acceptance
from qualification.engine._prometheus import sum_samples
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


def observed_acceptance(metrics: dict[str, float]) -> dict[str, Any] | None:
    """vLLM's SD counters: drafts, draft tokens, accepted tokens and per-position acceptances,
    with acceptance length = 1 + accepted / drafts (vLLM's convention); None without SD."""
    drafts = sum_samples(metrics, "vllm:spec_decode_num_drafts_total")
    if drafts is None:
        drafts = sum_samples(metrics, "vllm:spec_decode_num_drafts")
    if not drafts:
        return None
    draft_tokens = sum_samples(metrics, "vllm:spec_decode_num_draft_tokens_total") or 0.0
    accepted = sum_samples(metrics, "vllm:spec_decode_num_accepted_tokens_total") or 0.0
    per_position: dict[int, float] = {}
    prefix = "vllm:spec_decode_num_accepted_tokens_per_pos_total{"
    for key, value in metrics.items():
        if key.startswith(prefix) and 'position="' in key:
            position = int(key.split('position="', 1)[1].split('"', 1)[0])
            per_position[position] = per_position.get(position, 0.0) + value
    rates = [per_position[p] / drafts for p in sorted(per_position)]
    return {
        "num_drafts": drafts,
        "num_draft_tokens": draft_tokens,
        "num_accepted_tokens": accepted,
        "unconditional_rates": rates,
        "acceptance_length": 1.0 + accepted / drafts,
    }


def replay_config(run: ServedRun, table: StepTable) -> dict[str, Any]:
    """The replay mapping for ``run``: traffic = the served trace's arrivals and lengths,
    scheduler and KV = the recorded engine settings, speculation = the recorded method and d
    with the acceptance observed on the grid's engine counters."""
    settings = recorded_settings(run)
    requests = [
        {
            "request_id": str(row["request_id"]),
            "timestamp": float(row["arrival_ms"]),
            "input_length": int(row["prompt_tokens"]),
            "output_length": int(row["output_tokens"]),
        }
        for row in run.requests.to_dict("records")
    ]
    worker: dict[str, Any] = {
        "scheduler": {
            "max_batched_tokens": int(settings["max_num_batched_tokens"]),
            "max_sequences": int(settings["max_num_seqs"]),
            "chunked_prefill": bool(settings["chunked_prefill"]),
        },
        "kv_cache": {
            "block_size": int(settings["block_size"]),
            "prefix_caching": bool(settings["prefix_caching"]),
            "capacity": {"type": "fixed", "blocks": int(settings["num_kv_blocks"])},
        },
        "timing": {"type": "fixed", "prefill_ms": 0.0, "decode_ms": 0.0},
    }
    engine: dict[str, Any] = {"backend": "vllm", "workers": {"aggregated": worker}}
    method = settings["speculative_method"]
    if method is not None:
        kind = SPECULATION_KINDS.get(str(method))
        if kind is None:
            raise DataIntegrityError(
                f"{str(run.directory)!r}: engine_settings.speculative_method: {method!r} has no "
                f"replay equivalent; known: {', '.join(SPECULATION_KINDS)}"
            )
        depth = int(settings["num_speculative_tokens"])
        speculation: dict[str, Any] = {
            "kind": kind,
            "params": {"num_speculative_tokens": depth},
            "acceptance_from": _grid_acceptance(table, depth),
            "seed": 0,
        }
        if kind == "draft_model":
            speculation["draft_model_path"] = "models/draft"
        engine["speculation"] = speculation
    return {
        "traffic": {"source": {"type": "agentic", "requests": requests}},
        "engine": engine,
    }


def _grid_acceptance(table: StepTable, depth: int) -> dict[str, Any]:
    """The grid's counters as an ``acceptance_from`` block, checked here (zero drafts, a
    per-position series of another depth, inconsistent counters) so a bad recording is a
    DataIntegrityError naming the file before any replay."""
    path = table.directory / METRICS_FILE
    try:
        measure_engine_acceptance(path, "vllm-prometheus").profile(depth, repr(str(path)))
    except ConfigError as exc:
        raise DataIntegrityError(f"grid engine counters: {exc}") from None
    return {"path": str(path), "format": "vllm-prometheus"}


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
    run: ServedRun, table: StepTable, *, latency_column: str = "wall_ms", scale: float = 1.0
) -> tuple[Any, EngineStepModel, dict[str, Any]]:
    """Replay ``run`` priced by ``table``; returns (ReplayResult, step model, config)."""
    from aisim.config._replay import build_plan
    from aisim.fpm import ForwardPassMetrics
    from aisim.replay._engine import Simulation
    from aisim.replay._pricing import PassPricer
    from aisim.replay._run import ReplayResult
    from aisim.replay._summary import distributions, request_columns, summarize

    check_same_engine(run, table)
    config = replay_config(run, table)
    settings = recorded_settings(run)
    model = EngineStepModel(
        table,
        int(settings["num_speculative_tokens"] or 0),
        latency_column=latency_column,
        scale=scale,
    )
    plan, description = build_plan(config, Path("."))
    pricer = PassPricer.from_model(model, ForwardPassMetrics, True)
    plan = dataclasses.replace(
        plan, workers=[dataclasses.replace(worker, pricer=pricer) for worker in plan.workers]
    )
    result = Simulation(plan, None, 50_000).run()
    columns = request_columns(result.log.records)
    summary = summarize(result, description)
    return ReplayResult(summary, columns, None, distributions(result)), model, config
