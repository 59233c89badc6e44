"""The checks a plan can judge and the metrics each one produces (the plan's vocabulary).

Each metric has a direction (``at_most``: smaller is better; ``at_least``: larger is better),
a kind, and whether it has a bootstrap confidence interval:

* ``error``: a non-negative error (MAPE, P90), judged as ``value <= threshold``;
* ``signed``: a signed error (bias, slope), judged on its magnitude, ``|value| <= threshold``;
  with ``use: upper_bound`` the value is the largest magnitude inside the interval,
  ``max(|low|, |high|)``;
* ``count``: a count of failures (tests, scenarios), ``value <= threshold``, no interval;
* ``p_value``: a test's p-value, ``value <= threshold`` (the test's alpha), no interval;
* ``fraction``: a fraction that must be high (coverage), ``value >= threshold``, no interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Metric:
    kind: str
    has_interval: bool
    description: str

    @property
    def at_least(self) -> bool:
        return self.kind == "fraction"


_MAPE_METRICS: Final = {
    "round_weighted_mape": Metric("error", True, "round-weighted MAPE"),
    "equal_config_mape": Metric("error", True, "equal-configuration MAPE"),
    "p90_ape": Metric("error", True, "90th percentile of the per-round APE"),
    "worst_config_ape": Metric("error", False, "APE of the worst configuration"),
    "bias": Metric("signed", True, "mean signed relative error over rounds"),
    "equal_config_bias": Metric("signed", True, "mean signed relative error over configurations"),
    "signed_error_slope_d": Metric(
        "signed", True, "least-squares slope of configuration signed error per unit of d"
    ),
    "coverage": Metric("fraction", False, "answered rounds / rounds"),
}

#: check -> metric name -> Metric. Dataset checks score one recorded dataset.
CHECKS: Final[dict[str, dict[str, Metric]]] = {
    "parity": {"failed_tests": Metric("count", False, "failed or erroring parity tests")},
    "probes": {"failed_tests": Metric("count", False, "failed or erroring probe tests")},
    "prediction_gate": {
        "failed_scenarios": Metric("count", False, "gate scenarios that raise an error"),
    },
    "rule": {
        **_MAPE_METRICS,
        "tost_p_value": Metric(
            "p_value", False, "TOST p-value: mean config log ratio within +-ln(1.10)"
        ),
    },
    "calibrated_heldout": dict(_MAPE_METRICS),
    "calibration_transfer": dict(_MAPE_METRICS),
    # A committed engine recording (`input:` its directory), replayed and scored as
    # `aisim qualify engine` does; *_vs_noise divides the error by the engine's own repeat noise
    # (the same figure between two served runs of the same trace).
    "engine_comparison": {
        "e2e_median_ape": Metric("error", False, "median per-request E2E |relative error|"),
        "e2e_p90_ape": Metric("error", False, "P90 of per-request E2E |relative error|"),
        "e2e_median_ape_vs_noise": Metric(
            "error", False, "median E2E |error| / the engine's repeat noise of the same figure"
        ),
        "e2e_p90_ape_vs_noise": Metric(
            "error", False, "P90 E2E |error| / the engine's repeat noise of the same figure"
        ),
        "e2e_median_ape_vs_repeat_floor": Metric(
            "error",
            False,
            "median E2E |error| / the repeat floor's (each served run predicted by the mean of "
            "the other runs), means over served runs",
        ),
        "e2e_p90_ape_vs_repeat_floor": Metric(
            "error",
            False,
            "P90 E2E |error| / the repeat floor's (each served run predicted by the mean of the "
            "other runs), means over served runs",
        ),
        "drift_adjusted_e2e_median_ape_vs_noise": Metric(
            "error",
            False,
            "median E2E |error| of the replay priced at each served run's step-cost drift "
            "(a diagnostic borrowing one number per run) / the engine's repeat noise",
        ),
        "ttft_mean_relative_error": Metric("signed", False, "mean TTFT relative error"),
        "throughput_error": Metric("signed", False, "relative throughput error"),
        "step_price_error": Metric(
            "error",
            False,
            "the step model: largest |median served-step price error| over the served runs and "
            "step kinds, the separately recorded grid as the only input",
        ),
        "step_cost_drift_deviation": Metric(
            "error",
            False,
            "evidence quality: the largest |step-cost drift - 1| over the served runs (the "
            "engine's speed while serving against its speed while the step table was timed)",
        ),
    },
    # The default cost model (roofline) against qualification/public/measurements.json and the
    # published rule (`aisim qualify public`, `aisim qualify rulecheck`).
    "cost_model": {
        "public_mape": Metric("error", False, "MAPE against every public measurement"),
        "public_held_out_mape": Metric(
            "error", False, "MAPE against public measurements not used to derive a constant"
        ),
        "public_decode_mape": Metric(
            "error", False, "MAPE against public decode latencies (held-out rows)"
        ),
        "public_sd_ratio_mape": Metric(
            "error", False, "MAPE of SD round / STP ratios (rows no version term saw)"
        ),
        "rounds_below_widened_stp": Metric(
            "count", False, "rulecheck points where a round is priced below the widened STP pass"
        ),
        # qualification/public/reference_prefill.json: Llama-3.1-70B, batch 1, 1k..16k prompt
        # tokens, TP 4 / 8 on H100 / H200 / B200, as a silicon-based reference simulator prices it.
        "prefill_70b_tp_median_error": Metric(
            "error", False, "median |error| of 70B TP 4 / 8 bf16 prefill against the reference"
        ),
        "prefill_70b_tp_max_error": Metric(
            "error", False, "worst |error| of 70B TP 4 / 8 bf16 prefill against the reference"
        ),
        "prefill_70b_tp_fp8_max_error": Metric(
            "error", False, "worst |error| of 70B TP 4 / 8 fp8-GEMM prefill against the reference"
        ),
    },
    # aisim's prediction intervals (docs/design.md#uncertainty) against held-out evidence
    # (`python -m qualification.uncertainty coverage`): per metric, the share of measured values
    # inside their central 90 % interval; the lowest and highest over the metrics.
    "interval_coverage": {
        "engine_min_coverage": Metric(
            "fraction", False, "lowest per-metric coverage of the 90 % intervals, engine runs"
        ),
        "engine_max_coverage": Metric(
            "error", False, "highest per-metric coverage of the 90 % intervals, engine runs"
        ),
        "public_min_coverage": Metric(
            "fraction",
            False,
            "lowest per-figure coverage of the 90 % intervals, public GPU serving points",
        ),
        "public_max_coverage": Metric(
            "error",
            False,
            "highest per-figure coverage of the 90 % intervals, public GPU serving points",
        ),
        "public_step_min_coverage": Metric(
            "fraction",
            False,
            "lowest per-quantity coverage of the 90 % intervals, public step rows",
        ),
        "public_step_max_coverage": Metric(
            "error", False, "highest per-quantity coverage of the 90 % intervals, public step rows"
        ),
        "public_replayed_min_coverage": Metric(
            "fraction",
            False,
            "lowest per-figure coverage of the replayed 90 % intervals, public GPU serving points",
        ),
        "public_replayed_max_coverage": Metric(
            "error",
            False,
            "highest per-figure coverage of the replayed 90 % intervals, public GPU serving points",
        ),
    },
    # The committed scored run of the public GPU measurements (`aisim qualify public-gpu --out
    # evidence/public-gpu/scored`): median |relative error| over held-out points.
    "public_gpu": {
        "inferencex_tpot_median_ape": Metric(
            "error", False, "InferenceX single-node: median |error| of mean TPOT"
        ),
        "inferencex_throughput_median_ape": Metric(
            "error", False, "InferenceX single-node: median |error| of throughput per GPU"
        ),
        "inferencex_ttft_median_ape": Metric(
            "error", False, "InferenceX single-node: median |error| of median TTFT"
        ),
        "inferencex_nosd_tpot_median_ape": Metric(
            "error", False, "InferenceX single-node without SD: median |error| of TPOT"
        ),
        "inferencex_nosd_throughput_median_ape": Metric(
            "error", False, "InferenceX single-node without SD: median |error| of throughput"
        ),
        "history_mtp_tpot_ratio_median_ape": Metric(
            "error", False, "InferenceX history MTP/no-MTP pairs: median |error| of the TPOT ratio"
        ),
        "qwen_mtp_gain_median_ape": Metric(
            "error", False, "Qwen3.8-27B B200: median |error| of the MTP throughput gain"
        ),
        "qwen_dspark_gain_median_ape": Metric(
            "error", False, "Qwen3.8-27B B200: median |error| of the DSpark k=7 throughput gain"
        ),
        "qwen_tpot_max_ape": Metric(
            "error", False, "Qwen3.8-27B B200, no SD and MTP: largest |error| of mean TPOT"
        ),
        "qwen_throughput_max_ape": Metric(
            "error", False, "Qwen3.8-27B B200, no SD and MTP: largest |error| of throughput"
        ),
    },
}

#: engine_comparison metric -> (figure in a scored engine section, noise-floor figure or None);
#: figures are percentages under ``summary`` / ``noise_floor`` (``leave_one_out``: the repeat
#: floor, ``_report_section.engine_section``).
ENGINE_FIGURES: Final = {
    "e2e_median_ape": (("e2e", "median_abs_error_pct"), None),
    "e2e_p90_ape": (("e2e", "p90_abs_error_pct"), None),
    "e2e_median_ape_vs_noise": (("e2e", "median_abs_error_pct"), ("e2e", "median_abs_error_pct")),
    "e2e_p90_ape_vs_noise": (("e2e", "p90_abs_error_pct"), ("e2e", "p90_abs_error_pct")),
    "e2e_median_ape_vs_repeat_floor": (
        ("e2e", "median_abs_error_pct"),
        ("leave_one_out", "e2e", "median_abs_error_pct"),
    ),
    "e2e_p90_ape_vs_repeat_floor": (
        ("e2e", "p90_abs_error_pct"),
        ("leave_one_out", "e2e", "p90_abs_error_pct"),
    ),
    "drift_adjusted_e2e_median_ape_vs_noise": (
        ("drift_adjusted", "e2e", "median_abs_error_pct"),
        ("e2e", "median_abs_error_pct"),
    ),
    "ttft_mean_relative_error": (("ttft", "mean_error_pct"), None),
    "throughput_error": (("throughput_error_pct",), None),
    "step_price_error": (("step_price_median_error_max_pct",), None),
    "step_cost_drift_deviation": (("step_cost_drift_max_deviation_pct",), None),
}

#: Checks that score one recorded dataset (a criterion names it with ``dataset``).
DATASET_CHECKS: Final = ("rule", "calibrated_heldout", "calibration_transfer")
#: Checks whose input is a results file written by another command (``input``).
FILE_CHECKS: Final = ("engine_comparison",)
