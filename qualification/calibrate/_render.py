"""Calibration results as markdown: fitted coefficients and held-out MAPE beside the rule."""

from __future__ import annotations

from typing import Any

from qualification.mape import markdown_table, percent


def calibration_rows(result: dict[str, Any]) -> list[list[str]]:
    """One row per predictor (published rule, held-out calibrated) on the same rows."""
    validation = result["validation"]
    rows = []
    for label, summary in (
        (
            f"published rule ({result['published']['a']} d + {result['published']['b']})",
            validation["published_rule_same_rows"],
        ),
        (f"calibrated, held out ({validation['method']})", validation["held_out"]),
    ):
        worst = summary["worst_config"]
        rows.append(
            [
                label,
                percent(summary["round_weighted_mape"]),
                percent(summary["equal_config_mape"]),
                percent(summary["p90_ape"]),
                "n/a" if worst is None else f"{worst['config_id']} ({percent(worst['ape'])})",
                percent(summary["bias"]),
            ]
        )
    return rows


CALIBRATION_HEADERS = ["predictor", "round-weighted", "equal-config", "P90", "worst", "bias"]


def calibration_markdown(result: dict[str, Any]) -> str:
    fitted, validation = result["fitted_all_rows"], result["validation"]
    fold_range = [(fold["a"], fold["b"]) for fold in validation["folds"]]
    a_values = [a for a, _ in fold_range]
    b_values = [b for _, b in fold_range]
    return "\n".join(
        [
            f"# Calibration of `{result['dataset']['name']}`",
            "",
            f"Fitted on all {validation['rows_used']} rounds: a = {fitted['a']:.4f}, "
            f"b = {fitted['b']:.4f} (published: a = {result['published']['a']}, "
            f"b = {result['published']['b']}). Held-out validation: "
            f"{validation['method']}, {len(validation['folds'])} folds, fold a in "
            f"[{min(a_values):.4f}, {max(a_values):.4f}], b in [{min(b_values):.4f}, "
            f"{max(b_values):.4f}]. Rows the rule could not answer: "
            f"{validation['rows_unanswered_by_rule']}.",
            "",
            markdown_table(CALIBRATION_HEADERS, calibration_rows(result)),
            "",
        ]
    )
