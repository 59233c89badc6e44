"""What a sweep says: the best point under the SLOs, SD-on vs SD-off gain at each load, the
Pareto front, and the two plots. Reads only the rows (a DataFrame from ``aisim.sweep.run`` or
``points.parquet``)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: Axis paths whose values change the speculation (the SD scheme of a point).
_SD_ROOTS = ("engine.speculation", "engine.nextn", "engine.nextn_accepted")


def is_speculation_axis(path: str) -> bool:
    parts = path.split(".")
    if any(path == root or path.startswith(root + ".") for root in _SD_ROOTS):
        return True
    return parts[:2] == ["engine", "workers"] and len(parts) >= 4 and parts[3] == "speculation"


def headline_latency(slos: dict[str, dict[str, float]]) -> str:
    """The latency column plots and the Pareto front use: the first SLO's first statistic,
    else p90 TPOT."""
    for metric, limits in slos.items():
        for stat in limits:
            return f"{stat}_{metric.removesuffix('_ms')}_ms"
    return "p90_tpot_ms"


def pareto_flags(frame: pd.DataFrame, slos: dict[str, dict[str, float]]) -> list[bool]:
    """True for the points no other point beats on both output tokens/s per GPU (higher) and
    the headline latency (lower)."""
    latency = headline_latency(slos)
    candidates = [
        (float(row[latency]), -float(row["output_tok_s_per_gpu"]), int(row["point"]), position)
        for position, row in enumerate(_records(frame))
        if row["status"] == "ok"
        and not _nan(row[latency])
        and not _nan(row["output_tok_s_per_gpu"])
    ]
    flags = [False] * len(frame)
    best = -math.inf
    for _, negative_throughput, _, position in sorted(candidates):
        if -negative_throughput > best:
            best = -negative_throughput
            flags[position] = True
    return flags


def summarize(frame: pd.DataFrame) -> dict[str, Any]:
    """JSON-ready summary: counts, invalid points, the best point under the SLOs and the SD
    gains. Best = the SLO-meeting point with the most goodput tokens/s per GPU (ties: more
    output tokens/s per GPU, then lower headline latency, then the earlier point)."""
    axes: list[str] = list(frame.attrs["axes"])
    slos: dict[str, dict[str, float]] = dict(frame.attrs["slos"])
    records = _records(frame)
    latency = headline_latency(slos)
    ok = [row for row in records if row["status"] == "ok"]
    meeting = [row for row in ok if row["slo_met"]]
    best = None
    if meeting:
        chosen = min(
            meeting,
            key=lambda row: (
                -row["goodput_tok_s_per_gpu"],
                -row["output_tok_s_per_gpu"],
                row[latency],
                row["point"],
            ),
        )
        best = _describe_point(chosen, axes, latency)
    summary: dict[str, Any] = _clean(
        {
            "name": frame.attrs.get("name", "sweep"),
            "points": len(records),
            "ok_points": len(ok),
            "slo_met_points": len(meeting),
            "slos": slos,
            "headline_latency": latency,
            "best": best,
            "invalid_points": [
                {
                    "point": row["point"],
                    "axes": {path: row[path] for path in axes},
                    "error": row["error"],
                }
                for row in records
                if row["status"] != "ok"
            ],
            "sd_gains": sd_gains(frame),
        }
    )
    return summary


def sd_gains(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """SD-on vs SD-off at each load: for every point with speculation, the point that differs
    only in its speculation axes and has none (if the sweep has one). ``tpot_speedup`` = mean
    TPOT off / on; ``goodput_gain`` and ``throughput_gain`` = on / off (None where off is 0)."""
    axes: list[str] = list(frame.attrs["axes"])
    load_axes = [path for path in axes if not is_speculation_axis(path)]
    baselines: dict[str, dict[str, Any]] = {}
    records = [row for row in _records(frame) if row["status"] == "ok"]
    for row in records:
        if row["sd_kind"] == "none":
            baselines.setdefault(_key(row, load_axes), row)
    gains = []
    for row in records:
        base = baselines.get(_key(row, load_axes))
        if row["sd_kind"] == "none" or base is None:
            continue
        gains.append(
            {
                "load": {path: _plain(row[path]) for path in load_axes},
                "scheme": scheme_label(row),
                "point": row["point"],
                "baseline_point": base["point"],
                "tpot_speedup": _ratio(base["mean_tpot_ms"], row["mean_tpot_ms"]),
                "goodput_gain": _ratio(row["goodput_tok_s_per_gpu"], base["goodput_tok_s_per_gpu"]),
                "throughput_gain": _ratio(
                    row["output_tok_s_per_gpu"], base["output_tok_s_per_gpu"]
                ),
                "mean_acceptance_length": row["mean_acceptance_length"],
            }
        )
    # Two schemes with the same kind and depth (other acceptance, say) keep apart by their
    # speculation axis values.
    sd_axes = [path for path in axes if is_speculation_axis(path)]
    variants: dict[str, set[str]] = {}
    by_point = {row["point"]: row for row in records}
    for gain in gains:
        variants.setdefault(gain["scheme"], set()).add(_key(by_point[gain["point"]], sd_axes))
    for gain in gains:
        if len(variants[gain["scheme"]]) > 1:
            row = by_point[gain["point"]]
            gain["scheme"] += " (" + "; ".join(str(row[path]) for path in sd_axes) + ")"
    return gains


def scheme_label(row: dict[str, Any]) -> str:
    """``ngram d=3``: the point's speculation kind and draft length."""
    return f"{row['sd_kind']} d={int(row['sd_draft_length'])}"


def write_plots(frame: pd.DataFrame, folder: Path) -> list[Path]:
    """``throughput_vs_latency.png`` (Pareto front drawn) and, when the sweep has SD-off
    baselines, ``sd_gain_vs_load.png`` (``plot_images``), each written atomically."""
    from aisim._io import atomic_write_bytes

    return [
        atomic_write_bytes(folder / name, data, overwrite=True)
        for name, data in plot_images(frame).items()
    ]


def plot_images(frame: pd.DataFrame) -> dict[str, bytes]:
    """The sweep's plots as PNG bytes by file name: ``throughput_vs_latency.png`` and, when the
    sweep has SD-off baselines, ``sd_gain_vs_load.png``; without time stamps (byte-stable)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    slos: dict[str, dict[str, float]] = dict(frame.attrs["slos"])
    latency = headline_latency(slos)
    images = {}
    ok = frame[frame["status"] == "ok"]
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for met, marker, label in ((True, "o", "meets SLOs"), (False, "x", "misses SLOs")):
        part = ok[ok["slo_met"] == met]
        axis.scatter(part[latency], part["output_tok_s_per_gpu"], marker=marker, label=label)
    front = ok[ok["pareto"]].sort_values(latency)
    axis.step(
        front[latency],
        front["output_tok_s_per_gpu"],
        where="post",
        color="black",
        label="Pareto front",
    )
    for metric, limits in slos.items():
        for stat, limit in limits.items():
            if f"{stat}_{metric.removesuffix('_ms')}_ms" == latency:
                axis.axvline(
                    limit, linestyle="--", color="grey", label=f"SLO {latency} <= {limit:g}"
                )
    axis.set_xlabel(f"{latency} (ms)")
    axis.set_ylabel("output tokens/s per GPU")
    axis.legend()
    images["throughput_vs_latency.png"] = _png(figure)
    plt.close(figure)
    gains = sd_gains(frame)
    if gains:
        figure, axis = plt.subplots(figsize=(7, 4.5))
        loads = sorted({json.dumps(g["load"], sort_keys=True) for g in gains})
        numeric = _numeric_load(gains)
        for scheme in sorted({g["scheme"] for g in gains}):
            mine = [g for g in gains if g["scheme"] == scheme]
            xs = [
                numeric(g)
                if numeric is not None
                else loads.index(json.dumps(g["load"], sort_keys=True))
                for g in mine
            ]
            ys = [g["tpot_speedup"] if g["tpot_speedup"] is not None else math.nan for g in mine]
            order = sorted(range(len(xs)), key=lambda i: xs[i])
            axis.plot([xs[i] for i in order], [ys[i] for i in order], marker="o", label=scheme)
        axis.axhline(1.0, color="grey", linestyle=":")
        if numeric is None:
            axis.set_xticks(range(len(loads)), loads, rotation=20, fontsize=7)
        axis.set_xlabel(_load_label(gains) if numeric is not None else "load")
        axis.set_ylabel("SD speedup of mean TPOT (off / on)")
        axis.legend(fontsize=7)
        images["sd_gain_vs_load.png"] = _png(figure)
        plt.close(figure)
    return images


def render_text(summary: dict[str, Any]) -> str:
    lines = [
        f"sweep {summary['name']}: {summary['points']} points, {summary['ok_points']} ran, "
        f"{summary['slo_met_points']} meet the SLOs {json.dumps(summary['slos'], sort_keys=True)}"
    ]
    best = summary["best"]
    if best is None:
        lines.append("best: no point meets the SLOs")
    else:
        lines.append(
            f"best: point {best['point']} {json.dumps(best['axes'], sort_keys=True)}: "
            f"{best['goodput_tok_s_per_gpu']:.1f} goodput tok/s/GPU, "
            f"{best['output_tok_s_per_gpu']:.1f} tok/s/GPU, "
            f"{summary['headline_latency']} {best['latency_ms']:.3f}"
        )
    for gain in summary["sd_gains"]:
        speedup = gain["tpot_speedup"]
        lines.append(
            f"SD gain at {json.dumps(gain['load'], sort_keys=True)}: {gain['scheme']}: TPOT x"
            f"{'n/a' if speedup is None else f'{speedup:.3f}'}"
        )
    for invalid in summary["invalid_points"]:
        lines.append(
            f"invalid point {invalid['point']} {json.dumps(invalid['axes'], sort_keys=True)}: "
            f"{invalid['error']}"
        )
    return "\n".join(lines) + "\n"


def _describe_point(row: dict[str, Any], axes: list[str], latency: str) -> dict[str, Any]:
    return {
        "point": row["point"],
        "axes": {path: row[path] for path in axes},
        "sd_kind": row["sd_kind"],
        "sd_draft_length": row["sd_draft_length"],
        "goodput_tok_s_per_gpu": row["goodput_tok_s_per_gpu"],
        "output_tok_s_per_gpu": row["output_tok_s_per_gpu"],
        "latency_ms": row[latency],
        "p90_tpot_ms": row["p90_tpot_ms"],
        "p90_ttft_ms": row["p90_ttft_ms"],
        "mean_acceptance_length": row["mean_acceptance_length"],
    }


def _png(figure: Any) -> bytes:
    import io

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return buffer.getvalue()


def _numeric_load(gains: list[dict[str, Any]]) -> Any:
    """A function giving each gain's load as a number, when the load is one numeric axis."""
    keys = {tuple(sorted(g["load"])) for g in gains}
    if len(keys) != 1 or len(next(iter(keys))) != 1:
        return None
    (path,) = next(iter(keys))
    if not all(isinstance(g["load"][path], (int, float)) for g in gains):
        return None
    return lambda g: g["load"][path]


def _load_label(gains: list[dict[str, Any]]) -> str:
    return str(next(iter(gains[0]["load"])))


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(key): value for key, value in row.items()} for row in frame.to_dict("records")]


def _key(row: dict[str, Any], paths: list[str]) -> str:
    return json.dumps([_plain(row[path]) for path in paths], sort_keys=True)


def _ratio(numerator: Any, denominator: Any) -> float | None:
    if _nan(numerator) or _nan(denominator) or denominator == 0:
        return None
    return float(numerator) / float(denominator)


def _nan(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _plain(value: Any) -> Any:
    """numpy scalars to Python ones (JSON-ready)."""
    if hasattr(value, "item"):
        return value.item()
    return value


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _clean(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_clean(item) for item in value]
    value = _plain(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    return value
