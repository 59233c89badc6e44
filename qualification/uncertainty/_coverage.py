"""Coverage of aisim's 90 % prediction intervals on the evidence the project has, held out:
the share of measured values that fall inside the interval predicted for them, with every
error distribution fitted on the other evidence only.

* **engine recordings** (``evidence/engine/*``, every served run): ``replay_intervals`` of the
  run's replay config priced by its recording's step table, with the cost-error samples of that
  recording left out (leave one recording out), the acceptance spread of the grid's counters
  (the rounds they counted) and the acceptance seed; judged per metric on the run's measured
  mean and p90 TTFT, TPOT, E2E and output throughput.
* **public GPU measurements** (``qualification/public/measurements.json``): the roofline's
  price times the 5-95 % range (nearest rank) of the roofline's cost-error ratios without the
  row's own sample (leave one row out): decode steps and EAGLE-3 round / STP ratios.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Final

import numpy as np

from aisim.uncertainty import CostErrorTable, Sources, load_cost_errors, quantile, replay_intervals

#: Engine metrics judged: interval metric -> (measured figure, label).
ENGINE_METRICS: Final = {
    "mean_ttft_ms": "mean TTFT",
    "p90_ttft_ms": "p90 TTFT",
    "mean_tpot_ms": "mean TPOT",
    "p90_tpot_ms": "p90 TPOT",
    "mean_e2e_ms": "mean E2E",
    "p90_e2e_ms": "p90 E2E",
    "output_throughput_tok_s": "output throughput",
}
LOW, HIGH = 0.05, 0.95


def measured_figures(run: Any) -> dict[str, float]:
    """A served run's measured figures, computed as aisim's summary computes its own (numpy's
    linear percentile over completed requests; TPOT of requests with more than one token)."""
    from qualification.engine import measured_latencies, throughput_tok_s

    latencies = measured_latencies(run)
    figures: dict[str, float] = {}
    for name in ("ttft", "tpot", "e2e"):
        values = np.asarray([v for v in latencies[name] if not math.isnan(v)], dtype=float)
        figures[f"mean_{name}_ms"] = float(values.mean())
        figures[f"p90_{name}_ms"] = float(np.percentile(values, 90))
    figures["output_throughput_tok_s"] = throughput_tok_s(
        latencies["output_tokens"], latencies["arrival"], latencies["finish"]
    )
    return figures


def engine_coverage(
    evidence_dir: Path, replicas: int = 20, seed: int = 0, table: CostErrorTable | None = None
) -> dict[str, Any]:
    """Per served run of every engine recording: the intervals and the measured figures."""
    from qualification.engine import (
        EngineStepModel,
        check_same_engine,
        grid_counts,
        load_recording,
        recorded_settings,
        replay_config,
    )

    evidence = table if table is not None else load_cost_errors()
    runs = []
    engine_dir = evidence_dir / "engine"
    folders = sorted(engine_dir.iterdir()) if engine_dir.is_dir() else []
    for folder in folders:
        if not folder.is_dir():
            continue
        recording = load_recording(folder)
        if recording.grid is None:
            continue
        held_out = evidence.excluding(f"evidence/engine/{folder.name}")
        for run in recording.served:
            check_same_engine(run, recording.grid)
            depth = int(recorded_settings(run)["num_speculative_tokens"] or 0)
            rounds = grid_counts(recording.grid, depth)[1] if depth else None
            report = replay_intervals(
                replay_config(run, recording.grid),
                replicas,
                seed=seed,
                sources=Sources(),
                table=held_out,
                acceptance_rounds=rounds,
                base_dir=Path("."),
                forward_pass_model=EngineStepModel(recording.grid, depth),
            )
            measured = measured_figures(run)
            judged = {}
            for name in ENGINE_METRICS:
                interval = report["metrics"][name]
                value = measured[name]
                judged[name] = {
                    "measured": value,
                    "point": interval["point"],
                    "low": interval["low"],
                    "high": interval["high"],
                    "inside": interval["low"] <= value <= interval["high"],
                }
            runs.append(
                {
                    "recording": folder.name,
                    "run": run.name,
                    "includes": report["includes"],
                    "cost_samples_from": sorted(
                        {s.source for s in held_out.for_estimator("engine-step-table")}
                    ),
                    "metrics": judged,
                }
            )
    per_metric = {
        name: _share([run["metrics"][name]["inside"] for run in runs]) for name in ENGINE_METRICS
    }
    return {"runs": runs, "coverage": per_metric, "replicas": replicas, "seed": seed}


def _share(flags: list[bool]) -> dict[str, Any]:
    share = sum(flags) / len(flags) if flags else None
    return {"inside": sum(flags), "judged": len(flags), "coverage": share}


def public_coverage(table: CostErrorTable | None = None) -> dict[str, Any]:
    """Leave-one-row-out intervals for every public row (roofline)."""
    from qualification.public import load_measurements, score

    evidence = table if table is not None else load_cost_errors()
    data = load_measurements()
    scored = {row["id"]: row for row in score("roofline")["rows"]}
    rows = []
    roofline = evidence.for_estimator("roofline")
    for row in data["decode_steps"]:
        others = [
            s.ratio
            for s in roofline
            if s.step_kind == "decode" and s.group != f"public/{row['id']}"
        ]
        result = scored[row["id"]]
        rows.append(_judged(row["id"], "decode_ms", result, others, row["role"]))
    setup = data["sd_round_setup"]
    for row in data["sd_round_ratios"]:
        others = [
            s.ratio
            for s in roofline
            if s.step_kind == "sd_round" and s.group != f"public/{row['id']}"
        ]
        result = scored[row["id"]]
        rows.append(_judged(row["id"], "round_over_stp", result, others, setup["role"]))
    per_quantity: dict[str, Any] = {}
    for quantity in ("decode_ms", "round_over_stp"):
        flags = [row["inside"] for row in rows if row["quantity"] == quantity]
        per_quantity[quantity] = _share(flags)
    return {"rows": rows, "coverage": per_quantity}


def _judged(
    row_id: str, quantity: str, result: dict[str, Any], others: list[float], role: str
) -> dict[str, Any]:
    predicted, measured = float(result["predicted"]), float(result["measured"])
    low = predicted * quantile(others, LOW)
    high = predicted * quantile(others, HIGH)
    return {
        "id": row_id,
        "quantity": quantity,
        "role": role,
        "measured": measured,
        "predicted": predicted,
        "low": low,
        "high": high,
        "samples": len(others),
        "inside": low <= measured <= high,
    }


def coverage(evidence_dir: Path, replicas: int = 20, seed: int = 0) -> dict[str, Any]:
    """Coverage on the engine recordings under ``evidence_dir/engine`` and the public rows,
    with the plan's figures: the lowest and highest per-metric coverage of each."""
    engine = engine_coverage(evidence_dir, replicas, seed)
    public = public_coverage()
    figures: dict[str, float] = {}
    for name, part in (("engine", engine), ("public", public)):
        shares = [item["coverage"] for item in part["coverage"].values()]
        if shares and all(share is not None for share in shares):
            figures[f"{name}_min_coverage"] = min(shares)
            figures[f"{name}_max_coverage"] = max(shares)
    return {
        "schema": {"name": "aisim.interval_coverage", "version": 1},
        "confidence": 0.90,
        "command": f"python -m qualification.uncertainty coverage --replicas {replicas} --seed {seed}",
        "engine": engine,
        "public": public,
        "figures": figures,
    }


def report_section(evidence_dir: Path) -> dict[str, Any]:
    """The release report's section (``aisim qualify report``): the coverage, or why not."""
    try:
        return {"status": "run", **coverage(evidence_dir)}
    except Exception as exc:  # the report lists a failed section instead of stopping
        return {"status": "not run", "reason": f"{type(exc).__name__}: {exc}"}


def to_markdown(result: dict[str, Any]) -> str:
    """Per-metric coverage tables (engine recordings, public rows) and the misses."""
    lines = [
        f"Coverage of the central {result['confidence']:.0%} intervals, held out "
        f"({result['engine']['replicas']} replicas, seed {result['engine']['seed']}):",
        "",
        "| evidence | metric | inside / judged | coverage |",
        "|---|---|---|---|",
    ]
    for part, labels in (("engine", ENGINE_METRICS), ("public", None)):
        for name, share in result[part]["coverage"].items():
            label = labels[name] if labels else name
            value = "n/a" if share["coverage"] is None else f"{share['coverage']:.0%}"
            lines.append(f"| {part} | {label} | {share['inside']} / {share['judged']} | {value} |")
    lines += ["", "Outside their interval:", ""]
    for run in result["engine"]["runs"]:
        for name, item in run["metrics"].items():
            if not item["inside"]:
                lines.append(
                    f"- {run['recording']}/{run['run']} {ENGINE_METRICS[name]}: measured "
                    f"{item['measured']:.4g}, interval [{item['low']:.4g}, {item['high']:.4g}]"
                )
    for row in result["public"]["rows"]:
        if not row["inside"]:
            lines.append(
                f"- {row['id']} {row['quantity']}: measured {row['measured']:.4g}, interval "
                f"[{row['low']:.4g}, {row['high']:.4g}] ({row['samples']} samples)"
            )
    return "\n".join(lines) + "\n"


#: Public GPU serving figures judged: measured key -> interval metric (whole-run, as replayed).
SERVING_METRICS: Final = {
    "median_ttft_ms": "p50_ttft_ms",
    "mean_tpot_ms": "mean_tpot_ms",
    "output_tput_per_gpu": "output_tok_s_per_gpu",
}


def public_gpu_coverage(
    evidence_dir: Path,
    replicas: int = 10,
    seed: int = 0,
    select: Any = None,
) -> dict[str, Any]:
    """Every public GPU serving point (``evidence/public-gpu``, the points ``select`` keeps)
    that ``qualification.public_gpu`` can replay: its whole-run median TTFT, mean TPOT and
    output tokens/s per GPU against their 90 % intervals (roofline cost errors from
    ``qualification/public/measurements.json``, a different source: held out by construction).
    A refused point is counted, not judged."""
    from aisim.sweep import Task, run_tasks
    from aisim.uncertainty import plan_draws, reduce
    from qualification.public_gpu import Refusal, load_points, replay_config

    points = load_points(evidence_dir / "public-gpu")
    if select is not None:
        points = [point for point in points if select(point)]
    table = load_cost_errors()
    judged = []
    refused = 0
    for point in points:
        try:
            config, _ = replay_config(point)
        except Refusal:
            refused += 1
            continue
        draws, setup = plan_draws(
            config, Path("."), replicas, seed=seed, sources=Sources(), table=table
        )
        rows: dict[int, dict[str, Any]] = {}
        tasks = [Task(0, config), *(Task(1 + d.replica, config, d) for d in draws)]
        run_tasks(tasks, ".", {}, rows.__setitem__, backend="pool", workers=1, address=None)
        if any(row.get("status") != "ok" for row in rows.values()):
            refused += 1
            continue
        reduced = reduce(rows[0], [rows[1 + i] for i in range(replicas)], SERVING_METRICS.values())
        metrics = {}
        for measured_key, name in SERVING_METRICS.items():
            value = point["measured"].get(measured_key)
            interval = reduced[name]
            if value is None or interval["low"] is None:
                continue
            metrics[measured_key] = {
                "measured": float(value),
                "point": interval["point"],
                "low": interval["low"],
                "high": interval["high"],
                "inside": interval["low"] <= float(value) <= interval["high"],
            }
        judged.append(
            {
                "id": point["id"],
                "includes": [n for n, s in setup.sources.items() if s["included"]],
                "metrics": metrics,
            }
        )
    per_metric = {
        key: _share([row["metrics"][key]["inside"] for row in judged if key in row["metrics"]])
        for key in SERVING_METRICS
    }
    return {
        "points": len(points),
        "refused": refused,
        "judged": judged,
        "coverage": per_metric,
        "replicas": replicas,
    }
