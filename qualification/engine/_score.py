"""Score a replay against an engine's served runs: per-request latency errors, throughput,
acceptance length, and the engine's own repeat noise beside every figure.

Definitions (ms, per request; the same as replay's): TTFT = first token - arrival, E2E = last
token - arrival, TPOT = (last - first token) / (output - 1) for outputs of 2+ tokens. Relative
error = (predicted - measured) / measured. Per metric: median and P90 of |relative error| (numpy's
linear percentiles), MAPE (mean |relative error|), signed bias (mean relative error), and the
error of the means. Throughput = output tokens / (last finish - first arrival). The noise floor
is the same figures computed between two served runs of the same trace (run B "predicting" run A).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from aisim.errors import DataIntegrityError
from aisim.replay import RunSummary
from qualification.engine._measured import (
    Latencies,
    MeasuredLatencies,
    host_slowdown,
    measured_latencies,
    step_cost_drift,
    throughput_tok_s,
)
from qualification.engine._recording import EngineRecording, ServedRun, StepTable
from qualification.engine._replay import observed_acceptance, replay_run

Metric = Literal["ttft", "tpot", "e2e"]
METRICS: tuple[Metric, ...] = ("ttft", "tpot", "e2e")


def error_figures(predicted: Sequence[float], measured: Sequence[float]) -> dict[str, Any]:
    """Figures of ``predicted`` against ``measured`` (pairs where measured > 0 and both are
    finite; percentages)."""
    pairs = [
        (float(p), float(m))
        for p, m in zip(predicted, measured, strict=True)
        if math.isfinite(float(p)) and math.isfinite(float(m)) and float(m) > 0
    ]
    if not pairs:
        return {"count": 0}
    pred = np.array([p for p, _ in pairs])
    meas = np.array([m for _, m in pairs])
    rel = (pred - meas) / meas
    absolute = np.abs(rel)
    return {
        "count": len(pairs),
        "median_abs_error_pct": float(np.median(absolute) * 100.0),
        "p90_abs_error_pct": float(np.percentile(absolute, 90) * 100.0),
        "mape_pct": float(np.mean(absolute) * 100.0),
        "bias_pct": float(np.mean(rel) * 100.0),
        "mean_predicted_ms": float(np.mean(pred)),
        "mean_measured_ms": float(np.mean(meas)),
        "mean_error_pct": float((np.mean(pred) - np.mean(meas)) / np.mean(meas) * 100.0),
    }


def _predicted(result: Any, order: list[str]) -> Latencies:
    """Replay's latencies in ``order`` (a front end's per-request cost already in TTFT and E2E:
    the replay counts them from the client's arrival, ``_replay.replay_run``)."""
    frame = result.requests.set_index(result.requests["request_id"].astype(str))
    missing = [rid for rid in order if rid not in frame.index]
    if missing:
        raise DataIntegrityError(f"replay lost request {missing[0]!r}")
    frame = frame.loc[order]
    if (frame["status"] != "completed").any():
        rid = frame.index[frame["status"] != "completed"][0]
        raise DataIntegrityError(f"replay did not complete request {rid!r}")
    return {
        "ttft": frame["ttft_ms"].astype(float).tolist(),
        "tpot": frame["tpot_ms"].astype(float).tolist(),
        "e2e": frame["e2e_latency_ms"].astype(float).tolist(),
        "arrival": frame["arrival_ms"].astype(float).tolist(),
        "finish": frame["last_token_ms"].astype(float).tolist(),
        "output_tokens": frame["output_tokens"].astype(int).tolist(),
    }


def compare(predicted: Latencies, measured: Latencies) -> dict[str, Any]:
    """Per-metric figures plus throughput error of one prediction against one measurement."""
    figures: dict[str, Any] = {
        metric: error_figures(predicted[metric], measured[metric]) for metric in METRICS
    }
    pred_tp = throughput_tok_s(
        predicted["output_tokens"], predicted["arrival"], predicted["finish"]
    )
    meas_tp = throughput_tok_s(measured["output_tokens"], measured["arrival"], measured["finish"])
    figures["throughput"] = {
        "predicted_tok_s": pred_tp,
        "measured_tok_s": meas_tp,
        "error_pct": (pred_tp - meas_tp) / meas_tp * 100.0,
    }
    return figures


def noise_floor(runs: Sequence[Latencies]) -> dict[str, Any] | None:
    """The same figures between every pair of served runs (later run as the 'prediction');
    per figure, the largest over pairs (the floor no model can be expected to beat)."""
    if len(runs) < 2:
        return None
    pairs = [compare(later, earlier) for earlier, later in itertools.combinations(runs, 2)]
    floor: dict[str, Any] = {"pairs": len(pairs)}
    for metric in METRICS:
        floor[metric] = {
            key: max(abs(pair[metric][key]) for pair in pairs)
            for key in ("median_abs_error_pct", "p90_abs_error_pct", "mape_pct", "mean_error_pct")
            if all(key in pair[metric] for pair in pairs)
        }
    floor["throughput"] = {"error_pct": max(abs(p["throughput"]["error_pct"]) for p in pairs)}
    return floor


def leave_one_out(values: Sequence[Sequence[float]]) -> list[dict[str, Any]]:
    """Per served run (``values[i]``: one metric per request, the same requests in the same
    order in every run), ``error_figures`` of the per-request mean of the *other* runs as its
    prediction: the engine predicting itself. Needs two runs or more."""
    runs = [np.asarray(run, dtype=float) for run in values]
    if len(runs) < 2:
        raise DataIntegrityError("the repeat floor needs two served runs or more")
    out = []
    for index, run in enumerate(runs):
        others = np.mean([other for j, other in enumerate(runs) if j != index], axis=0)
        out.append(error_figures(others.tolist(), run.tolist()))
    return out


def repeat_floor(runs: Sequence[Latencies]) -> dict[str, Any] | None:
    """Per metric, the mean over served runs of ``leave_one_out``'s median and P90 absolute
    error and its error of the mean (%): what a prediction of one latency per request reaches
    when it is the mean of two or more other runs of the same engine on the same trace. A
    perfect predictor of each request's expected latency would do a little better (the other
    runs' mean carries their own noise); replay at or below this floor predicts a run as well
    as the engine's other runs do."""
    if len(runs) < 2:
        return None
    floor: dict[str, Any] = {"runs": len(runs)}
    for metric in METRICS:
        figures = leave_one_out([run[metric] for run in runs])
        floor[metric] = {
            key: float(np.mean([f[key] for f in figures]))
            for key in ("median_abs_error_pct", "p90_abs_error_pct", "mean_error_pct")
            if all(key in f for f in figures)
        }
    return floor


def tokens_per_decode_round(run: ServedRun) -> float:
    """Observed: output tokens after each request's first / decode rounds (one per request per
    step it decoded in; drafted or not), from the served run's step table."""
    outputs = int(run.requests["output_tokens"].sum()) - len(run.requests)
    rounds = int(run.steps["num_decode_requests"].sum())
    return outputs / rounds if rounds else math.nan


def acceptance_figures(
    config: dict[str, Any],
    summary: RunSummary,
    observed: dict[str, Any] | None,
    table: StepTable,
) -> dict[str, Any]:
    """Acceptance length in vLLM's convention, 1 + accepted drafts / drafts, predicted (the
    grid's engine counters) and observed (the served run's). vLLM verifies all d drafts even in
    a request's last round and counts every accepted one (tokens past max_tokens are dropped
    afterwards), so the prediction is 1 + accepted / drafts of the grid; replay's own figure
    (tokens emitted per round, last rounds cut at the requested output) is kept beside it."""
    from qualification.engine._replay import engine_counters
    from qualification.engine._schema import METRICS_FILE

    predicted = None
    if config["engine"].get("speculation") is not None:
        grid = engine_counters(table.directory / METRICS_FILE)
        predicted = None if grid is None else float(grid["acceptance_length"])
    return {
        "observed": None if observed is None else observed["acceptance_length"],
        "predicted": predicted,
        "replay_emitted_per_round": summary.speculation.mean_acceptance_length,
        "observed_counters": observed,
    }


def score_recording(
    recording: EngineRecording, table: StepTable
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Replay every served run with ``table`` and score it; returns (report, per-request data)."""
    if not recording.served:
        raise DataIntegrityError(f"{str(recording.directory)!r}: no served runs to score")
    runs = []
    per_request: dict[str, Any] = {"runs": {}}
    measured_all = []
    predicted_all = None
    frontend = recording.frontend
    # One engine process served the runs in turn: each run's replay starts with the primitive
    # caches as the previous run's replay left them (the engine's history, replayed).
    cache: Any = None
    adjusted_cache: Any = None
    bare_cache: Any = None
    for index, run in enumerate(recording.served):
        result, model, config = replay_run(run, table, frontend=frontend, cache=cache)
        cache = model.cache
        measured = measured_latencies(run)
        predicted = _predicted(result, measured["request_id"])
        measured_all.append(measured)
        predicted_all = predicted
        figures = compare(predicted, measured)
        observed = observed_acceptance(run)
        summary = result.run_summary
        figures["acceptance_length"] = acceptance_figures(config, summary, observed, table)
        emitted = summary.speculation.mean_acceptance_length
        figures["tokens_per_decode_step"] = {
            "observed": tokens_per_decode_round(run),
            "predicted": 1.0 if emitted is None else float(emitted),
        }
        speculation = config["engine"].get("speculation") or {}
        if "undrafted_rounds" in speculation:
            figures["undrafted_rounds_per_request"] = {
                "observed": _undrafted_per_request(observed),
                "predicted": float(speculation["undrafted_rounds"]),
            }
        figures["host_slowdown"] = host_slowdown(run.steps)
        drift = step_cost_drift(run.steps, model)
        adjusted, adjusted_model, _ = replay_run(
            run,
            table,
            scale=drift if math.isfinite(drift) else 1.0,
            frontend=frontend,
            cache=adjusted_cache,
        )
        adjusted_cache = adjusted_model.cache
        figures["step_cost_drift"] = drift
        figures["drift_adjusted"] = compare(_predicted(adjusted, measured["request_id"]), measured)
        if frontend is not None:
            # The same replay priced as in process (the step table alone, no front end).
            bare, bare_model, _ = replay_run(run, table, cache=bare_cache)
            bare_cache = bare_model.cache
            figures["without_frontend"] = compare(
                _predicted(bare, measured["request_id"]), measured
            )
        figures["run"] = run.name
        figures["host_load"] = run.sidecar.get("host")
        figures["step_model"] = model.describe()
        figures["requests"] = request_rows(measured, predicted)
        # Per step kind, every served step's price error from the grid alone (no drift), for
        # error distributions; the same with the table alone beside it (step_diff, imported
        # here: the package imports this module, and `python -m ...step_diff` warns when the
        # package has imported step_diff before running it).
        from qualification.engine.step_diff import step_price_errors

        figures["step_errors"] = step_price_errors(run, table, recording.served[:index])
        runs.append(figures)
        per_request["runs"][run.name] = measured
    per_request["predicted"] = predicted_all
    settings = recording.served[0].settings
    report = {
        "recording": recording.name,
        "evidence_type": "engine-measurement",
        "step_table": str(table.directory),
        "step_table_host_slowdown": host_slowdown(table.steps[~table.steps["warmup"]]),
        "engine": recording.served[0].sidecar.get("identity", {}).get("engine_version"),
        "engine_name": recording.served[0].sidecar.get("identity", {}).get("engine"),
        "weights": recording.served[0].sidecar.get("identity", {}).get("weights"),
        "engine_settings": settings,
        "target_shape": recording.served[0].sidecar.get("identity", {}).get("target_shape"),
        "requests": len(recording.served[0].requests),
        "frontend": None if frontend is None else frontend.describe(),
        "runs": runs,
        "summary": _summary(runs),
        "acceptance_length": _mean_acceptance(runs),
        "tokens_per_decode_step": {
            key: float(np.mean([run["tokens_per_decode_step"][key] for run in runs]))
            for key in ("observed", "predicted")
        },
        "noise_floor": noise_floor(measured_all),
        "repeat_floor": repeat_floor(measured_all),
        "replay_config_settings": {k: v for k, v in config["engine"].items() if k != "workers"}
        | {"worker": config["engine"]["workers"]["aggregated"]},
    }
    return report, per_request


def request_rows(measured: MeasuredLatencies, predicted: Latencies) -> dict[str, list[Any]]:
    """Per request (trace order), the measured and the predicted latencies side by side, as
    columns (``engine.json`` ``runs[i].requests``): request id, output tokens, and ttft, tpot,
    e2e in ms (tpot null for a single-token output)."""
    rows: dict[str, list[Any]] = {
        "request_id": list(measured["request_id"]),
        "output_tokens": list(measured["output_tokens"]),
    }
    for metric in METRICS:
        rows[f"measured_{metric}_ms"] = list(measured[metric])
        rows[f"predicted_{metric}_ms"] = list(predicted[metric])
    return rows


def finite(value: Any) -> Any:
    """``value`` with every non-finite float (a figure that could not be computed, e.g. TPOT of
    a one-token output) replaced by None, so the report is valid JSON (null)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def _undrafted_per_request(counters: dict[str, Any] | None) -> float | None:
    """vLLM's decode rounds that drafted nothing per finished request (``ngram``), or None."""
    if (
        counters is None
        or not counters.get("num_requests")
        or counters["num_decode_rounds"] is None
    ):
        return None
    undrafted = counters["num_decode_rounds"] - counters["num_drafts"]
    return float(undrafted / counters["num_requests"])


def _mean_acceptance(runs: list[dict[str, Any]]) -> dict[str, Any]:
    observed = [run["acceptance_length"]["observed"] for run in runs]
    predicted = runs[0]["acceptance_length"]["predicted"] if runs else None
    if any(value is None for value in observed) or predicted is None:
        return {"observed": None, "predicted": predicted}
    mean = float(np.mean(observed))
    return {"observed": mean, "predicted": predicted, "error_pct": (predicted - mean) / mean * 100}


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean over served runs of each headline figure."""
    out: dict[str, Any] = {}
    for metric in METRICS:
        out[metric] = {
            key: float(np.mean([run[metric][key] for run in runs]))
            for key in (
                "median_abs_error_pct",
                "p90_abs_error_pct",
                "mape_pct",
                "bias_pct",
                "mean_error_pct",
            )
            if all(key in run[metric] for run in runs)
        }
    out["throughput_error_pct"] = float(np.mean([run["throughput"]["error_pct"] for run in runs]))
    if runs and "drift_adjusted" in runs[0]:
        out["drift_adjusted"] = _summary([run["drift_adjusted"] for run in runs])
    if runs and all("without_frontend" in run for run in runs):
        out["without_frontend"] = _summary([run["without_frontend"] for run in runs])
    if runs and all("step_errors" in run for run in runs):
        # The step model's own figure (issue 23): the largest |median served-step price error|
        # over the served runs and step kinds, the grid as the only input.
        medians = [
            abs(kind["median_pct"])
            for run in runs
            for kind in run["step_errors"]["summary"].values()
        ]
        if medians:
            out["step_price_median_error_max_pct"] = float(max(medians))
    if runs and "step_cost_drift" in runs[0]:
        # Evidence quality: how far the engine's speed during a served run was from its speed
        # while the step table was timed (1.00: the same), the worst run.
        out["step_cost_drift_max_deviation_pct"] = float(
            max(abs(run["step_cost_drift"] - 1.0) for run in runs) * 100.0
        )
    return out


def write_outputs(
    report: dict[str, Any], per_request: dict[str, Any], out: Path, *, overwrite: bool
) -> list[Path]:
    """Write engine.json, engine.md and the plots under ``out`` as one set (``write_together``:
    a failure part way leaves an earlier score whole, never this run's engine.json beside an
    earlier run's plots); every target is checked before anything is written (nothing is
    replaced without ``overwrite``)."""
    from aisim.files import canonical_json, check_writable, write_together
    from qualification.engine._render import plots, to_markdown

    images = plots(per_request)
    targets = [out / "engine.json", out / "engine.md", *(out / name for name in images)]
    for path in targets:
        check_writable(path, overwrite)
    files = {
        "engine.json": canonical_json(finite(report)).encode("utf-8"),
        "engine.md": to_markdown(report, sorted(images)).encode("utf-8"),
        **images,
    }
    write_together(out, files, overwrite=overwrite)
    return targets
