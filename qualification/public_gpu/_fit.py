"""Fit the weakly sourced roofline terms on one part of the public evidence (held-out protocol).

Training rows: InferenceX **history** rows that are not also in the latest file, without SD
(``training_rows``). Everything else (the latest file, the speculators sweep, every MTP row, the
older public figures of ``aisim qualify public``) is held out and scored by the full replay.

Fitted, by least squares on log(predicted / measured) with a fast closed-loop surrogate (one
decode step at the closed loop's batch and mean context, plus the prefills that interleave with
it: conc / mean output length prefills of one prompt per decode step):

* on median TPOT: ``KERNEL_OVERHEAD_S`` (per kernel), ``STEP_OVERHEAD_S`` (per forward pass,
  >= 0) and one factor on both bandwidth efficiencies (their ratio stays the profile's);
* on median TTFT of the rows at concurrency <= 8 (prefill of one prompt + the request's own
  overhead): the per-engine request overhead (HTTP, tokenization, scheduling before the first
  step; client-side), which the harness adds to each request outside the simulation (the
  surrogate's TTFT includes the wait for SGLang's receive turn, ``first_token_ms``, which the
  replay models);
* on the MTP / no-MTP TPOT ratio of the **H200** history pairs (``fit_mtp_acceptance``): the
  MTP acceptance rate per draft position per engine and ISL/OSL (InferenceX records none; a
  workload one engine has no H200 pair of is transferred from the other's). Its MTP rows are
  then seen (``seen_by``); the B200 pairs and every latest row are held out.

On the **HumanEval** no-SD and MTP points of the vLLM Qwen3.8-27B sweep (``fit_hybrid``, full
replays; its math_reasoning points and every DSpark point are held out): the Gated DeltaNet
state's bandwidth efficiency and the eager host time per Gated DeltaNet layer of a pass with
prefill tokens (on mean TPOT), then vLLM's request overhead (on TTFT at concurrency <= 8).
On the **HumanEval** DSpark points at 1..64 streams (``fit_dspark``, full replays; the
math_reasoning DSpark points are held out): the host time per drafted position of DSpark's eager
Markov sampler (on median output throughput).

``python -m qualification.public_gpu.fit`` prints the artefact (``fitted_terms.json``; with
``--hybrid`` only its ``hybrid`` block is refitted, with ``--dspark`` only its ``dspark`` block); the constants in
``aisim/catalogue/_costs.py`` are its rounded values (a test checks they agree).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from pathlib import Path
from typing import Any, Final

from aisim.catalogue import MEASURED_TERMS, CostTerms, Deployment, builtin_gpu, builtin_model
from aisim.fpm import ForwardPassMetrics, RooflineModel, swap_default_terms
from qualification.public_gpu._fit_host import fit_serial_host
from qualification.public_gpu._points import load_points
from qualification.public_gpu._workload import DEEPSEEK_MTP_ACCEPTANCE, Refusal, replay_config

#: The profile's two bandwidth efficiencies before the fitted factor (mikamirai.com profile).
PROFILE_WEIGHT_EFFICIENCY: Final = 0.78
PROFILE_KV_EFFICIENCY: Final = 0.57
TTFT_MAX_CONC: Final = 8


def training_rows(evidence: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(point, replay config) of every training row (see the module docstring)."""
    rows = []
    for point in load_points(evidence):
        if point["source"] != "inferencex-history" or point["also_in_latest"]:
            continue
        if point["sd"] != "none":
            continue
        try:
            config, _ = replay_config(point)
        except Refusal:
            continue
        rows.append((point, config))
    return rows


def terms_with(kernel_us: float, step_ms: float, bandwidth_factor: float) -> CostTerms:
    return dataclasses.replace(
        MEASURED_TERMS,
        kernel_overhead_s=kernel_us * 1e-6,
        step_overhead_s=step_ms * 1e-3,
        weight_bandwidth_efficiency=PROFILE_WEIGHT_EFFICIENCY * bandwidth_factor,
        kv_bandwidth_efficiency=PROFILE_KV_EFFICIENCY * bandwidth_factor,
    )


def surrogate(
    point: dict[str, Any], config: dict[str, Any], terms: CostTerms
) -> tuple[float, float]:
    """(TPOT ms, one prompt's prefill ms) of the closed loop, from two roofline queries."""
    engine = config["engine"]
    worker = engine["workers"]["aggregated"]
    given = worker["timing"]["deployment"]
    deployment = Deployment(
        given["weights"],
        given["kv_cache"],
        given["expert_parallel"],
        given["attention_data_parallel"],
    )
    spec = builtin_model(engine["model"])
    gpu = builtin_gpu(engine["hardware"])
    assert spec is not None and gpu is not None
    model = RooflineModel(spec, gpu, worker["parallelism"]["tensor"], None, terms, deployment)
    ranks = worker["parallelism"]["attention_data"]
    batch = max(1, round(point["conc"] / ranks))
    prompt = 0.9 * point["isl"]
    output = 0.9 * point["osl"]
    step = model.estimate_forward_pass_time_ms(
        ForwardPassMetrics(batch, int(batch * (prompt + output / 2.0)))
    )
    prefill = model.estimate_forward_pass_time_ms(
        ForwardPassMetrics(num_prefill_requests=1, sum_prefill_tokens=int(prompt))
    )
    return step + batch / output * prefill, prefill


def first_token_ms(point: dict[str, Any], config: dict[str, Any], terms: CostTerms) -> float:
    """The surrogate's TTFT before the request overhead: one prompt's prefill, plus, under
    SGLang's ``--scheduler-recv-interval N``, the mean wait for the next receive turn, (N - 1) / 2
    decode passes (a request arrives at a uniformly random pass of the N)."""
    step, prefill = surrogate(point, config, terms)
    scheduler = config["engine"]["workers"]["aggregated"]["scheduler"]
    interval = int(scheduler.get("scheduler_recv_interval", 1))
    return prefill + (interval - 1) / 2.0 * step


def fit(evidence: Path) -> dict[str, Any]:
    """The fitted terms, the rows they saw and their in-sample errors."""
    from scipy.optimize import least_squares

    rows = [(p, c) for p, c in training_rows(evidence) if p["measured"]["median_tpot_ms"]]

    def tpot_residuals(x: Any) -> list[float]:
        terms = terms_with(float(x[0]), float(x[1]), float(x[2]))
        return [
            math.log(surrogate(p, c, terms)[0] / p["measured"]["median_tpot_ms"]) for p, c in rows
        ]

    start = [0.58, 1.1, 1.0]
    solved = least_squares(tpot_residuals, start, bounds=([0.0, 0.0, 0.5], [50.0, 20.0, 1.2]))
    kernel_us, step_ms, factor = (float(v) for v in solved.x)
    terms = terms_with(kernel_us, step_ms, factor)
    tpot_errors = [100.0 * (math.exp(r) - 1.0) for r in tpot_residuals(solved.x)]
    overheads: dict[str, Any] = {}
    for engine in sorted({p["engine"] for p, _ in rows}):
        low = [
            (p, c)
            for p, c in rows
            if p["engine"] == engine
            and p["conc"] <= TTFT_MAX_CONC
            and p["measured"]["median_ttft_ms"]
        ]
        gaps = [p["measured"]["median_ttft_ms"] - first_token_ms(p, c, terms) for p, c in low]
        overheads[engine] = {"ms": statistics.median(gaps), "rows": len(low)}
    return {
        "protocol": (
            "fitted on InferenceX history rows not also in the latest file, no SD (TTFT: those "
            f"at concurrency <= {TTFT_MAX_CONC}); held out: the latest file, the speculators "
            "sweep, every MTP row and aisim qualify public's figures"
        ),
        "training_rows": len(rows),
        "training_ids": sorted(p["id"] for p, _ in rows),
        "kernel_overhead_us": kernel_us,
        "step_overhead_ms": step_ms,
        "bandwidth_factor": factor,
        "weight_bandwidth_efficiency": PROFILE_WEIGHT_EFFICIENCY * factor,
        "kv_bandwidth_efficiency": PROFILE_KV_EFFICIENCY * factor,
        "request_overhead_ms": overheads,
        "in_sample_median_abs_tpot_error_pct": statistics.median(abs(e) for e in tpot_errors),
        "mtp_acceptance": fit_mtp_acceptance(evidence),
        "sglang_serial_host_us_per_request": fit_serial_host(evidence),
    }


#: The MTP acceptance fit's training pairs: InferenceX history pairs on this GPU (the rest,
#: B200 and every latest row, is held out).
ACCEPTANCE_FIT_HARDWARE: Final = "h200"


def _acceptance_length(rate: float, depth: int) -> float:
    return sum(rate**position for position in range(depth + 1))


#: The ISL/OSL each engine's rate is fitted for (InferenceX's three fixed-length workloads).
ACCEPTANCE_WORKLOADS: Final = ("1024/1024", "8192/1024", "1024/8192")
#: Where a workload has no training pair on one engine (the H200 SGLang runs have no 1024/8192
#: MTP row), its rate is transferred from the other engine's (``transferred_rate``).
ACCEPTANCE_DONOR: Final = {"sglang": "trt", "trt": "sglang"}
#: The workload a transferred rate is scaled from (both engines have H200 pairs there).
ACCEPTANCE_REFERENCE_WORKLOAD: Final = "1024/1024"


def transferred_rate(base: float, donor_base: float, donor_rate: float) -> float:
    """A rate for a workload one engine has no pair of: its reference-workload rejection
    probability ``1 - base`` scaled by the donor engine's rejection ratio between the two
    workloads, ``(1 - donor_rate) / (1 - donor_base)``."""
    return 1.0 - (1.0 - base) * (1.0 - donor_rate) / (1.0 - donor_base)


def _fit_rate(used: list[tuple[str, int, float, float]]) -> float:
    """The rate whose median log(predicted / measured) ratio over ``used`` is zero (bisection;
    a higher rate lowers the predicted ratio)."""

    def median_log_error(a: float) -> float:
        return statistics.median(
            math.log(scale / _acceptance_length(a, depth) / measured)
            for _, depth, scale, measured in used
        )

    low, high = 0.01, 0.99
    for _ in range(60):
        middle = 0.5 * (low + high)
        if median_log_error(middle) > 0.0:
            low = middle
        else:
            high = middle
    return 0.5 * (low + high)


def acceptance_pairs(evidence: Path) -> dict[tuple[str, str], list[tuple[str, int, float, float]]]:
    """The MTP acceptance fit's training pairs per (engine, ISL/OSL) of a scored run
    (``evidence/scored/public_gpu_pairs.csv``): the H200 history pairs, neither point also a
    latest row, each as (pair id ``MTP id / no-MTP id``, depth, scale, measured MTP / no-MTP TPOT ratio), the
    pair's predicted ratio at rate ``a`` being ``scale / AL(a)``."""
    import csv

    points = {p["id"]: p for p in load_points(evidence)}
    pairs_csv = evidence / "scored" / "public_gpu_pairs.csv"
    rows = list(csv.DictReader(pairs_csv.read_text("utf-8").splitlines()))
    used: dict[tuple[str, str], list[tuple[str, int, float, float]]] = {}
    for pair in rows:
        if pair.get("sd", "mtp") != "mtp":
            continue
        mtp, base = points[pair["mtp"]], points[pair["none"]]
        if mtp["source"] != "inferencex-history" or mtp["hardware"] != ACCEPTANCE_FIT_HARDWARE:
            continue
        if mtp["also_in_latest"] or base["also_in_latest"]:
            continue
        speculation = replay_config(mtp)[0]["engine"]["speculation"]
        depth = int(speculation["params"]["depth"])
        # The rate the scored run replayed (runs before the fit: DeepSeek-V3's 0.875).
        rate = float(pair.get("acceptance_rate") or DEEPSEEK_MTP_ACCEPTANCE)
        scale = float(pair["tpot_ratio_predicted"]) * _acceptance_length(rate, depth)
        key = (mtp["engine"], f"{mtp['isl']}/{mtp['osl']}")
        used.setdefault(key, []).append(
            (f"{mtp['id']} / {base['id']}", depth, scale, float(pair["tpot_ratio_measured"]))
        )
    return used


def fit_mtp_acceptance(evidence: Path) -> dict[str, Any]:
    """Per engine and ISL/OSL, the per-position MTP acceptance rate that makes the median
    predicted MTP / no-MTP TPOT ratio of the H200 history pairs (neither point also a latest
    row) of that workload equal the measured one, from a scored run
    (``evidence/scored/public_gpu_pairs.csv``, ``acceptance_pairs``). A pair's predicted ratio
    at rate ``a`` is the scored one times AL(used) / AL(a), AL(a) = 1 + a + .. + a^d (the
    round's price barely moves with the acceptance; its cost was the replay's). A workload
    without an H200 pair on one engine takes ``transferred_rate`` from the other (``pairs`` 0,
    ``transferred_from``)."""
    used = acceptance_pairs(evidence)
    fitted: dict[str, dict[str, Any]] = {}
    for (engine, workload), pairs in sorted(used.items()):
        rate = _fit_rate(pairs)
        errors = [
            100.0 * (scale / _acceptance_length(rate, depth) / measured - 1.0)
            for _, depth, scale, measured in pairs
        ]
        fitted.setdefault(engine, {})[workload] = {
            "rate": rate,
            "pairs": len(pairs),
            "in_sample_median_abs_ratio_error_pct": statistics.median(abs(e) for e in errors),
            "mtp_ids": sorted({pair_id.split(" / ")[0] for pair_id, _, _, _ in pairs}),
        }
    reference = ACCEPTANCE_REFERENCE_WORKLOAD
    for engine, workloads in fitted.items():
        donor = fitted.get(ACCEPTANCE_DONOR[engine], {})
        for workload in ACCEPTANCE_WORKLOADS:
            if workload in workloads or workload not in donor or reference not in donor:
                continue
            if reference not in workloads:
                continue
            workloads[workload] = {
                "rate": transferred_rate(
                    workloads[reference]["rate"],
                    donor[reference]["rate"],
                    donor[workload]["rate"],
                ),
                "pairs": 0,
                "transferred_from": f"{ACCEPTANCE_DONOR[engine]} {reference} -> {workload}",
                "mtp_ids": [],
            }
    return fitted


#: The hybrid terms' training rows: the no-SD and MTP points of this half of the Qwen3.8-27B
#: sweep (the math_reasoning half, and every DSpark point, is held out).
HYBRID_TRAINING_SUBSET: Final = "HumanEval"
#: The grid the hybrid fit searches: the state efficiency (fraction of peak HBM) and the eager
#: host time per Gated DeltaNet layer of a pass with prefill tokens (us); a coarse pass, then a
#: finer one around the coarse optimum.
HYBRID_COARSE: Final = (
    (0.35, 0.40, 0.45, 0.50, 0.55, 0.65),
    (0.0, 80.0, 160.0, 240.0),
)
HYBRID_FINE_STEPS: Final = (0.01, 20.0)


def hybrid_training_points(evidence: Path) -> list[dict[str, Any]]:
    """The speculators points the hybrid terms are fitted on (``HYBRID_TRAINING_SUBSET``, no SD
    and MTP, the pinned diagnostic left out)."""
    return [
        p
        for p in load_points(evidence)
        if p["source"] == "speculators"
        and p["dataset"] == HYBRID_TRAINING_SUBSET
        and p["sd"] in ("none", "mtp")
        and not p["diagnostic"]
    ]


def _replay_with(points: list[dict[str, Any]], terms: CostTerms) -> list[dict[str, Any]]:
    """``points`` replayed (``_predict.predict``) with ``terms`` as the default roofline's
    (``aisim.fpm.swap_default_terms``, restored after the replay)."""
    from qualification.public_gpu._predict import predict

    saved = swap_default_terms(terms)
    try:
        predicted, _ = predict(points)
    finally:
        swap_default_terms(saved)
    return predicted


def _hybrid_terms(efficiency: float, eager_us: float) -> CostTerms:
    return dataclasses.replace(
        MEASURED_TERMS,
        linear_state_bandwidth_efficiency=efficiency,
        eager_linear_layer_s=eager_us * 1e-6,
    )


def _tpot_loss(predicted: list[dict[str, Any]]) -> float:
    return sum(
        math.log(p["predicted"]["mean_tpot_ms"] / p["measured"]["mean_tpot_ms"]) ** 2
        for p in predicted
    )


def fit_hybrid(evidence: Path) -> dict[str, Any]:
    """The Gated DeltaNet state efficiency and the eager host time per Gated DeltaNet layer of a
    pass with prefill tokens, by least squares on log(predicted / measured) mean TPOT of the
    ``HYBRID_TRAINING_SUBSET`` no-SD and MTP points, each a full replay (a grid search: coarse,
    then fine around its optimum); then vLLM's per-request overhead, the median gap between
    measured and replayed median TTFT of those points at concurrency <= 8."""
    points = hybrid_training_points(evidence)
    cache: dict[tuple[float, float], float] = {}

    def loss(efficiency: float, eager_us: float) -> float:
        key = (round(efficiency, 4), round(eager_us, 2))
        if key not in cache:
            cache[key] = _tpot_loss(_replay_with(points, _hybrid_terms(*key)))
        return cache[key]

    best = min(((e, h) for e in HYBRID_COARSE[0] for h in HYBRID_COARSE[1]), key=lambda k: loss(*k))
    step_e, step_h = HYBRID_FINE_STEPS
    fine = [
        (best[0] + i * step_e, max(0.0, best[1] + j * step_h))
        for i in range(-2, 3)
        for j in range(-2, 3)
    ]
    efficiency, eager_us = min(fine, key=lambda k: loss(*k))
    predicted = _replay_with(points, _hybrid_terms(efficiency, eager_us))
    errors = [
        100.0 * (p["predicted"]["mean_tpot_ms"] / p["measured"]["mean_tpot_ms"] - 1.0)
        for p in predicted
    ]
    low = [p for p in predicted if p["conc"] <= TTFT_MAX_CONC]
    gaps = [p["measured"]["median_ttft_ms"] - p["predicted"]["median_ttft_ms"] for p in low]
    return {
        "protocol": (
            f"fitted on the {HYBRID_TRAINING_SUBSET} no-SD and MTP points of the vLLM "
            "Qwen3.8-27B sweep (mean TPOT; TTFT at concurrency <= "
            f"{TTFT_MAX_CONC}); held out: its math_reasoning points and every DSpark point"
        ),
        "training_ids": sorted(p["id"] for p in points),
        "linear_state_bandwidth_efficiency": efficiency,
        "eager_linear_layer_us": eager_us,
        "request_overhead_ms": {"ms": statistics.median(gaps), "rows": len(low)},
        "in_sample_max_abs_tpot_error_pct": max(abs(e) for e in errors),
        "in_sample_median_abs_tpot_error_pct": statistics.median(abs(e) for e in errors),
        "grid_evaluations": len(cache),
    }


#: The DSpark term's training rows: the DSpark points of the hybrid fit's half of the sweep
#: below the KV-full queueing point (128 streams queue inside the server); the math_reasoning
#: DSpark points are held out.
DSPARK_MAX_CONC: Final = 64
#: The term's name in ``seen_by``.
DSPARK_TERM: Final = "DSPARK_MARKOV_STEP_S"


def dspark_training_points(evidence: Path) -> list[dict[str, Any]]:
    """The speculators points ``DSPARK_MARKOV_STEP_S`` is fitted on (``HYBRID_TRAINING_SUBSET``,
    DSpark, at most ``DSPARK_MAX_CONC`` streams, the pinned diagnostic left out)."""
    return [
        p
        for p in load_points(evidence)
        if p["source"] == "speculators"
        and p["dataset"] == HYBRID_TRAINING_SUBSET
        and p["sd"] == "dspark"
        and p["conc"] <= DSPARK_MAX_CONC
        and not p["diagnostic"]
    ]


def _throughput_log_errors(predicted: list[dict[str, Any]]) -> list[float]:
    return [
        math.log(p["predicted"]["output_tput_per_gpu"] / p["measured"]["output_tput_per_gpu"])
        for p in predicted
    ]


def fit_dspark(evidence: Path, overheads: dict[str, float] | None = None) -> dict[str, Any]:
    """The host time per drafted position of a DSpark round (us): the value at which the median
    log(predicted / measured) output throughput of ``dspark_training_points`` is zero (each
    evaluation replays them all; the throughput falls monotonically with the term, so a
    bisection on [0, 1000] us converges to 0.1 us)."""
    from qualification.public_gpu._predict import predict

    points = dspark_training_points(evidence)
    seen: list[list[float]] = []

    def median_error(step_us: float) -> float:
        terms = dataclasses.replace(MEASURED_TERMS, dspark_markov_step_s=step_us * 1e-6)
        saved = swap_default_terms(terms)
        try:
            predicted, _ = predict(points, None, overheads)
        finally:
            swap_default_terms(saved)
        value = statistics.median(_throughput_log_errors(predicted))
        seen.append([step_us, 100.0 * math.expm1(value)])
        return value

    low, high = 0.0, 1000.0
    if median_error(low) <= 0.0:
        high = low
    while high - low > 0.1:
        middle = round(0.5 * (low + high), 2)
        if median_error(middle) > 0.0:
            low = middle
        else:
            high = middle
    step_us = round(high, 1)
    median_error(step_us)
    return {
        "protocol": (
            f"fitted on the {HYBRID_TRAINING_SUBSET} DSpark points of the vLLM Qwen3.8-27B sweep "
            f"at 1..{DSPARK_MAX_CONC} streams (median output throughput); held out: its "
            "math_reasoning DSpark points"
        ),
        "training_ids": sorted(p["id"] for p in points),
        "markov_step_us": step_us,
        "in_sample_median_throughput_error_pct": seen[-1][1],
        "evaluations": seen,
    }
