"""Build the cost-error table (``aisim/uncertainty/cost_errors.v1.json``) from the committed
evidence: one sample per measured / predicted step-price ratio, with its provenance.

* ``roofline`` (public GPU measurements, ``qualification/public/measurements.json``): decode
  steps (ratio = measured / roofline), and EAGLE-3 round / STP ratios (``sd_round`` relative to
  ``decode``: measured ratio / roofline ratio). Rows whose role is ``derivation`` fixed a
  roofline constant: they are kept out (their error is in-sample). The round / STP rows are
  priced with their engine's version term (``draft_step_host_s``, vLLM mid-2025's per-draft-step
  host time, ``qualification.public.fit_version_terms``) and only the rows it was not fitted on
  (k = 4..7; k = 2 and 3 are its ``fitted_on``) give samples: the residual after the version
  effect, the error a replay with the default (2026 engine) terms carries. A replay of a
  mid-2025 vLLM gets intervals too narrow: the version effect is not in them.
* ``roofline`` on GPU serving runs (InferenceX DeepSeek-R1 history rows, ``evidence/public-gpu``,
  as ``aisim qualify public-gpu`` replayed them: ``scored/public_gpu_rows.csv``): per point,
  measured / predicted TPOT (mean, else median) as its ``decode`` ratio, measured / predicted
  median TTFT as its ``prefill`` ratio at concurrency <= 8 (where TTFT is mostly the prefill,
  not queueing). Only the history rows without SD that the roofline's GPU terms were fitted on
  (``fitted_terms.json``); the latest file, the MTP rows and the speculators sweep stay held
  out for the coverage (``python -m qualification.uncertainty coverage-public-gpu``). The MTP
  rows give no SD-round samples: InferenceX records no acceptance, so their TPOT error is
  mostly the assumed acceptance's, not the round price's.
* ``stp_rule`` (recorded SD-round datasets, ``evidence/cpu-*``): per configuration (d, B, K), the
  measured median round / the published rule's price from the dataset's own STP table
  (``sd_round`` relative to ``decode``: the rule multiplies an STP price).
* ``engine-step-table`` (engine recordings, ``evidence/engine/*``): per served run and step kind,
  the median over its steps of measured wall time / the price the recording's step table gives
  the same composition (as ``aisim qualify engine`` prices it), and the quantiles of its steps'
  ratios around that median (the per-step scatter). One served run is one group, so a replica
  takes every kind's factor from the same run: the run's speed moved all of them.
* front-end samples (``frontend_samples``): per engine recording served through a front end
  with a probe of its own (``frontend/probe.csv.gz``), the terms of its front-end model
  (``frontend/frontend_model.json``, ``qualification.engine.frontend``: all its probe passes
  against its own grid): what the front end cost beyond the step table in that recording's
  hour. Measured apart from the served runs.
* overhead samples (``overhead_samples``): per engine, the error of the per-request overhead
  before the first token that ``aisim qualify public-gpu`` adds to every replayed TTFT
  (``evidence/public-gpu/fitted_terms.json`` ``request_overhead_ms``: SGLang and TensorRT-LLM
  from the InferenceX history rows, vLLM from the ``hybrid`` block's Qwen3.8-27B HumanEval
  points), on the rows it was fitted on (no SD for InferenceX; concurrency <= 8): measured
  minus predicted median TTFT (``scored/public_gpu_rows.csv``), with the overhead refitted
  without the row (leave its own row out: the overhead is the median of the rows' gaps, so the
  row's residual moves by the median of the others' gaps minus the median of all; for
  InferenceX, whose overhead was fitted on the surrogate's gaps, by the replayed gaps' median
  shift, ``overhead_samples``); and on the same fits' training rows above concurrency 8, whose
  TTFT no term was fitted on, measured minus predicted. Each sample carries its regime (the
  concurrency band, ``aisim.uncertainty.overhead_regime``): a replica draws from its own
  regime's samples where the engine has ``MIN_REGIME_OVERHEADS`` there (docs/uncertainty.md,
  "The overhead's regime").
* repeat samples (``repeat_samples``): per served run of an engine recording whose runs are
  repeats, each measured figure's deviation from the mean of the recording's runs, less the part
  the run's step-price level explains (``repeat_samples``).
"""

from __future__ import annotations

import hashlib
import math
import statistics
from pathlib import Path
from typing import Any, Final

from aisim.uncertainty import (
    REPEAT_METRICS,
    CostErrorTable,
    ErrorSample,
    FrontEndSample,
    OverheadSample,
    RepeatSample,
    overhead_regime,
    repeat_factor,
)

#: engine step kinds (``qualification.engine.step_diff``) -> cost-error step kind.
ENGINE_KINDS: Final = {
    "prefill": "prefill",
    "mixed": "mixed",
    "decode": "decode",
    "decode-undrafted": "decode",
    "decode-drafted": "sd_round",
    "decode-partial": "sd_round",
}
ABOUT: Final = (
    "Measured / predicted step-price ratios by estimator, step kind and regime, built from the "
    "committed evidence by `python -m qualification.uncertainty build` (docs/design.md#uncertainty)."
)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def public_samples(root: Path) -> tuple[list[ErrorSample], dict[str, dict[str, Any]]]:
    from qualification.public import load_measurements, score

    data = load_measurements()
    file = root / "qualification/public/measurements.json"
    source = "qualification/public/measurements.json"
    # The decode rows have no version term; the round / STP rows are priced with theirs
    # (``draft_step_host_s`` of vLLM mid-2025): a replay with the default terms models an engine
    # without that host time, so its error sample is the residual after the version effect, and
    # only from the rows the term did not see (``seen_by``; its ``fitted_on`` rows are left out).
    # The measured step host time of vLLM V1 2025 (``step_host_s``) is left out here
    # (``step_host=False``: the decode rows at the default's price, the draft-step term fitted
    # without it): the samples stay those the table had before it was measured. Taking it in
    # would move the two vLLM V1 decode samples and so every interval drawn from the table,
    # whose coverage would have to be rerun (docs/estimators.md).
    scored = {
        row["id"]: row for row in score("roofline", version_terms=True, step_host=False)["rows"]
    }
    samples = []
    for row in data["decode_steps"]:
        if row["role"] != "validation":
            continue
        result = scored[row["id"]]
        samples.append(
            ErrorSample(
                "roofline",
                "decode",
                f"{row['hardware']}/{row['engine']}/B{row['batch']}/kv{row['kv_per_request']}",
                f"public/{row['id']}",
                result["measured"] / result["predicted"],
                f"{source}#{row['id']}",
                "public-measurement",
            )
        )
    samples.extend(round_samples(data, scored, source))
    sources = {source: {"sha256": _sha256(file), "evidence_type": "public-measurement"}}
    return samples, sources


def round_samples(
    data: dict[str, Any], scored: dict[str, dict[str, Any]], source: str
) -> list[ErrorSample]:
    """The roofline's ``sd_round`` samples (relative to ``decode``): per EAGLE-3 round / STP row
    of ``data`` (``measurements.json``), measured / predicted of its ``scored`` row (``score``
    with the version terms), left out where a version term saw the row (``seen_by``: its
    training rows). None unless the setup's role is ``validation``."""
    setup = data["sd_round_setup"]
    if setup["role"] != "validation":
        return []
    samples = []
    for row in data["sd_round_ratios"]:
        result = scored[row["id"]]
        if result["seen_by"]:
            continue
        samples.append(
            ErrorSample(
                "roofline",
                "sd_round",
                f"{setup['hardware']}/eagle3/d{row['draft_tokens']}/B{setup['batch']}",
                f"public/{row['id']}",
                result["measured"] / result["predicted"],
                f"{source}#{row['id']}",
                "public-measurement",
                relative_to="decode",
            )
        )
    return samples


#: The scored public GPU rows (``aisim qualify public-gpu --out evidence/public-gpu/scored``).
PUBLIC_GPU_ROWS: Final = "evidence/public-gpu/scored/public_gpu_rows.csv"
#: TTFT ratios are taken as prefill price ratios up to this concurrency.
PREFILL_CONCURRENCY: Final = 8


def public_gpu_samples(root: Path) -> tuple[list[ErrorSample], dict[str, dict[str, Any]]]:
    """The roofline's serving errors on the InferenceX history rows (see the module doc)."""
    import csv
    import json

    file = root / PUBLIC_GPU_ROWS
    training = set(
        json.loads((root / "evidence/public-gpu/fitted_terms.json").read_text("utf-8"))[
            "training_ids"
        ]
    )
    samples = []
    with file.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        if row["source"] != "inferencex-history":
            continue
        if row["sd"] != "none" or row["id"] not in training:
            continue
        tpot = _ratio(row, "mean_tpot_ms") or _ratio(row, "median_tpot_ms")
        regime = (
            f"{row['hardware']}/{row['engine']}/{row['precision']}/{row['sd']}/c{row['conc']}/"
            f"{row['regime']}"
        )
        group = f"public-gpu/{row['id']}"
        where = f"{PUBLIC_GPU_ROWS}#{row['id']}"
        if tpot is not None:
            samples.append(
                ErrorSample(
                    "roofline",
                    "decode",
                    regime,
                    group,
                    tpot,
                    where,
                    "public-measurement",
                )
            )
        ttft = _ratio(row, "median_ttft_ms")
        if ttft is not None and int(row["conc"]) <= PREFILL_CONCURRENCY:
            samples.append(
                ErrorSample("roofline", "prefill", regime, group, ttft, where, "public-measurement")
            )
    sources = {PUBLIC_GPU_ROWS: {"sha256": _sha256(file), "evidence_type": "public-measurement"}}
    return samples, sources


def overhead_samples(root: Path) -> list[OverheadSample]:
    """The per-request overhead's errors by engine on its fit's training points (module doc),
    each with its regime (``overhead_regime`` of its concurrency). On a point the overhead was
    fitted on (concurrency <= 8; without SD for InferenceX): measured - predicted median TTFT
    - (median of the other fitted points' gaps - median of all), a gap being measured -
    (predicted - the fitted overhead): the point's residual had the overhead been fitted
    without it. On the fit's other training points (above concurrency 8, whose TTFT no term
    was fitted on): measured - predicted."""
    import csv
    import json

    from qualification.public_gpu import TTFT_MAX_CONC

    fitted = json.loads((root / "evidence/public-gpu/fitted_terms.json").read_text("utf-8"))
    engines: dict[str, tuple[float, set[str], bool]] = {
        engine: (float(term["ms"]), set(fitted["training_ids"]), True)
        for engine, term in sorted(fitted.get("request_overhead_ms", {}).items())
    }
    hybrid = fitted.get("hybrid", {})
    if "request_overhead_ms" in hybrid:
        engines["vllm"] = (
            float(hybrid["request_overhead_ms"]["ms"]),
            set(hybrid["training_ids"]),
            False,
        )
    with (root / PUBLIC_GPU_ROWS).open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    samples = []
    for engine, (overhead, training, no_sd_only) in engines.items():
        chosen = [
            (
                row["id"],
                int(row["conc"]),
                float(row["median_ttft_ms_measured"]),
                float(row["median_ttft_ms_predicted"]),
            )
            for row in rows
            if row["id"] in training
            and row["engine"] == engine
            and (row["sd"] == "none" or not no_sd_only)
            and row.get("median_ttft_ms_measured")
            and row.get("median_ttft_ms_predicted")
        ]
        fit_rows = [row for row in chosen if row[1] <= TTFT_MAX_CONC]
        if len(fit_rows) < 2:
            continue
        gaps = [measured - (predicted - overhead) for _, _, measured, predicted in fit_rows]
        middle = statistics.median(gaps)
        shifts = {
            row[0]: statistics.median(gaps[:index] + gaps[index + 1 :]) - middle
            for index, row in enumerate(fit_rows)
        }
        for point_id, conc, measured, predicted in chosen:
            samples.append(
                OverheadSample(
                    engine,
                    f"public-gpu/{point_id}",
                    f"{PUBLIC_GPU_ROWS}#{point_id}",
                    "public-measurement",
                    round(measured - predicted - shifts.get(point_id, 0.0), 6),
                    overhead_regime(conc),
                )
            )
    return samples


def _ratio(row: dict[str, str], name: str) -> float | None:
    measured, predicted = row.get(f"{name}_measured"), row.get(f"{name}_predicted")
    if not measured or not predicted or not float(predicted) > 0:
        return None
    return float(measured) / float(predicted)


def rule_samples(root: Path) -> tuple[list[ErrorSample], dict[str, dict[str, Any]]]:
    from qualification.datasets import load_dataset
    from qualification.mape import configuration_table, evaluate, make_predictor

    samples = []
    sources = {}
    for folder in sorted((root / "evidence").glob("cpu-*")):
        dataset = load_dataset(folder)
        _, scored = evaluate(dataset, make_predictor("rule", dataset))
        drafter = dataset.identity.get("draft", {}).get("kind", "unknown")
        name = f"evidence/{folder.name}"
        for row in configuration_table(scored).to_dict("records"):
            if not row["predicted_ms"] > 0:
                continue
            samples.append(
                ErrorSample(
                    "stp_rule",
                    "sd_round",
                    f"cpu/{drafter}/{row['config_id']}",
                    f"{name}/{row['config_id']}",
                    float(row["measured_median_ms"]) / float(row["predicted_ms"]),
                    name,
                    str(dataset.evidence_type),
                    relative_to="decode",
                    weight_steps=int(row["rounds"]),
                )
            )
        sources[name] = {"sha256": dataset.sha256, "evidence_type": str(dataset.evidence_type)}
    return samples, sources


def engine_samples(root: Path) -> tuple[list[ErrorSample], dict[str, dict[str, Any]]]:
    from qualification.engine import load_recording, recorded_settings
    from qualification.engine.step_diff import priced_steps, warmed_model

    samples = []
    sources = {}
    for folder in sorted((root / "evidence/engine").iterdir()):
        if not folder.is_dir():
            continue
        recording = load_recording(folder)
        if recording.grid is None:
            continue
        name = f"evidence/engine/{folder.name}"
        method = recording.grid.settings.get("speculative_method") or "none"
        for index, run in enumerate(recording.served):
            depth = int(recorded_settings(run)["num_speculative_tokens"] or 0)
            # Priced as step_diff prices it: the engine's earlier runs warm the caches.
            model = warmed_model(recording.grid, depth, recording.served[:index])
            rows = priced_steps(run.steps, model, 1.0, depth)
            by_kind: dict[str, list[float]] = {}
            for row in rows:
                if row["price_ms"] > 0:
                    by_kind.setdefault(ENGINE_KINDS[row["kind"]], []).append(row["ratio"])
            correlation = step_correlation(rows)
            for kind, ratios in sorted(by_kind.items()):
                median = float(statistics.median(ratios))
                samples.append(
                    ErrorSample(
                        "engine-step-table",
                        kind,
                        f"vllm-cpu/{folder.name}/{method}",
                        f"{name}/{run.name}",
                        median,
                        name,
                        "engine-measurement",
                        weight_steps=len(ratios),
                        step_quantiles=step_quantiles(ratios, median),
                        step_correlation=correlation,
                    )
                )
        sources[name] = {
            "sha256": _sha256(folder / "grid/grid_steps.parquet"),
            "evidence_type": "engine-measurement",
        }
    return samples, sources


#: Figures that scale with the step price: the latencies (milliseconds) of ``REPEAT_METRICS``;
#: the others (throughput under trace arrivals, set by the arrival span) do not.
PRICE_SCALED: Final = tuple(metric for metric in REPEAT_METRICS if metric.endswith("_ms"))


def repeat_samples(root: Path) -> list[RepeatSample]:
    """The engine's run-to-run repeat noise (``RepeatSample``) beyond what the cost source
    draws. Per engine recording whose served runs are repeats (the same requests, prompt and
    output lengths, on one engine and one set of settings), each run's measured figure over the
    mean of its recording's runs; for a latency, over the run's step-price level too (the median
    over all its steps of measured / the step table's price, over the runs' mean): the cost
    source already draws a run's step-price level (one served run's factors), so the repeat
    source carries what is left (how a tail statistic of a hundred requests falls, queueing),
    and the throughput's whole deviation (the run's end: when its last requests finish, which
    the step price barely moves). Widened for the mean's own run (``repeat_factor``). A
    recording whose runs differ in their requests is left out (its differences are not repeat
    noise), and so is one with a run without engine steps (a client-side driver: its step-price
    level is unknown, so its latencies' deviations cannot be split from the cost source's)."""
    from qualification.engine import recorded_settings
    from qualification.engine.step_diff import priced_steps, warmed_model
    from qualification.uncertainty._coverage import measured_figures

    samples = []
    for folder in sorted((root / "evidence/engine").iterdir()):
        if not folder.is_dir():
            continue
        recording = load_recording_of(folder)
        if recording is None or len(recording.served) < 2:
            continue
        if len({_requests_key(run) for run in recording.served}) != 1:
            continue
        name = f"evidence/engine/{folder.name}"
        figures = []
        for index, run in enumerate(recording.served):
            depth = int(recorded_settings(run)["num_speculative_tokens"] or 0)
            model = warmed_model(recording.grid, depth, recording.served[:index])
            rows = priced_steps(run.steps, model, 1.0, depth)
            ratios = [r["ratio"] for r in rows if r["price_ms"] > 0]
            if not ratios:
                break
            figures.append({**measured_figures(run), "level": float(statistics.median(ratios))})
        if len(figures) != len(recording.served):
            continue
        for run, factors in zip(recording.served, run_factors(figures), strict=True):
            samples.append(
                RepeatSample(
                    "engine-step-table",
                    f"{name}/{run.name}",
                    name,
                    "engine-measurement",
                    len(figures),
                    factors,
                )
            )
    return samples


def run_factors(figures: list[dict[str, float]]) -> list[tuple[tuple[str, float], ...]]:
    """Per run of one recording (``figures``: each run's measured figures and its step-price
    ``level``), the repeat factor of every metric of ``REPEAT_METRICS``: a latency is first
    divided by the run's level over the runs' mean level (the part the cost source draws)."""
    level = statistics.fmean(f["level"] for f in figures)
    values = [
        {
            metric: f[metric] / (f["level"] / level) if metric in PRICE_SCALED else f[metric]
            for metric in REPEAT_METRICS
        }
        for f in figures
    ]
    means = {metric: statistics.fmean(v[metric] for v in values) for metric in REPEAT_METRICS}
    return [
        tuple(
            (metric, repeat_factor(value[metric], means[metric], len(figures)))
            for metric in REPEAT_METRICS
        )
        for value in values
    ]


def load_recording_of(folder: Path) -> Any:
    """The engine recording in ``folder``, or None without a grid (not replayed)."""
    from qualification.engine import load_recording

    recording = load_recording(folder)
    return recording if recording.grid is not None else None


def _requests_key(run: Any) -> tuple[tuple[str, int, int], ...]:
    frame = run.requests
    return tuple(
        (str(rid), int(prompt), int(output))
        for rid, prompt, output in zip(
            frame["request_id"], frame["prompt_tokens"], frame["output_tokens"], strict=True
        )
    )


def step_quantiles(ratios: list[float], median: float) -> tuple[float, ...]:
    """Quantiles 0, 5, ..., 100 % of the steps' ratios over the run's median (numpy linear)."""
    import numpy as np

    values = np.quantile(np.asarray(ratios, dtype=float) / median, np.linspace(0.0, 1.0, 21))
    return tuple(round(float(value), 6) for value in values)


#: Lags (in steps) at which a run's step-price correlation is measured, and the fewest step
#: pairs a lag needs.
CORRELATION_LAGS: Final = (1, 2, 4, 8, 16, 32, 64)
CORRELATION_MIN_PAIRS: Final = 20
#: A lag whose correlation is at or below this ends the fit (the decay has reached the noise).
CORRELATION_FLOOR: Final = 0.05


def step_correlation(rows: list[dict[str, Any]]) -> tuple[float, float] | None:
    """How one served run's step-price scatter is correlated in time (``priced_steps`` rows,
    in order): ``(share, time_ms)`` of rho(dt) = share * exp(-dt / time_ms), fitted to the
    correlation of the steps' normal scores (each step's rank among the run's steps of its kind,
    through the inverse normal CDF) at lags of 1, 2, 4, ... steps, dt the mean busy time between
    them (the sum of the measured step durations in between: idle time is left out, as a
    replay's ``PriceScale`` advances by the passes it prices). None when fewer than two lags
    are above ``CORRELATION_FLOOR`` or the correlation does not fall with the lag."""
    import numpy as np

    busy = 0.0
    times: list[float] = []
    kinds: list[str] = []
    ratios: list[float] = []
    for row in rows:
        if row["price_ms"] > 0 and math.isfinite(row["ratio"]):
            times.append(busy)
            kinds.append(ENGINE_KINDS[row["kind"]])
            ratios.append(float(row["ratio"]))
        busy += float(row["measured_ms"])
    scores = normal_scores(kinds, ratios)
    clock = np.asarray(times, dtype=float)
    points: list[tuple[float, float]] = []
    for lag in CORRELATION_LAGS:
        if len(scores) - lag < CORRELATION_MIN_PAIRS:
            break
        rho = float(np.corrcoef(scores[:-lag], scores[lag:])[0, 1])
        if not rho > CORRELATION_FLOOR:
            break
        points.append((float(np.mean(clock[lag:] - clock[:-lag])), rho))
    return fit_correlation(points)


def normal_scores(kinds: list[str], ratios: list[float]) -> Any:
    """Each value's normal score within its kind: the inverse normal CDF of (rank + 0.5) / n."""
    from statistics import NormalDist

    import numpy as np

    inverse = NormalDist().inv_cdf
    scores = np.zeros(len(ratios), dtype=float)
    for kind in sorted(set(kinds)):
        index = [i for i, name in enumerate(kinds) if name == kind]
        order = sorted(index, key=lambda i: (ratios[i], i))
        for rank, i in enumerate(order):
            scores[i] = inverse((rank + 0.5) / len(order))
    return scores


def fit_correlation(points: list[tuple[float, float]]) -> tuple[float, float] | None:
    """``(share, time_ms)`` of rho(dt) = share * exp(-dt / time_ms) through ``points`` (dt ms,
    rho > 0): least squares of ln rho on dt; the share capped at 1. None with fewer than two
    points or a correlation that does not fall with dt."""
    if len(points) < 2:
        return None
    xs = [dt for dt, _ in points]
    ys = [math.log(rho) for _, rho in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    if not spread > 0:
        return None
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
    if not slope < 0:
        return None
    share = min(1.0, math.exp(mean_y - slope * mean_x))
    return round(share, 6), round(-1.0 / slope, 3)


def frontend_samples(root: Path) -> tuple[list[FrontEndSample], dict[str, dict[str, Any]]]:
    """Per engine recording with a front-end probe of its own (``frontend/probe.csv.gz``): the
    terms of its front-end model (``frontend/frontend_model.json``, derived from all its probe
    passes against its own grid, ``qualification.engine.frontend``)."""
    from aisim.fpm import FRONTEND_FILE, load_frontend_cost
    from qualification.engine.frontend import PROBE_FILE
    from qualification.uncertainty._coverage import frontend_borrowed

    samples = []
    sources = {}
    for folder in sorted((root / "evidence/engine").iterdir()):
        model = folder / FRONTEND_FILE
        if not (folder / PROBE_FILE).is_file() or not model.is_file() or frontend_borrowed(folder):
            continue
        name = f"evidence/engine/{folder.name}"
        cost = load_frontend_cost(model)
        assert cost is not None
        samples.append(
            FrontEndSample(
                "engine-step-table",
                f"{name}/frontend",
                name,
                "engine-measurement",
                (cost.step_ms, cost.token_ms, cost.request_ms),
            )
        )
        sources[f"{name}/{FRONTEND_FILE}"] = {
            "sha256": _sha256(model),
            "evidence_type": "engine-measurement",
        }
    return samples, sources


def build_table(root: Path) -> CostErrorTable:
    """Every sample the committed evidence under ``root`` (the repository) gives."""
    samples: list[ErrorSample] = []
    sources: dict[str, dict[str, Any]] = {}
    for part in (public_samples, public_gpu_samples, rule_samples, engine_samples):
        found, where = part(root)
        samples.extend(found)
        sources.update(where)
    frontends, where = frontend_samples(root)
    sources.update(where)
    return CostErrorTable(
        tuple(samples),
        sources,
        tuple(repeat_samples(root)),
        tuple(frontends),
        tuple(overhead_samples(root)),
    )
