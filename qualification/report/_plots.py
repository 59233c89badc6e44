"""The report's trend figure: mean signed error by d, B and K with bootstrap intervals."""

from __future__ import annotations

from typing import Any

from qualification.mape import png_bytes

_SERIES = (
    ("rule", "published rule", "tab:blue"),
    ("calibrated_heldout", "calibrated, held out", "tab:orange"),
)


def trend_plot(statistics: dict[str, Any], title: str) -> bytes:
    """Three panels (d, B, K); each point is the mean configuration signed error at that value,
    the bar its bootstrap interval over those configurations."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 3, figsize=(10, 3.4), sharey=True)
    for axis, name in zip(axes, ("d", "B", "K"), strict=True):
        for offset, (key, label, colour) in enumerate(_SERIES):
            rows = statistics.get(key, {}).get("signed_error_by", {}).get(name, [])
            if not rows:
                continue
            positions = [index + 0.15 * (offset - 0.5) for index in range(len(rows))]
            estimates = [100 * row["estimate"] for row in rows]
            below = [
                0.0 if row["low"] is None else 100 * (row["estimate"] - row["low"]) for row in rows
            ]
            above = [
                0.0 if row["high"] is None else 100 * (row["high"] - row["estimate"])
                for row in rows
            ]
            axis.errorbar(
                positions,
                estimates,
                yerr=[below, above],
                fmt="o",
                capsize=3,
                color=colour,
                label=label,
            )
            axis.set_xticks(range(len(rows)))
            axis.set_xticklabels([str(row["value"]) for row in rows])
        axis.axhline(0, color="black", linewidth=0.8)
        axis.set_xlabel(name)
    axes[0].set_ylabel("mean signed error (%)")
    axes[0].legend(fontsize=7)
    figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    data = png_bytes(figure)
    plt.close(figure)
    return data
