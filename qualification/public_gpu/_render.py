"""The public-GPU report as markdown and PNG plots (matplotlib Agg, nothing time-dependent)."""

from __future__ import annotations

import io
from typing import Any

from qualification.mape import markdown_table


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.1f} %"


def _num(value: Any, digits: int = 1) -> str:
    return "n/a" if value is None else f"{float(value):.{digits}f}"


GROUP_HEADERS = [
    "group",
    "points",
    "TTFT median |err|",
    "TPOT (mean, else median) median |err|",
    "median TPOT median |err|",
    "throughput median |err|",
    "TPOT mean err (bias)",
    "throughput mean err (bias)",
]


def _group_rows(groups: dict[str, dict[str, Any]]) -> list[list[str]]:
    rows = []
    for name, stats in groups.items():
        tput = stats.get("tput_per_gpu") or stats.get("output_tput_per_gpu") or {}
        rows.append(
            [
                name,
                str(stats.get("tpot_ms", {}).get("n", 0)),
                _pct(stats.get("median_ttft_ms", {}).get("median_abs_error_pct")),
                _pct(stats.get("tpot_ms", {}).get("median_abs_error_pct")),
                _pct(stats.get("median_tpot_ms", {}).get("median_abs_error_pct")),
                _pct(tput.get("median_abs_error_pct")),
                _pct(stats.get("tpot_ms", {}).get("mean_error_pct")),
                _pct(tput.get("mean_error_pct")),
            ]
        )
    return rows


def history_ratio_table(groups: list[dict[str, Any]], by: str = "conc") -> str:
    """The held-out history MTP / no-MTP ratio groups (``_score.history_ratio_groups``, or
    ``history_ratio_workloads`` with ``by="workload"``) as a markdown table."""
    return markdown_table(
        [
            "GPU",
            "engine",
            "concurrency" if by == "conc" else "ISL/OSL",
            "pairs",
            "median error",
            "median abs error",
            "within 10 %",
        ],
        [
            [
                group["hardware"],
                group["engine"],
                str(group[by]),
                str(group["pairs"]),
                _pct(group["median_error_pct"]),
                _pct(group["median_abs_error_pct"]),
                f"{group['within_10pct']} / {group['pairs']}",
            ]
            for group in groups
        ],
    )


def to_markdown(report: dict[str, Any]) -> str:
    head = report["headline"]
    lines = [
        "# Public GPU measurements: predicted vs measured",
        "",
        f"Evidence type `{report['evidence_type']}`: other people's single runs on H100/H200/B200 "
        "(evidence/public-gpu/README.md). Estimator: the default `roofline` inside a replay of "
        "each workload as it was run. Errors are (predicted - measured) / measured.",
        "",
        f"- points: {report['counts']['points']}, predicted: {report['counts']['predicted']}, "
        f"refused: {report['counts']['refused']} (distinct replays: "
        f"{report['counts']['distinct_replays']})",
        f"- held out: {report['held_out']['description']}",
        "",
        "## Headline (held-out points)",
        "",
        markdown_table(
            ["figure", "value", "target"],
            [
                [
                    "InferenceX single-node, TPOT median |error| (mean; history: median)",
                    _pct(head["inferencex_median_abs_tpot_error_pct"]),
                    "<= 15 %",
                ],
                [
                    "InferenceX single-node, throughput per GPU median |error|",
                    _pct(head["inferencex_median_abs_throughput_error_pct"]),
                    "<= 15 %",
                ],
                [
                    "... no-SD points only: TPOT / throughput median |error|",
                    f"{_pct(head['inferencex_nosd_median_abs_tpot_error_pct'])} / "
                    f"{_pct(head['inferencex_nosd_median_abs_throughput_error_pct'])}",
                    "",
                ],
                [
                    "... MTP points only (acceptance fitted on H200 pairs): TPOT median |error|",
                    _pct(head["inferencex_mtp_median_abs_tpot_error_pct"]),
                    "",
                ],
                [
                    "InferenceX single-node, median TTFT median |error|",
                    _pct(head["inferencex_median_abs_ttft_error_pct"]),
                    "<= 25 %",
                ],
                [
                    f"history MTP/no-MTP TPOT ratio median |error| ({head['history_pairs']} pairs)",
                    _pct(head["history_mtp_tpot_ratio_median_abs_error_pct"]),
                    "<= 10 %",
                ],
                [
                    "history pairs with the TPOT ratio within 10 %",
                    f"{head['history_mtp_tpot_ratio_within_10pct']} / {head['history_pairs']}",
                    "all",
                ],
                [
                    "Qwen3.8-27B MTP throughput gain median |error| (ratio level)",
                    _pct(head["qwen_mtp_gain_median_abs_error_pct"]),
                    "<= 10 %",
                ],
                [
                    "Qwen3.8-27B MTP / none TPOT ratio median |error| (ratio level)",
                    _pct(head["qwen_mtp_tpot_ratio_median_abs_error_pct"]),
                    "",
                ],
                [
                    "Qwen3.8-27B DSpark k=7 throughput gain / TPOT ratio median |error| "
                    "(measured acceptance, assumed drafter)",
                    f"{_pct(head.get('qwen_dspark_gain_median_abs_error_pct'))} / "
                    f"{_pct(head.get('qwen_dspark_tpot_ratio_median_abs_error_pct'))}",
                    "",
                ],
                [
                    "Qwen3.8-27B TPOT median |error| (Qwen3.5/3.6-27B hybrid geometry)",
                    _pct(head["qwen_median_abs_tpot_error_pct"]),
                    "",
                ],
                [
                    f"Qwen3.8-27B no SD and MTP, largest TPOT / throughput |error| "
                    f"({head.get('qwen_nosd_mtp_points', 0)} points, every concurrency)",
                    f"{_pct(head.get('qwen_nosd_mtp_max_abs_tpot_error_pct'))} / "
                    f"{_pct(head.get('qwen_nosd_mtp_max_abs_throughput_error_pct'))}",
                    "<= 15 %",
                ],
            ],
        ),
        "",
    ]
    for key, title in (
        ("source", "By source"),
        ("hardware", "By hardware"),
        ("engine", "By engine"),
        ("sd", "By SD method"),
        ("regime", "By workload (ISL/OSL or prompt set)"),
        ("concurrency_band", "By concurrency"),
    ):
        lines += [
            f"## {title}",
            "",
            markdown_table(GROUP_HEADERS, _group_rows(report["groups"][key])),
            "",
        ]
    lines += ["## SD gain over no SD at the same concurrency", ""]
    lines += [
        markdown_table(
            [
                "pairs",
                "n",
                "TPOT ratio median |err|",
                "TPOT ratio bias",
                "gain median |err|",
                "gain bias",
            ],
            [
                [
                    name,
                    str(stats["tpot_ratio"]["n"]),
                    _pct(stats["tpot_ratio"]["median_abs_error_pct"]),
                    _pct(stats["tpot_ratio"]["mean_error_pct"]),
                    _pct(stats["throughput_gain"]["median_abs_error_pct"]),
                    _pct(stats["throughput_gain"]["mean_error_pct"]),
                ]
                for name, stats in report["pair_stats"].items()
            ],
        ),
        "",
        "## History MTP / no-MTP TPOT ratio by GPU, engine and concurrency (held-out pairs)",
        "",
        "Signed error: + the MTP round is priced too dear against the plain step, - too cheap.",
        "",
        history_ratio_table(report.get("history_ratio_groups", [])),
        "",
        "## History MTP / no-MTP TPOT ratio by GPU, engine and ISL/OSL (held-out pairs)",
        "",
        history_ratio_table(report.get("history_ratio_workloads", []), by="workload"),
        "",
        "## Refused points (counted, not scored)",
        "",
        markdown_table(
            ["reason", "points"],
            [[reason, str(count)] for reason, count in report["refused_reasons"].items()],
        ),
        "",
        "## Every scored point",
        "",
        markdown_table(
            [
                "point",
                "TTFT ms meas/pred",
                "TPOT ms meas/pred",
                "tput/GPU meas/pred",
                "err TTFT",
                "err TPOT",
                "err tput",
            ],
            [_point_row(row) for row in report["rows"]],
        ),
        "",
    ]
    return "\n".join(lines)


def _point_row(row: dict[str, Any]) -> list[str]:
    metric = "output_tput_per_gpu" if row["source"] == "speculators" else "tput_per_gpu"
    m, p, e = row["measured"], row["predicted"], row["error_pct"]
    tpot = "mean_tpot_ms" if m.get("mean_tpot_ms") else "median_tpot_ms"
    return [
        row["id"],
        f"{_num(m['median_ttft_ms'])} / {_num(p['median_ttft_ms'])}",
        f"{_num(m[tpot], 2)} / {_num(p[tpot], 2)}",
        f"{_num(m[metric], 0)} / {_num(p[metric], 0)}",
        _pct(e.get("median_ttft_ms")),
        _pct(e.get("tpot_ms")),
        _pct(e.get(metric)),
    ]


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2.0


def curve_plots(report: dict[str, Any]) -> dict[str, bytes]:
    """One PNG per hardware: throughput per GPU against interactivity (1000 / mean TPOT,
    tokens/s per user), one panel per workload, one curve per deployment through its
    concurrencies: measured (solid line, filled markers) and predicted (dashed line, hollow
    markers, the same colour)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    plots: dict[str, bytes] = {}
    by_hw: dict[str, list[dict[str, Any]]] = {}
    for row in report["rows"]:
        by_hw.setdefault(row["hardware"], []).append(row)
    palette = plt.get_cmap("tab20")
    for hardware, rows in sorted(by_hw.items()):
        regimes = sorted({row["regime"] for row in rows})
        figure, axes = plt.subplots(
            1, len(regimes), figsize=(6.0 * len(regimes), 5.0), squeeze=False
        )
        for axis, regime in zip(axes[0], regimes, strict=True):
            series: dict[str, list[dict[str, Any]]] = {}
            for row in rows:
                if row["regime"] != regime:
                    continue
                label = (
                    f"{row['source'].replace('inferencex-', '')} {row['engine']} {row['precision']} {row['sd']} tp{row['tp']}"
                    f"{'-ep' + str(row['ep']) if row['ep'] > 1 else ''}"
                    f"{'-dpa' if row['dp_attention'] else ''}"
                )
                series.setdefault(label, []).append(row)
            for index, (label, members) in enumerate(sorted(series.items())):
                metric = (
                    "output_tput_per_gpu"
                    if members[0]["source"] == "speculators"
                    else "tput_per_gpu"
                )
                members.sort(key=lambda r: (r["conc"], r["id"]))
                colour = palette(index % 20)
                tpot = (
                    "mean_tpot_ms"
                    if members[0]["measured"].get("mean_tpot_ms")
                    else "median_tpot_ms"
                )
                for kind, filled, line in (("measured", True, "-"), ("predicted", False, "--")):
                    xs = [1000.0 / r[kind][tpot] for r in members]
                    ys = [r[kind][metric] for r in members]
                    face = colour if filled else "none"
                    axis.plot(xs, ys, "o", color=colour, mfc=face, markersize=3 if filled else 4)
                    # The curve runs through each concurrency's median (repeated runs of one
                    # setting, in the history file, are the markers around it).
                    concs = sorted({r["conc"] for r in members})
                    mid_x = [
                        _median([x for x, r in zip(xs, members, strict=True) if r["conc"] == c])
                        for c in concs
                    ]
                    mid_y = [
                        _median([y for y, r in zip(ys, members, strict=True) if r["conc"] == c])
                        for c in concs
                    ]
                    axis.plot(
                        mid_x,
                        mid_y,
                        line,
                        color=colour,
                        linewidth=0.8,
                        label=label if filled else None,
                    )
            axis.set_xscale("log")
            axis.set_yscale("log")
            axis.set_xlabel("interactivity (tokens/s per user = 1000 / TPOT)")
            axis.set_ylabel("throughput (tokens/s per GPU)")
            axis.set_title(f"{hardware}: {regime}")
            style = [
                Line2D([], [], color="black", marker="o", markersize=3, label="measured"),
                Line2D(
                    [],
                    [],
                    color="black",
                    marker="o",
                    mfc="none",
                    linestyle="--",
                    markersize=4,
                    label="predicted",
                ),
            ]
            handles, _ = axis.get_legend_handles_labels()
            axis.legend(handles=style + handles, fontsize=5, ncol=1)
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=72, metadata={"Software": None})
        plt.close(figure)
        plots[f"curves_{hardware}.png"] = buffer.getvalue()
    return plots
