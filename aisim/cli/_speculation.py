"""``aisim speculation explain FILE``: resolve a speculation block and show what it means
(``aisim speculation acceptance`` lives in ``_acceptance.py``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from aisim._io import canonical_json, load_config_file
from aisim.config import resolve_speculation
from aisim.errors import ConfigError


def register(commands: Any) -> None:
    """Add the ``speculation`` subcommand (``explain`` and ``acceptance`` actions)."""
    parser = commands.add_parser(
        "speculation",
        help="resolve and explain speculative-decoding configs",
        description="Resolve and explain speculative-decoding configs (docs/speculation.md).",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    explain = actions.add_parser(
        "explain",
        help="print the resolved geometry, identity and acceptance of a speculation block",
        description=(
            "Resolve FILE (YAML or JSON; the block at top level or under 'speculation:') and "
            "print its geometry, cost identity and acceptance."
        ),
    )
    explain.add_argument("file", metavar="FILE", help="YAML or JSON file with the block")
    explain.add_argument("--json", action="store_true", help="print canonical JSON instead")
    explain.add_argument("--model", help="target model (catalogue name or config.json path)")
    explain.add_argument("--backend", choices=("vllm", "sglang"), help="serving backend")
    explain.add_argument(
        "--role", choices=("aggregated", "prefill", "decode"), help="worker role (replay)"
    )
    explain.set_defaults(handler=explain_command)
    profiles = actions.add_parser(
        "profiles",
        help="list the published acceptance profiles (acceptance_profile: NAME)",
        description=(
            "List the catalogue of published acceptance profiles with their sources and "
            "conditions (docs/speculation.md, 'Acceptance profiles'). NAME filters by a "
            "substring of the name."
        ),
    )
    profiles.add_argument("name", nargs="?", metavar="NAME", help="show names containing NAME")
    profiles.add_argument("--json", action="store_true", help="print canonical JSON instead")
    profiles.set_defaults(handler=profiles_command)
    from aisim.cli._acceptance import register_action

    register_action(actions)


def profiles_command(args: argparse.Namespace) -> int:
    """Handler of ``aisim speculation profiles``."""
    from aisim.speculation import PROFILES

    wanted = args.name or ""
    entries = [entry for entry in PROFILES if wanted in entry["name"]]
    if not entries:
        raise ConfigError(f"NAME: no acceptance profile name contains {wanted!r}")
    if args.json:
        sys.stdout.write(canonical_json(entries))
        return 0
    lines: list[str] = []
    for entry in entries:
        lines.append(entry["name"])
        lines.extend(f"  {line}" for line in profile_lines(entry))
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def profile_lines(entry: dict[str, Any]) -> list[str]:
    """A catalogue entry as aligned ``name: value`` lines (its numbers, conditions, source)."""
    numbers: list[str] = []
    if entry["acceptance_length"] is not None:
        numbers.append(f"acceptance length {entry['acceptance_length']:.6g}")
    curve = entry.get("acceptance_length_by_draft_tokens")
    if curve is not None:
        numbers.append(
            "acceptance length by draft tokens "
            + ", ".join(f"{int(point[0])}: {point[1]:.4g}" for point in curve)
        )
    if entry["unconditional_rates"] is not None:
        numbers.append(f"unconditional rates {_floats(entry['unconditional_rates'])}")
    spread = entry["spread"]
    if entry["conditional_rate"] is not None:
        if spread is not None and spread["kind"] == "range":
            numbers.append(
                f"conditional rate {spread['low']:.4g}..{spread['high']:.4g} "
                f"(point value {entry['conditional_rate']:.4g}, the midpoint)"
            )
        else:
            numbers.append(f"conditional rate {entry['conditional_rate']:.4g}")
    drafts = entry["num_draft_tokens"]
    source = entry["source"]
    where = source.get("url") or (
        f"{source['repository']}/{source['path']} @ {source['commit'][:12]}"
    )
    rows: list[tuple[str, object]] = [
        ("method", entry["method"]),
        ("target", entry["target"]),
        ("draft", entry["draft"] or "-"),
        (
            "draft tokens",
            ("per the curve" if curve is not None else "not published")
            if drafts is None
            else drafts,
        ),
        ("published", "; ".join(numbers)),
        ("spread", "none published" if spread is None else _inline(spread)),
        ("dataset", entry["dataset"]),
        ("engine", entry["engine"]),
        ("temperature", "not stated" if entry["temperature"] is None else entry["temperature"]),
        ("conditions", entry["conditions"]),
        ("source", f"{source['title']}: {where} ({source['locator']})"),
    ]
    if entry["note"]:
        rows.append(("note", entry["note"]))
    width = max(len(name) for name, _ in rows)
    return [f"{name.ljust(width)}  {_cell(value)}" for name, value in rows]


def explain_command(args: argparse.Namespace) -> int:
    """Handler of ``aisim speculation explain``; user errors raise ``ConfigError``."""
    try:
        document = load_config_file(args.file, "FILE")
    except ConfigError as exc:  # parser messages span lines; the CLI prints one
        raise ConfigError(" ".join(str(exc).split())) from None
    block: object = document
    path = "speculation"
    if isinstance(document, dict) and "speculation" in document:
        others = sorted(str(key) for key in document if key != "speculation")
        if others:
            raise ConfigError(
                f"{args.file}: expected a speculation block at top level or only under "
                f"'speculation:', found other keys too: {', '.join(others)}"
            )
        block = document["speculation"]
    elif document is None:
        raise ConfigError(f"{args.file}: the file is empty; expected a speculation block")
    base_dir = Path(args.file).resolve().parent
    resolved = resolve_speculation(
        block,
        model=args.model,
        backend=args.backend,
        role=args.role,
        path=path,
        base_dir=base_dir,
    )
    result = resolved.to_dict()
    # A block naming no kind (null, {}, or only a seed) is speculation off (docs/speculation.md),
    # as in replay; the text says so, not as though kind none had been configured.
    kind_given = isinstance(block, dict) and any(
        block.get(key) is not None for key in ("kind", "nextn")
    )
    if args.json:
        sys.stdout.write(canonical_json(result))
        return 0
    if result["kind"] == "none":
        replay = "replayable: plain decoding, one token per step (no SD rounds)"
    else:
        try:
            replay = f"chain of {resolved.replay_depth}, replayable"
            trace = resolved.acceptance_trace
            if resolved.kind == "suffix" and getattr(trace, "drafted", None) is None:
                replay = (
                    "not replayable: suffix replay needs an acceptance_trace with drafted counts"
                )
        except ConfigError as exc:
            replay = "not replayable: " + str(exc).split(": ", 2)[-1]
    sys.stdout.write(render_text(result, replay, args, kind_given=kind_given))
    return 0


def render_text(
    result: dict[str, Any], replay: str, args: argparse.Namespace, *, kind_given: bool = True
) -> str:
    """A human-readable table of the resolved block; ``kind_given`` False (a block with no
    ``kind``) adds a line saying speculation is therefore off."""
    context = ", ".join(
        f"{name} {value}"
        for name, value in (("model", args.model), ("backend", args.backend), ("role", args.role))
        if value
    )
    lines = [f"speculation: {result['kind']}" + (f"  ({context})" if context else "")]
    rows: list[tuple[str, object]] = []
    if not kind_given:
        from aisim.speculation import SCHEMES

        rows.append(
            (
                "kind",
                "not given, so speculation is off (a block without kind, empty or holding only "
                f"a seed, means disabled); to configure it give kind: one of {', '.join(SCHEMES)}",
            )
        )
    rows += [
        ("enabled", result["enabled"]),
        ("params", _inline(result["params"])),
        ("num_draft_tokens", result["num_draft_tokens"]),
        ("verify_width", result["verify_width"]),
        ("max_accepted_draft_tokens", result["max_accepted_draft_tokens"]),
        ("is_tree", result["is_tree"]),
    ]
    optional = ("tree_shape", "num_draft_layers", "draft_tp_size", "draft_model_path")
    rows.extend((key, result[key]) for key in optional if result[key] is not None)
    draft = result["draft_model"]
    if draft is not None:
        rows.append(
            (
                "draft geometry",
                f"{draft['num_layers']} layers, hidden {draft['hidden_size']}, "
                f"vocab {draft['vocab_size']}, draft vocab {result['draft_vocab_size']}",
            )
        )
    rows.append(("draft_identity", result["draft_identity"]))
    rows.append(("cost_identity", result["cost_identity"]))
    rows.append(("replay", replay))
    acceptance = result["acceptance"]
    if acceptance is None and result["kind"] == "none":
        rows.append(("acceptance", "not applicable (nothing is drafted)"))
    elif acceptance is None:
        rows.append(("acceptance", "none given (needed for replay)"))
    else:
        rows.extend(
            [
                ("acceptance from", acceptance["provenance"]),
                ("conditional rates", _floats(acceptance["conditional_rates"])),
                ("unconditional rates", _floats(acceptance["unconditional_rates"])),
                ("mean accepted E[a]", f"{acceptance['mean_accepted']:.6g}"),
                ("acceptance length", f"{acceptance['acceptance_length']:.6g}"),
                ("P(a = 0..d)", _floats(acceptance["accepted_length_distribution"])),
            ]
        )
    source = result.get("acceptance_source")
    if source is not None and "files" in source:
        files = " -> ".join(
            f"{item['path']} (sha256 {item['sha256'][:16]})" for item in source["files"]
        )
        rows.append(("acceptance_from", f"{source['format']}: {files}"))
    elif source is not None and source["format"] == "profile":
        rows.append(("acceptance profile", source["name"]))
        rows.extend(
            ("  " + line.split("  ", 1)[0].strip(), line.split("  ", 1)[1].strip())
            for line in profile_lines(source["entry"])
        )
    elif source is not None:
        rows.append(("acceptance", _inline(source)))
    for key in ("draft_length_schedule", "adaptive"):
        if key in result:
            rows.append(
                (key, _inline(result[key]) if isinstance(result[key], dict) else result[key])
            )
    if result["seed"] is not None:
        rows.append(("seed", result["seed"]))
    width = max(len(name) for name, _ in rows)
    lines.extend(f"  {name.ljust(width)}  {_cell(value)}" for name, value in rows)
    return "\n".join(lines) + "\n"


def _inline(params: dict[str, Any]) -> str:
    if not params:
        return "{}"
    return "{" + ", ".join(f"{key}: {_cell(value)}" for key, value in sorted(params.items())) + "}"


def _floats(values: list[float]) -> str:
    return "[" + ", ".join(f"{value:.4g}" for value in values) + "]"


def _cell(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_cell(item) for item in value) + "]"
    return str(value)
