"""Coverage of aisim's 90 % prediction intervals on the evidence the project has, held out:
the share of measured values that fall inside the interval predicted for them, with every
error distribution fitted on the other evidence only.

* **engine recordings** (``evidence/engine/*``, every served run): ``replay_intervals`` of the
  run's replay config priced by its recording's step table (and its serving front end's cost
  where the recording has a front-end model, ``frontend/frontend_model.json``: per step in the
  price, per request before the engine sees it, ``admission_ms``, as ``aisim qualify engine``
  replays it: TTFT and E2E from the client's arrival), with the cost-error samples of that
  recording left out (leave one recording out), the acceptance spread of the grid's counters
  (the rounds they counted) and the acceptance seed; judged per metric on the run's measured
  mean and p90 TTFT, TPOT, E2E and output throughput.
* **public GPU serving runs** (``evidence/public-gpu``, as ``aisim qualify public-gpu`` scored
  them: ``scored/public_gpu_rows.csv``): each held-out point's predicted median TTFT, mean TPOT
  and output tokens/s per GPU times the 5-95 % range (nearest rank) of measured / predicted of
  the same figure on the InferenceX history rows the roofline's GPU terms were fitted on (the
  rows the cost-error table's GPU ``decode`` and ``prefill`` samples come from). Judged on the
  points no fitted term and no sample saw: the InferenceX latest file and the speculators
  sweep. The plan's figure is over the points without SD; the SD points are shown by group
  (InferenceX records no acceptance, so its MTP points replay an assumed one; the GPU SD-round
  evidence is 6 step-level rows).
* **public GPU step rows** (``qualification/public/measurements.json``): each row (leave one
  row out) against the 90 % prediction interval of a new ratio from the cost-error samples of
  the same step kind and regime, the other step rows (decode steps of a dense 7-8B model at
  batch <= 8 on H100/H200; EAGLE-3 round / STP ratios on H100 at batch 1): log-normal with
  Student's t, exp(mean +/- t(0.95, n - 1) sd sqrt(1 + 1/n)) of the other n = 5 rows' log
  ratios (``prediction_interval``). The 5-95 % (nearest rank) of 5 values is their min-max,
  which holds a sixth value drawn like them with probability 4/6 only. The decode rows are also
  shown against the cost source's pooled decode samples (the InferenceX history serving TPOT
  ratios, another regime), which is what a replay draws.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Collection
from pathlib import Path
from typing import Any, Final

import numpy as np

from aisim.uncertainty import (
    CostErrorTable,
    Sources,
    load_cost_errors,
    plan_draws,
    quantile,
    reduce,
    replay_intervals,
)

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
    linear percentile over completed requests; TPOT of requests with more than one token;
    throughput over first arrival to last finish)."""
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
    figures["request_throughput_rps"] = throughput_tok_s(
        [1] * len(latencies["finish"]), latencies["arrival"], latencies["finish"]
    )
    return figures


def engine_coverage(
    evidence_dir: Path,
    replicas: int = 20,
    seed: int = 0,
    table: CostErrorTable | None = None,
    sources: Sources | None = None,
) -> dict[str, Any]:
    """Per served run of every engine recording: the intervals and the measured figures
    (``sources``: what the replicas draw, default all)."""
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
        frontend = recording.frontend
        admission = 0.0 if frontend is None else float(frontend.request_ms)
        borrowed = frontend_borrowed(folder)
        # One engine process served the runs in turn: the point and every replica of a run
        # start with the primitive caches the previous run's point replay left (as ``aisim
        # qualify engine`` replays them), each on its own copy: a model shared by the replays
        # would hand each replica the caches the one before it left, warmer than the engine's.
        cache: Any = None
        for run in recording.served:
            check_same_engine(run, recording.grid)
            depth = int(recorded_settings(run)["num_speculative_tokens"] or 0)
            rounds = grid_counts(recording.grid, depth)[1] if depth else None
            models: list[Any] = []
            fresh = functools.partial(
                _fresh_model, models, EngineStepModel, recording.grid, depth, frontend, cache
            )
            report = replay_intervals(
                replay_config(run, recording.grid),
                replicas,
                seed=seed,
                sources=Sources() if sources is None else sources,
                table=held_out,
                acceptance_rounds=rounds,
                base_dir=Path("."),
                model_factory=fresh,
                frontend_borrowed=borrowed,
                admission_ms=admission,
            )
            # The first model built prices the point (``replay_intervals``): its caches are
            # the engine's after this run.
            cache = models[0].cache
            measured = measured_figures(run)
            judged = {}
            for name in ENGINE_METRICS:
                interval = report["metrics"][name]
                point, low, high = (
                    float(interval["point"]),
                    float(interval["low"]),
                    float(interval["high"]),
                )
                value = measured[name]
                judged[name] = {
                    "measured": value,
                    "point": point,
                    "low": low,
                    "high": high,
                    "inside": low <= value <= high,
                }
            runs.append(
                {
                    "recording": folder.name,
                    "run": run.name,
                    "frontend": None if frontend is None else frontend.describe(),
                    "frontend_borrowed": borrowed,
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


def _fresh_model(
    built: list[Any], kind: Any, grid: Any, depth: int, frontend: Any, cache: Any
) -> object:
    """A step-table model (``kind``: ``EngineStepModel``) of ``grid`` at ``depth`` starting
    with its own copy of ``cache`` (None: empty), appended to ``built``."""
    model = kind(grid, depth, frontend=frontend, cache=copy.deepcopy(cache))
    built.append(model)
    return model


def frontend_borrowed(folder: Path) -> bool:
    """Whether the recording's front-end model (``frontend/frontend_model.json``) was derived
    from other recordings' probes (``derived_from.probe``, or each ``derived_from.probes[]``
    of a pooled model, names the recording first): the older ``vllm serve`` recordings, which
    have no probe of their own. False without a model."""
    import json

    from aisim.fpm import FRONTEND_FILE
    from qualification.engine.frontend_cpu import model_probes

    file = folder / FRONTEND_FILE
    if not file.is_file():
        return False
    from aisim.errors import DataIntegrityError

    try:
        probes = model_probes(json.loads(file.read_text(encoding="utf-8")))
    except DataIntegrityError as exc:
        raise DataIntegrityError(f"{str(file)!r}: {exc}") from None
    return folder.name not in probes


def _share(flags: list[bool]) -> dict[str, Any]:
    share = sum(flags) / len(flags) if flags else None
    return {"inside": sum(flags), "judged": len(flags), "coverage": share}


def _shares(
    judged: list[dict[str, Any]], names: Collection[str]
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Coverage of judged points per group and metric, and per metric over the points the plan
    judges (``judged_for_plan``)."""

    def share(name: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
        return _share([r["metrics"][name]["inside"] for r in rows if name in r["metrics"]])

    groups = sorted({row["group"] for row in judged})
    per_group = {
        group: {name: share(name, [r for r in judged if r["group"] == group]) for name in names}
        for group in groups
    }
    for_plan = [r for r in judged if r["judged_for_plan"]]
    per_metric = {name: share(name, for_plan) for name in names}
    return per_group, per_metric


#: The step rows' source in the cost-error table (``ErrorSample.source`` prefix).
STEP_ROWS: Final = "qualification/public/measurements.json"
CONFIDENCE: Final = 0.90


def prediction_interval(ratios: list[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The central ``confidence`` prediction interval of one more ratio drawn like ``ratios``
    (at least two), taken as log-normal with unknown mean and spread: exp(m +/- t s sqrt(1 +
    1/n)), m and s the mean and sample standard deviation of the n log ratios, t Student's
    quantile at (1 + confidence) / 2 with n - 1 degrees of freedom."""
    from scipy.stats import t as student

    if len(ratios) < 2:
        raise ValueError(f"prediction interval: needs >= 2 ratios, got {len(ratios)}")
    logs = np.log(np.asarray(ratios, dtype=float))
    count = len(logs)
    half = (
        float(student.ppf((1.0 + confidence) / 2.0, count - 1))
        * float(logs.std(ddof=1))
        * math.sqrt(1.0 + 1.0 / count)
    )
    mean = float(logs.mean())
    return math.exp(mean - half), math.exp(mean + half)


def public_coverage(
    table: CostErrorTable | None = None, root: Path | None = None
) -> dict[str, Any]:
    """Held-out intervals for every public step row (roofline; module doc): each row against
    the 90 % prediction interval from the other step rows of its kind (its regime's samples,
    its own left out); decode rows also against the pooled GPU serving decode samples. With
    the repository ``root``, the round / STP quantity also judges the round / plain-step
    ratios of the public serving sweep's held-out SD points (``serving_round_ratios``) against
    the interval of every round / STP step row."""
    from qualification.public import load_measurements, score

    evidence = table if table is not None else load_cost_errors()
    data = load_measurements()
    # Priced as the cost-error table's samples are: the round / STP rows with their engine's
    # version term, judged only where the term did not see them (``seen_by`` empty); without
    # the measured step host time (``step_host=False``, as the table was built).
    scored = {
        row["id"]: row for row in score("roofline", version_terms=True, step_host=False)["rows"]
    }
    rows = []
    roofline = evidence.for_estimator("roofline")
    serving_decode = [
        s.ratio
        for s in roofline
        if s.step_kind == "decode" and s.source.startswith(PUBLIC_GPU_ROWS)
    ]

    def siblings(kind: str, row_id: str) -> list[float]:
        return [
            s.ratio
            for s in roofline
            if s.step_kind == kind
            and s.source.startswith(STEP_ROWS)
            and s.group != f"public/{row_id}"
        ]

    for row in data["decode_steps"]:
        result = scored[row["id"]]
        judged = _judged(row["id"], "decode_ms", result, siblings("decode", row["id"]), row["role"])
        pooled = _judged(row["id"], "decode_ms", result, serving_decode, row["role"], False)
        judged["pooled_serving"] = {
            key: pooled[key] for key in ("low", "high", "samples", "inside")
        }
        rows.append(judged)
    setup = data["sd_round_setup"]
    for row in data["sd_round_ratios"]:
        result = scored[row["id"]]
        if result["seen_by"]:
            continue
        others = siblings("sd_round", row["id"])
        rows.append(_judged(row["id"], "round_over_stp", result, others, setup["role"]))
    # The public serving sweep's round / plain-step ratios, held out from every fitted term,
    # against what a replay draws: all the step rows' round / STP samples.
    step_rounds = [
        s.ratio for s in roofline if s.step_kind == "sd_round" and s.source.startswith(STEP_ROWS)
    ]
    if root is not None and len(step_rounds) >= 2:
        for derived in serving_round_ratios(root):
            judged = _judged(
                derived["id"], "round_over_stp", derived, step_rounds, "held-out serving point"
            )
            judged["derived_from"] = derived["derived_from"]
            rows.append(judged)
    per_quantity: dict[str, Any] = {}
    for quantity in ("decode_ms", "round_over_stp"):
        flags = [row["inside"] for row in rows if row["quantity"] == quantity]
        per_quantity[quantity] = _share(flags)
    pooled_flags = [row["pooled_serving"]["inside"] for row in rows if "pooled_serving" in row]
    return {
        "rows": rows,
        "coverage": per_quantity,
        "interval": (
            "90 % prediction interval of a new ratio from the other rows of the same step kind "
            "and regime (leave one row out): log-normal with Student's t, exp(mean +/- "
            "t(0.95, n - 1) sd sqrt(1 + 1/n)) of their log ratios"
        ),
        "samples_from": {
            "decode_ms": (
                f"{STEP_ROWS}: the other decode step rows (dense 7-8B models at batch <= 8 on "
                "H100/H200, validation rows of the cost-error table)"
            ),
            "round_over_stp": (
                f"{STEP_ROWS}: the other EAGLE-3 round / STP rows (H100, batch 1) the vLLM "
                "mid-2025 version term did not see (k = 4..7), priced with that term; for the "
                "serving sweep's round / plain-step ratios (serving_round_ratios), all of them"
            ),
        },
        "decode_against_pooled_serving": {
            "samples_from": PUBLIC_GPU_ROWS + " (InferenceX history rows, no SD: 5-95 %, "
            "nearest rank; what a replay's cost source draws for a decode step)",
            **_share(pooled_flags),
        },
    }


def serving_round_ratios(root: Path) -> list[dict[str, Any]]:
    """Round / plain-step ratios of the public serving sweep (``evidence/public-gpu``, the
    speculators Qwen3.8-27B sweep on one B200 under vLLM, as ``aisim qualify public-gpu`` scored
    it): per SD point (MTP, DSpark) whose point and no-SD partner (same dataset and number of
    streams) no fitted term saw (``fitted_terms.json``: the main fit's, the ``hybrid`` and the
    ``dspark`` blocks' ``training_ids``), measured round / plain step = TPOT x acceptance
    length / the partner's TPOT (a round emits the acceptance length's tokens per request, a
    plain step one, at the same batch of streams), and the replay's the same way (its
    acceptance is configured at the measured length, which cancels): ``measured`` and
    ``predicted``, so measured / predicted is the ratio of the two points' TPOT errors."""
    import csv
    import json

    from qualification.public_gpu import load_points

    with (root / PUBLIC_GPU_ROWS).open(encoding="utf-8", newline="") as handle:
        scored = {row["id"]: row for row in csv.DictReader(handle)}
    fitted = json.loads((root / "evidence/public-gpu/fitted_terms.json").read_text("utf-8"))
    seen = set(fitted["training_ids"])
    for block in ("hybrid", "dspark"):
        seen |= set(fitted.get(block, {}).get("training_ids", []))
    points = [
        p
        for p in load_points(root / "evidence/public-gpu")
        if p["source"] == "speculators" and not p["diagnostic"]
    ]
    plain = {(p["dataset"], p["conc"]): p for p in points if p["sd"] == "none"}
    found = []
    for point in sorted(points, key=lambda p: (p["sd"], p["dataset"], p["conc"])):
        partner = plain.get((point["dataset"], point["conc"]))
        if point["sd"] == "none" or partner is None or point["acceptance_length"] is None:
            continue
        if point["id"] in seen or partner["id"] in seen:
            continue
        sd_row, plain_row = scored.get(point["id"]), scored.get(partner["id"])
        if sd_row is None or plain_row is None:
            continue
        length = float(point["acceptance_length"])
        found.append(
            {
                "id": point["id"],
                "measured": float(sd_row["mean_tpot_ms_measured"])
                * length
                / float(plain_row["mean_tpot_ms_measured"]),
                "predicted": float(sd_row["mean_tpot_ms_predicted"])
                * length
                / float(plain_row["mean_tpot_ms_predicted"]),
                "derived_from": f"{point['id']} over {partner['id']} ({PUBLIC_GPU_ROWS})",
            }
        )
    return found


#: The scored public GPU rows and the figures judged on them (measured / predicted columns).
PUBLIC_GPU_ROWS: Final = "evidence/public-gpu/scored/public_gpu_rows.csv"
SERVING_FIGURES: Final = {
    "median_ttft_ms": "median TTFT",
    "mean_tpot_ms": "TPOT (mean, else median)",
    "output_tput_per_gpu": "output tokens/s per GPU",
}
#: A figure missing from a row is read from this one (InferenceX history has median TPOT only).
FALLBACK: Final = {"mean_tpot_ms": "median_tpot_ms"}
#: Figures judged per engine where the fitted rows lack the engine (``serving_coverage``).
ENGINE_TTFT: Final = ("median_ttft_ms",)


def serving_coverage(root: Path) -> dict[str, Any]:
    """Held-out coverage of the public GPU serving points (module doc): the 5-95 % range of
    each figure's measured / predicted on the fitted InferenceX history rows, applied to every
    other scored point's prediction."""
    import csv
    import json

    with (root / PUBLIC_GPU_ROWS).open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    artefact = json.loads((root / "evidence/public-gpu/fitted_terms.json").read_text("utf-8"))
    training = set(artefact["training_ids"])
    # The hybrid terms' training points (the Qwen3.8-27B HumanEval no-SD and MTP points) and
    # the DSpark term's (its HumanEval DSpark points at 1..64 streams) are not held out either.
    hybrid_training = set(artefact.get("hybrid", {}).get("training_ids", []))
    hybrid_training |= set(artefact.get("dspark", {}).get("training_ids", []))

    def figures(row: dict[str, str], name: str) -> tuple[float, float] | None:
        for column in (name, FALLBACK.get(name)):
            measured, predicted = row.get(f"{column}_measured"), row.get(f"{column}_predicted")
            if measured and predicted and float(predicted) > 0:
                return float(measured), float(predicted)
        return None

    def ratio(row: dict[str, str], name: str) -> float | None:
        found = figures(row, name)
        return None if found is None else found[0] / found[1]

    fitted = [
        row for row in rows if row["source"] == "inferencex-history" and row["id"] in training
    ]
    ranges = {}
    for name in SERVING_FIGURES:
        ratios = [r for r in (ratio(row, name) for row in fitted) if r is not None]
        if ratios:
            ranges[name] = (quantile(ratios, LOW), quantile(ratios, HIGH), len(ratios))
    fitted_engines = sorted({row.get("engine", "") for row in fitted})
    held_out = [
        row
        for row in rows
        if row["source"] in ("inferencex-latest", "speculators")
        and row["id"] not in training | hybrid_training
    ]

    def group(row: dict[str, str]) -> str:
        return f"{row['source']}/{row['sd']}"

    engine_ranges: dict[str, dict[str, Any]] = {}

    def range_of(row: dict[str, str], name: str) -> tuple[float, float, int, str] | None:
        """The ratio range judging ``row``'s figure ``name``: the fitted rows', or for TTFT of
        an engine they lack, that engine's held-out points of the other groups."""
        engine = row.get("engine", "")
        if name not in ENGINE_TTFT or engine in fitted_engines:
            if name not in ranges:
                return None
            return (*ranges[name], "fitted InferenceX history rows")
        others = [r for r in held_out if r.get("engine", "") == engine and group(r) != group(row)]
        ratios = [v for v in (ratio(r, name) for r in others) if v is not None]
        if not ratios:
            return None
        source = (
            f"{row['engine']} points of "
            + ", ".join(sorted({group(r) for r in others}))
            + " (the point's own group left out)"
        )
        found = (quantile(ratios, LOW), quantile(ratios, HIGH), len(ratios), source)
        engine_ranges.setdefault(engine, {})[group(row)] = {
            "p05": found[0],
            "p95": found[1],
            "rows": found[2],
            "from": source,
        }
        return found

    judged: list[dict[str, Any]] = []
    for row in held_out:
        metrics = {}
        for name in SERVING_FIGURES:
            found = figures(row, name)
            bounds = range_of(row, name)
            if found is None or bounds is None:
                continue
            measured, predicted = found
            value = measured / predicted
            low, high, _, source = bounds
            metrics[name] = {
                "measured": measured,
                "point": predicted,
                "low": predicted * low,
                "high": predicted * high,
                "inside": low <= value <= high,
                "range_from": source,
            }
        judged.append(
            {
                "id": row["id"],
                "group": group(row),
                "judged_for_plan": row["sd"] == "none",
                "metrics": metrics,
            }
        )
    by_group, coverage = _shares(judged, SERVING_FIGURES)
    return {
        "fitted_on": (
            f"{len(fitted)} InferenceX history rows without SD that the roofline's GPU terms were "
            "fitted on (evidence/public-gpu/fitted_terms.json training_ids)"
        ),
        "judged_on": (
            "InferenceX latest and speculators points that no fitted term and no cost-error "
            "sample saw (training_ids left out)"
        ),
        "plan_figure": (
            "points without SD; SD points are shown by group: InferenceX's MTP points replay an "
            "assumed acceptance, and the GPU SD-round evidence is 6 step-level rows"
        ),
        "ratio_ranges": {
            name: {"p05": low, "p95": high, "rows": count}
            for name, (low, high, count) in ranges.items()
        },
        "ttft_ranges_by_engine": {
            "why": (
                "median TTFT of an engine without fitted rows (the roofline's per-request "
                "overhead is fitted per engine, on the InferenceX history's SGLang and "
                "TensorRT-LLM only): the fitted rows say nothing of its time before the first "
                "token, so its points are judged on the TTFT ratios of that engine's held-out "
                "points in the other groups (SD changes the prefill by its drafter's pass only; "
                "TPOT and throughput, which SD changes, keep the fitted rows' ranges)"
            ),
            "fitted_engines": fitted_engines,
            "ranges": engine_ranges,
        },
        "coverage": coverage,
        "coverage_by_group": by_group,
        "points": judged,
    }


def _judged(
    row_id: str,
    quantity: str,
    result: dict[str, Any],
    others: list[float],
    role: str,
    predictive: bool = True,
) -> dict[str, Any]:
    """A step row against ``others``' ratios: their ``prediction_interval`` (``predictive``) or
    their 5-95 % range (nearest rank), times the row's predicted value."""
    predicted, measured = float(result["predicted"]), float(result["measured"])
    if predictive:
        low_ratio, high_ratio = prediction_interval(others)
    else:
        low_ratio, high_ratio = quantile(others, LOW), quantile(others, HIGH)
    low = predicted * low_ratio
    high = predicted * high_ratio
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
    public = public_coverage(root=evidence_dir.parent)
    serving = serving_coverage(evidence_dir.parent)
    replayed = replayed_coverage(evidence_dir)
    figures: dict[str, float] = {}
    parts = (
        ("engine", engine),
        ("public", serving),
        ("public_step", public),
        ("public_replayed", replayed),
    )
    for name, part in parts:
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
        "public_gpu_serving": serving,
        "public_gpu_replayed": replayed,
        "figures": figures,
    }


#: What a replayed coverage run depends on beyond the code (``replay_inputs``): the points, the
#: fitted terms, the scored run (rewritten whenever the GPU pricing changes) and the cost errors.
REPLAY_INPUTS: Final = (
    "evidence/public-gpu/inferencex_dsr1_h100_h200_b200.json",
    "evidence/public-gpu/speculators_qwen3_8_27b_b200_vllm_sd.json",
    "evidence/public-gpu/fitted_terms.json",
    PUBLIC_GPU_ROWS,
    "aisim/uncertainty/cost_errors.v1.json",
)


def replay_inputs(root: Path) -> dict[str, str]:
    """SHA-256 of each of ``REPLAY_INPUTS`` under the repository ``root``."""
    import hashlib

    return {
        name: hashlib.sha256((root / name).read_bytes()).hexdigest()
        for name in REPLAY_INPUTS
        if (root / name).is_file()
    }


#: The committed runs of ``coverage-public-gpu`` (one JSON file per run, ``--out``).
REPLAYED_DIR: Final = "public-gpu/replayed-intervals"


def replayed_coverage(evidence_dir: Path) -> dict[str, Any]:
    """The committed replayed-interval coverage of the public GPU serving points
    (``evidence/public-gpu/replayed-intervals/*.json``, each written by ``python -m
    qualification.uncertainty coverage-public-gpu --out``: too slow for the report to rerun),
    pooled per figure over the points each run counts in the plan's figure
    (``judged_for_plan``), with and without the ``overhead`` source's draw; each run says
    whether the inputs it was replayed from are still the committed ones (``current``)."""
    import json

    folder = evidence_dir / REPLAYED_DIR
    now = replay_inputs(evidence_dir.parent)
    runs = []
    judged: list[dict[str, Any]] = []
    for file in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        document = json.loads(file.read_text(encoding="utf-8"))
        runs.append(
            {
                "file": f"evidence/{REPLAYED_DIR}/{file.name}",
                "command": document["command"],
                "replicas": document["replicas"],
                "seed": document["seed"],
                "points": len(document["judged"]),
                # False: an input changed since the run (the GPU pricing was refitted, the
                # cost errors rebuilt): rerun its command.
                "current": document.get("inputs") == now,
            }
        )
        judged.extend(document["judged"])
    by_group, per_metric = _shares(judged, SERVING_METRICS)
    ablated = [
        {**row, "metrics": {k: v["without_overhead"] for k, v in row["metrics"].items()}}
        for row in judged
    ]
    plain_group, plain_metric = _shares(ablated, SERVING_METRICS)
    return {
        "runs": runs,
        "plan_figure": (
            "every judged point whose run counts it (judged_for_plan): an InferenceX MTP point "
            "(its acceptance fitted on H200 history pairs) counts where its interval drew the "
            "fitted acceptance's spread (the acceptance source on)"
        ),
        "coverage": per_metric if judged else {},
        "coverage_by_group": by_group,
        "coverage_without_overhead": plain_metric if judged else {},
        "coverage_by_group_without_overhead": plain_group,
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
    parts = (
        ("engine", "engine", ENGINE_METRICS),
        ("public GPU serving, no SD", "public_gpu_serving", SERVING_FIGURES),
        ("public GPU step rows", "public", None),
        ("public GPU serving, replayed", "public_gpu_replayed", SERVING_FIGURES),
    )
    for label_part, part, labels in parts:
        for name, share in result[part]["coverage"].items():
            label = labels[name] if labels else name
            value = "n/a" if share["coverage"] is None else f"{share['coverage']:.0%}"
            lines.append(
                f"| {label_part} | {label} | {share['inside']} / {share['judged']} | {value} |"
            )
    lines += ["", "Public GPU serving points by group (the plan's figure is over no SD):", ""]
    lines += ["| group | " + " | ".join(SERVING_FIGURES.values()) + " |"]
    lines += ["|---|" + "---|" * len(SERVING_FIGURES)]
    for group, shares in result["public_gpu_serving"]["coverage_by_group"].items():
        cells = [
            f"{item['inside']} / {item['judged']}"
            + ("" if item["coverage"] is None else f" ({item['coverage']:.0%})")
            for item in shares.values()
        ]
        lines.append(f"| {group} | " + " | ".join(cells) + " |")
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


#: Public GPU serving figures judged (as ``qualification.public_gpu`` figures a replay: whole
#: run for InferenceX, the steady window for speculators, each with its engine's fitted
#: per-request overhead).
SERVING_METRICS: Final = ("median_ttft_ms", "mean_tpot_ms", "output_tput_per_gpu")
#: Held out from every fitted term and every cost-error sample: the InferenceX latest file and
#: the speculators sweep (the samples come from InferenceX history rows only), less the
#: speculators points the hybrid and DSpark terms were fitted on (``fitted_terms.json``, ``hybrid``,
#: ``dspark``).
HELD_OUT_SOURCES: Final = ("inferencex-latest", "speculators")


def _replica_figures(job: tuple[dict[str, Any], Any, dict[str, Any], float]) -> dict[str, Any]:
    """One replay (the point run when the draw is None) figured as ``public_gpu`` figures it."""
    from aisim.config import run_replay
    from aisim.errors import AisimError
    from qualification.public_gpu import replay_figures

    point, draw, config, overhead = job
    try:
        result = run_replay(config) if draw is None else draw.run(config, Path("."))
    except AisimError as exc:
        return {"error": str(exc)}
    # The ``overhead`` source's draw: the replica's per-request overhead is the fitted one plus
    # one fitted point's error (in every TTFT and, for InferenceX, in the run's length).
    # The same replica figured with the fitted overhead alone is kept beside it, so one run
    # shows what the source adds (``coverage_without_overhead``).
    drawn = overhead if draw is None else overhead + draw.overhead_ms
    figures = replay_figures(result, point, int(point["gpus"]), drawn)
    if drawn != overhead:
        figures["without_overhead"] = replay_figures(result, point, int(point["gpus"]), overhead)
    return figures


def public_gpu_coverage(
    evidence_dir: Path,
    replicas: int = 10,
    seed: int = 0,
    select: Any = None,
    workers: int = 1,
    table: CostErrorTable | None = None,
    sources: Sources | None = None,
    command: str | None = None,
) -> dict[str, Any]:
    """Every held-out public GPU serving point (``evidence/public-gpu``: the InferenceX latest
    file and the speculators sweep, those ``select`` keeps) that ``qualification.public_gpu``
    can replay: the point and ``replicas`` replicas (all sources; the roofline's cost errors of
    the committed table, whose GPU samples are InferenceX history rows only), each figured as
    ``public_gpu`` figures a replay, so the interval is of the very figure it scores: whole-run
    median TTFT (with the fitted per-request overhead), mean TPOT and output tokens/s per GPU.
    Judged per metric and per group (source x SD); a refused point is counted, not judged.
    The InferenceX MTP points replay an acceptance fitted on H200 history pairs (InferenceX
    records none); the ``acceptance`` source draws its spread (``acceptance_spreads``: one
    leave-one-out residual of the fit's training pairs per replica), and a point counts in the
    plan's figure (``judged_for_plan``) only where its interval drew it."""
    import multiprocessing

    from qualification.public_gpu import (
        Refusal,
        acceptance_spreads,
        load_fitted,
        load_points,
        replay_config,
        request_overheads,
        workload_key,
    )

    folder = evidence_dir / "public-gpu"
    fitted = load_fitted(folder)
    # The hybrid terms' training points (Qwen3.8-27B HumanEval, no SD and MTP) and the DSpark
    # term's (HumanEval DSpark at 1..64 streams) are not held out.
    seen = set(fitted.get("hybrid", {}).get("training_ids", []))
    seen |= set(fitted.get("dspark", {}).get("training_ids", []))
    points = [
        p for p in load_points(folder) if p["source"] in HELD_OUT_SOURCES and p["id"] not in seen
    ]
    if select is not None:
        points = [point for point in points if select(point)]
    overheads = request_overheads(fitted)
    # The InferenceX MTP points' fitted acceptance: the leave-one-out residuals of its H200
    # training pairs (the ``acceptance`` source draws one per replica).
    spreads = acceptance_spreads(folder)
    evidence = table if table is not None else load_cost_errors()
    sources = sources if sources is not None else Sources()
    refused: list[dict[str, str]] = []
    jobs: list[tuple[dict[str, Any], Any, dict[str, Any], float]] = []
    keys: list[tuple[str, int]] = []
    setups: dict[str, Any] = {}
    replayed: dict[str, tuple[dict[str, Any], str]] = {}
    for point in points:
        try:
            config, settings = replay_config(point)
        except Refusal as exc:
            refused.append({"id": point["id"], "reason": str(exc)})
            continue
        overhead = float(overheads.get(point["engine"], 0.0))
        key = f"{workload_key(config)}|{point['source']}|{point['conc']}|{point['gpus']}|{overhead}"
        replayed[point["id"]] = (point, key)
        if key in setups:
            continue
        draws, setup = plan_draws(
            config,
            Path("."),
            replicas,
            seed=seed,
            sources=sources,
            table=evidence,
            request_overhead=point["engine"] if point["engine"] in overheads else None,
            acceptance_spread=spreads.get((point["engine"], f"{point['isl']}/{point['osl']}"))
            if point["source"] != "speculators" and point["sd"] == "mtp"
            else None,
        )
        setups[key] = setup
        point = {**point, "gpus": settings["gpus"]}
        jobs.append((point, None, config, overhead))
        keys.append((key, -1))
        for draw in draws:
            jobs.append((point, draw, config, overhead))
            keys.append((key, draw.replica))
    if workers > 1 and len(jobs) > 1:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            figures = pool.map(_replica_figures, jobs, chunksize=1)
    else:
        figures = [_replica_figures(job) for job in jobs]
    by_key: dict[str, dict[int, dict[str, Any]]] = {}
    for (key, replica), figure in zip(keys, figures, strict=True):
        by_key.setdefault(key, {})[replica] = figure
    judged: list[dict[str, Any]] = []
    for point_id, (point, key) in replayed.items():
        runs = by_key[key]
        if any("error" in figure for figure in runs.values()):
            refused.append(
                {
                    "id": point_id,
                    "reason": f"replay: {next(f['error'] for f in runs.values() if 'error' in f)}",
                }
            )
            continue
        rows = [runs[i] for i in range(replicas)]
        reduced = reduce(runs[-1], rows, SERVING_METRICS)
        plain = reduce(
            runs[-1], [row.get("without_overhead", row) for row in rows], SERVING_METRICS
        )
        metrics = {}
        for name in SERVING_METRICS:
            value = point["measured"].get(name)
            interval = reduced[name]
            if value is None or interval["low"] is None:
                continue
            metrics[name] = {
                "measured": float(value),
                "point": interval["point"],
                "low": interval["low"],
                "high": interval["high"],
                "inside": interval["low"] <= float(value) <= interval["high"],
                "without_overhead": {
                    "low": plain[name]["low"],
                    "high": plain[name]["high"],
                    "inside": plain[name]["low"] <= float(value) <= plain[name]["high"],
                },
            }
        includes = [n for n, s in setups[key].sources.items() if s["included"]]
        # An InferenceX MTP point replays a fitted acceptance: it counts in the plan's figure
        # when its interval draws that acceptance's spread (the ``acceptance`` source on).
        assumed = point["source"] != "speculators" and point["sd"] != "none"
        judged.append(
            {
                "id": point_id,
                "group": f"{point['source']}/{point['sd']}",
                "judged_for_plan": not assumed or "acceptance" in includes,
                "includes": includes,
                "metrics": metrics,
            }
        )
    per_group, per_metric = _shares(judged, SERVING_METRICS)
    ablated = [
        {
            **row,
            "metrics": {name: item["without_overhead"] for name, item in row["metrics"].items()},
        }
        for row in judged
    ]
    plain_group, plain_metric = _shares(ablated, SERVING_METRICS)
    return {
        "schema": {"name": "aisim.public_gpu_interval_coverage", "version": 1},
        "command": command
        or (
            f"python -m qualification.uncertainty coverage-public-gpu --replicas {replicas} "
            f"--seed {seed}"
        ),
        "held_out": (
            "points of the InferenceX latest file and the speculators sweep; the roofline's GPU "
            "terms (fitted_terms.json) and its GPU cost-error samples "
            "(aisim/uncertainty/cost_errors.v1.json, source "
            "evidence/public-gpu/scored/public_gpu_rows.csv) saw InferenceX history rows only"
        ),
        "plan_figure": (
            "every judged point, except an InferenceX MTP point (its acceptance fitted on H200 "
            "history pairs: InferenceX records none) whose interval does not draw that "
            "acceptance's spread (the acceptance source off)"
        ),
        "cost_samples": evidence.describe("roofline"),
        # What the InferenceX MTP points' acceptance draws: per engine and ISL/OSL, the
        # leave-one-out residuals of the fit's H200 training pairs, and those pairs.
        "acceptance_spreads": {
            f"{engine} {workload}": spread.to_dict()
            for (engine, workload), spread in sorted(spreads.items())
        },
        "inputs": replay_inputs(evidence_dir.parent),
        "points": len(points),
        "refused": refused,
        "distinct_replays": len(setups),
        "judged": judged,
        "coverage": per_metric,
        "coverage_by_group": per_group,
        "coverage_without_overhead": {
            "what": (
                "the same replicas with the fitted per-request overhead only (the overhead "
                "source's draw left out of the figures): what the interval held before the "
                "source"
            ),
            "coverage": plain_metric,
            "coverage_by_group": plain_group,
        },
        "replicas": replicas,
        "seed": seed,
    }
