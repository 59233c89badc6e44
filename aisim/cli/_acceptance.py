"""``aisim speculation acceptance SOURCE [LATER]``: acceptance read from an engine's metrics."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from aisim._io import canonical_json
from aisim.errors import ConfigError

CONFIDENCE = 0.95


def register_action(actions: Any) -> None:
    """Add the ``acceptance`` action under ``aisim speculation``."""
    from aisim.cli._args import integer
    from aisim.speculation import ENGINE_METRICS_FORMATS as FORMATS

    parser = actions.add_parser(
        "acceptance",
        help="read the acceptance profile from vLLM/SGLang metrics, logs or request outputs",
        description=(
            "Read an engine's speculative-decoding acceptance from a Prometheus scrape (two "
            "scrapes: the counters' difference over the window between them), an SGLang log or "
            "SGLang request outputs, and print it in every form aisim knows, with the number of "
            "drafts, a binomial interval per position and a block to paste into "
            "engine.speculation (docs/speculation.md)."
        ),
    )
    parser.add_argument("source", metavar="SOURCE", help="metrics scrape, log or request JSON")
    parser.add_argument(
        "later",
        metavar="LATER",
        nargs="?",
        help="a later scrape of the same engine: measure the window SOURCE -> LATER",
    )
    parser.add_argument(
        "--format", choices=FORMATS, help="what SOURCE is (default: told from its text)"
    )
    parser.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="select the series carrying this label (repeatable), e.g. model_name=Qwen/Qwen3-8B",
    )
    parser.add_argument(
        "--depth",
        type=integer,
        help="the draft depth d to state the profile at (default: the positions the source "
        "reports; required for sources that report only a mean)",
    )
    parser.add_argument("--json", action="store_true", help="print canonical JSON instead")
    parser.set_defaults(handler=acceptance_command)


def acceptance_command(args: argparse.Namespace) -> int:
    """Handler of ``aisim speculation acceptance``; user errors raise ``ConfigError``."""
    from aisim._fields import as_int
    from aisim.speculation import MAX_ACCEPTANCE_DEPTH, measure_engine_acceptance

    labels: dict[str, str] = {}
    for item in args.label:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--label: expected KEY=VALUE, got {item!r}")
        if key in labels:  # the later one used to replace the earlier silently
            raise ConfigError(
                f"--label {item!r}: {key} is already given ({key}={labels[key]}); a series "
                "carries one value per label"
            )
        labels[key] = value
    depth: int | None = None
    if args.depth is not None:
        depth = as_int(args.depth, "--depth", 1, MAX_ACCEPTANCE_DEPTH)
    if args.later is None:
        measured = measure_engine_acceptance(args.source, args.format, labels=labels)
    else:
        measured = measure_engine_acceptance(
            args.later, args.format, labels=labels, baseline=args.source
        )
    profile = measured.profile(depth, "acceptance")
    intervals = measured.intervals(profile.depth, CONFIDENCE)
    snippet: dict[str, Any]
    if measured.acceptance_length is not None and intervals is None:
        snippet = {"acceptance_length": measured.acceptance_length}
    else:
        snippet = {"unconditional_acceptance_rates": list(profile.unconditional_rates)}
    reference: dict[str, Any] = {"path": measured.files[-1].path, "format": measured.format}
    if len(measured.files) == 2:
        reference["baseline"] = measured.files[0].path
    if labels:
        reference["labels"] = labels
    result = {
        "source": measured.record(),
        "depth": profile.depth,
        "profile": profile.to_dict(),
        "confidence": CONFIDENCE,
        "positions": intervals,
        "speculation": snippet,
        "acceptance_from": reference,
    }
    if args.json:
        sys.stdout.write(canonical_json(result))
    else:
        sys.stdout.write(render_text(result))
    return 0


def render_text(result: dict[str, Any]) -> str:
    """The measured profile as a table, then the block to paste into ``engine.speculation``."""
    source = result["source"]
    profile = result["profile"]
    files = " -> ".join(repr(item["path"]) for item in source["files"])
    lines = [f"acceptance from {source['format']}: {files}"]
    rows: list[tuple[str, str]] = []
    if source["labels"]:
        rows.append(("series", ", ".join(f"{k}={v}" for k, v in source["labels"].items())))
    rows.append(("basis", source["basis"]))
    if source["drafts"] is not None:
        counts = [
            f"{name} {source[key]}"
            for name, key in (("draft tokens", "draft_tokens"), ("accepted", "accepted_tokens"))
            if source[key] is not None
        ]
        rows.append(
            ("drafts", f"{source['drafts']}" + (f" ({', '.join(counts)})" if counts else ""))
        )
    if source["windows"] is not None and source["drafts"] is None:
        rows.append(("windows", str(source["windows"])))
    rows.append(("depth", str(result["depth"])))
    rows.extend(
        [
            ("conditional p_i", _floats(profile["conditional_rates"])),
            ("unconditional u_i", _floats(profile["unconditional_rates"])),
            ("mean accepted E[a]", f"{profile['mean_accepted']:.6g}"),
            ("acceptance length", f"{profile['acceptance_length']:.6g}"),
            ("P(a = 0..d)", _floats(profile["accepted_length_distribution"])),
        ]
    )
    width = max(len(name) for name, _ in rows)
    lines.extend(f"  {name.ljust(width)}  {value}" for name, value in rows)
    positions = result["positions"]
    percent = f"{result['confidence']:.0%}"
    if positions is None:
        lines.append(f"  no {percent} intervals: this source reports a mean, not counts")
    else:
        lines.append(
            f"  {'i':>3}  {'accepted':>10}  {'p_i':>8}  {percent + ' CI':<18}  {'u_i':>8}  "
            f"{percent} CI"
        )
        for row, conditional, unconditional in zip(
            positions, profile["conditional_rates"], profile["unconditional_rates"], strict=True
        ):
            lines.append(
                f"  {row['position']:>3}  {row['accepted']:>10}  {conditional:>8.4f}  "
                f"{_interval(row['conditional_ci']):<18}  {unconditional:>8.4f}  "
                f"{_interval(row['unconditional_ci'])}"
            )
    lines.append("")
    lines.append("# paste into engine.speculation (or any speculation block):")
    for key, value in result["speculation"].items():
        shown = "[" + ", ".join(repr(x) for x in value) + "]" if isinstance(value, list) else value
        lines.append(f"{key}: {shown!s}")
    reference = result["acceptance_from"]
    parts = [f"path: {reference['path']}", f"format: {reference['format']}"]
    if "baseline" in reference:
        parts.append(f"baseline: {reference['baseline']}")
    if "labels" in reference:
        labels = ", ".join(f"{k}: {_yaml_scalar(v)}" for k, v in reference["labels"].items())
        parts.append(f"labels: {{{labels}}}")
    lines.append("# or read the file when the config is resolved:")
    lines.append(f"# acceptance_from: {{{', '.join(parts)}}}")
    return "\n".join(lines) + "\n"


def _floats(values: list[float]) -> str:
    return "[" + ", ".join(f"{value:.4g}" for value in values) + "]"


def _interval(bounds: list[float] | None) -> str:
    if bounds is None:
        return "n/a (no trials)"
    return f"[{bounds[0]:.4f}, {bounds[1]:.4f}]"


def _yaml_scalar(value: str) -> str:
    import json

    return json.dumps(value)
