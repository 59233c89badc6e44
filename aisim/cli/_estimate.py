"""``aisim estimate``: price one forward pass or SD round and show the evidence behind it."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Final

from aisim._io import canonical_json, load_config_file
from aisim.cli._args import ExamplesFormatter, integer, named_by_flag
from aisim.errors import ConfigError

#: The params key that carries the draft count, per speculation kind (``--depth``).
DEPTH_PARAM = {
    "mtp": "depth",
    "ngram": "num_speculative_tokens",
    "eagle3": "num_speculative_tokens",
    "draft_model": "num_speculative_tokens",
    "dflash": "num_draft_tokens",
    "dspark": "num_draft_tokens",
}


def register(commands: Any) -> None:
    """Add the ``estimate`` subcommand."""
    parser = commands.add_parser(
        "estimate",
        help="price one forward pass or SD round (latency, factor, evidence)",
        description=(
            "Price one iteration with best_available (docs/estimators.md): B decode requests with "
            "--kv past tokens each, optionally a prefill, a speculation scheme (priced natively) "
            "or --draft-length (the STP->SD scaling rule on an STP table or regression)."
        ),
        epilog=(
            "examples:\n"
            "  aisim estimate --model Qwen3-8B --hardware h100 --batch 8 --kv 1024 --scheme mtp --depth 3\n"
            "  aisim estimate --model Qwen3-8B --hardware h100 --batch 8 --kv 1024 --estimator roofline_ideal\n"
            "  aisim estimate --model Qwen3-8B --hardware h100 --batch 8 --kv 1024 --scheme mtp --depth 3 \\\n"
            "      --intervals   # with the cost model's error interval"
        ),
        formatter_class=ExamplesFormatter,
    )
    parser.add_argument("--model", required=True, help="catalogue name or config.json path")
    parser.add_argument("--hardware", help="catalogue GPU (h100, h200_sxm, ...) or a YAML file")
    parser.add_argument(
        "--backend",
        default="vllm",
        choices=("vllm", "sglang"),
        help="serving engine (default: %(default)s)",
    )
    parser.add_argument(
        "--tp", type=integer, default=1, help="tensor parallel size (default: %(default)s)"
    )
    parser.add_argument(
        "--batch", type=integer, default=1, help="decode requests B (default: %(default)s)"
    )
    parser.add_argument("--kv", type=integer, default=0, help="past KV tokens per decode request")
    parser.add_argument("--kv-total", type=integer, help="total past KV tokens (instead of --kv)")
    parser.add_argument("--prefill-tokens", type=integer, default=0, help="add one prefill request")
    parser.add_argument(
        "--draft-length", type=integer, help="apply the STP->SD scaling rule with d"
    )
    parser.add_argument("--scheme", choices=sorted(DEPTH_PARAM), help="speculation kind")
    parser.add_argument("--depth", type=integer, help="draft tokens per round for --scheme")
    parser.add_argument("--draft-config", help="the drafter's config.json (eagle3/dflash/dspark)")
    parser.add_argument("--draft-model", help="draft_model_path (catalogue name for draft_model)")
    parser.add_argument("--speculation", help="YAML/JSON speculation block (instead of --scheme)")
    parser.add_argument(
        "--table", action="append", default=[], metavar="FILE", help="recorded table file"
    )
    parser.add_argument(
        "--estimator",
        default="auto",
        choices=("auto", "roofline", "roofline_ideal", "table", "regression", "measured_round"),
        help="the cost model: auto picks the best the data allow (measured_round > table > "
        "regression > roofline, docs/estimators.md); roofline_ideal: the pure roofline bound "
        "(no overheads) (default: %(default)s)",
    )
    parser.add_argument(
        "--fallback-policy",
        default="deny",
        choices=("deny", "allow"),
        help="when --estimator cannot answer: deny (an error) or allow (the roofline) "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--role",
        default="aggregated",
        choices=("aggregated", "prefill", "decode"),
        help="worker role measured rounds must match (default: %(default)s)",
    )
    parser.add_argument("--json", action="store_true", help="print canonical JSON")
    parser.add_argument(
        "--intervals",
        action="store_true",
        help="add the p50 and central 90 %% interval of the price from the cost-error evidence "
        "(docs/design.md#uncertainty)",
    )
    parser.set_defaults(handler=estimate_command)


def _speculation(args: argparse.Namespace) -> object:
    scheme_flags = (
        ("--depth", args.depth),
        ("--draft-config", args.draft_config),
        ("--draft-model", args.draft_model),
    )
    if args.speculation is not None:
        if args.scheme is not None:
            raise ConfigError("--speculation: give either --speculation FILE or --scheme, not both")
        for flag, value in scheme_flags:
            if value is not None:
                raise ConfigError(
                    f"{flag}: goes with --scheme; with --speculation FILE put it in the file"
                )
        document = load_config_file(args.speculation, "--speculation")
        if document is None:
            # As `aisim speculation explain`: an empty file is not "no speculation".
            raise ConfigError(
                f"--speculation {args.speculation}: the file is empty; expected a speculation block"
            )
        if isinstance(document, dict) and "speculation" in document:
            others = sorted(str(key) for key in document if key != "speculation")
            if others:
                # As `aisim speculation explain`: a key beside the block would be ignored.
                raise ConfigError(
                    f"--speculation {args.speculation}: expected a speculation block at top "
                    f"level or only under 'speculation:', found other keys too: "
                    f"{', '.join(others)}"
                )
            return document["speculation"]
        return document
    if args.scheme is None:
        for flag, value in scheme_flags:
            if value is not None:
                raise ConfigError(f"{flag}: needs --scheme")
        return None
    block: dict[str, Any] = {"kind": args.scheme, "params": {}}
    if args.depth is not None:
        block["params"][DEPTH_PARAM[args.scheme]] = args.depth
    if args.draft_config is not None:
        block["draft_config"] = load_config_file(args.draft_config, "--draft-config")
    if args.draft_model is not None:
        block["draft_model_path"] = args.draft_model
    return block


#: The config fields ``aisim estimate`` builds from its flags: an error in one names the flag.
#: (``model`` and ``hardware`` already read as their flags.)
FLAG_OF_FIELD: Final = (
    ("tensor_parallel", "--tp"),
    ("tables", "--table"),
    ("draft_length", "--draft-length"),
)
#: ... and those of the speculation block ``--scheme`` builds.
SCHEME_FIELDS: Final = (
    ("speculation.params.depth", "--depth"),
    ("speculation.params.num_speculative_tokens", "--depth"),
    ("speculation.params.num_draft_tokens", "--depth"),
    ("speculation.draft_config", "--draft-config"),
    ("speculation.draft_model_path", "--draft-model"),
)


def estimate_command(args: argparse.Namespace) -> int:
    """Handler of ``aisim estimate``; user errors raise ``AisimError`` subclasses."""
    from aisim._fields import as_int
    from aisim.config import best_available
    from aisim.fpm import ForwardPassMetrics
    from aisim.traffic import MAX_REQUESTS, MAX_TOKENS

    # The replay's limits (docs/replay.md "Limits"): a batch no engine serves is not a query.
    as_int(args.batch, "--batch", 0, MAX_REQUESTS)
    as_int(args.kv, "--kv", 0, MAX_TOKENS)
    as_int(args.prefill_tokens, "--prefill-tokens", 0, MAX_TOKENS)
    if args.kv_total is not None:
        as_int(args.kv_total, "--kv-total", 0, max(args.batch, 1) * MAX_TOKENS)
    if args.kv_total is not None and args.kv != 0:
        raise ConfigError("--kv-total: give either --kv (per request) or --kv-total, not both")
    if args.batch == 0 and (args.kv != 0 or args.kv_total):
        flag = "--kv" if args.kv != 0 else "--kv-total"
        raise ConfigError(
            f"--batch: 0 decode requests hold no past KV tokens, got {flag} "
            f"{args.kv if args.kv != 0 else args.kv_total}; give --batch >= 1"
        )
    total_kv = args.kv_total if args.kv_total is not None else args.batch * args.kv
    config: dict[str, Any] = {
        "model": args.model,
        "backend": args.backend,
        "tensor_parallel": args.tp,
        "estimator": args.estimator,
        "fallback_policy": args.fallback_policy,
        "role": args.role,
    }
    if args.hardware is not None:
        config["hardware"] = args.hardware
    if args.table:
        config["tables"] = list(args.table)
    speculation = _speculation(args)
    if speculation is not None:
        config["speculation"] = speculation
    prefill = args.prefill_tokens
    metrics = ForwardPassMetrics(
        num_decode_requests=args.batch,
        sum_decode_kv_tokens=total_kv,
        num_prefill_requests=1 if prefill else 0,
        sum_prefill_tokens=prefill,
    )
    fields = FLAG_OF_FIELD + (
        (("speculation", "--speculation"),) if args.speculation is not None else SCHEME_FIELDS
    )
    try:
        model = best_available(config)
        result = model.estimate_forward_pass_detailed(metrics, draft_length=args.draft_length)
    except ConfigError as exc:
        raise ConfigError(named_by_flag(str(exc), fields)) from None
    capacity = capacity_note(args, total_kv + prefill)
    payload = {
        "query": {**metrics.to_dict(), "draft_length": args.draft_length},
        "selection": model.describe(),
        "result": result.to_dict(),
        "draft_weight_bytes": model.draft_weight_bytes,
        "draft_kv_bytes_per_token": model.draft_kv_bytes_per_token,
    }
    interval = None
    if args.intervals:
        from aisim.uncertainty import estimate_interval

        interval = estimate_interval(model, metrics, float(result.latency_ms), args.draft_length)
        payload["interval"] = interval
    if capacity is not None:
        payload["capacity_note"] = capacity
    if args.json:
        sys.stdout.write(canonical_json(payload))
        return 0
    sys.stdout.write(render_text(payload))
    if interval is not None:
        from aisim.uncertainty import render_interval

        sys.stdout.write(render_interval(interval))
    return 0


GIB = 2**30


def capacity_note(args: argparse.Namespace, kv_tokens: int) -> str | None:
    """A note when the target's weights and the query's KV tokens (past decode KV plus the
    prefill) do not fit one GPU's memory at this tensor parallelism: the price is still
    given (it is what such a pass would cost), but no engine could hold this batch (a replay
    refuses or preempts it). None when they fit, or without ``--hardware``."""
    from aisim.config import get_gpu, get_model
    from aisim.replay import kv_bytes_per_token_per_gpu

    if args.hardware is None:
        return None
    model = get_model(args.model, "model")
    gpu = get_gpu(args.hardware, "hardware")
    weights = model.weight_bytes / args.tp
    kv = kv_bytes_per_token_per_gpu(model, args.tp) * kv_tokens
    if weights + kv <= gpu.hbm_capacity_bytes:
        return None
    return (
        f"does not fit: {kv_tokens} KV tokens take {kv / GIB:.2f} GiB per GPU and the "
        f"target's weights {weights / GIB:.2f} GiB, over the {gpu.hbm_capacity_bytes / GIB:.2f} GiB of "
        f"one {gpu.name} at tensor parallel {args.tp}; an engine could not hold this batch "
        "(replay would refuse or preempt it)"
    )


def render_text(payload: dict[str, Any]) -> str:
    """Latency, factor and evidence as a few readable lines. With speculation the latency is
    one SD round (draft steps + one verify pass + sampling), and its parts are shown adding
    up to it."""
    result = payload["result"]
    diagnostics = result["diagnostics"]
    query = payload["query"]
    details = diagnostics["details"]
    speculative = diagnostics["speculation"] != "none" or result["draft_length"] is not None
    unit = "per SD round (drafting + verification)" if speculative else "per forward pass"
    lines = [
        f"latency: {result['latency_ms']:.4f} ms {unit}",
        f"query: B={query['num_decode_requests']} K_total={query['sum_decode_kv_tokens']}"
        + (
            f" prefill={query['sum_prefill_tokens']} tokens"
            if query["num_prefill_requests"]
            else ""
        ),
        f"estimator: {diagnostics['estimator']} (coverage: {diagnostics['coverage']})",
        f"speculation: {diagnostics['speculation']}",
    ]
    reference = result["stp_reference"]
    if reference is not None:
        widened = reference["metrics"]
        lines.append(
            f"scaling factor: {result['scaling_factor']:.2f} (d={result['draft_length']}); "
            f"STP reference {reference['latency_ms']:.4f} ms at B={widened['num_decode_requests']}"
            f", K_total={widened['sum_decode_kv_tokens']}"
        )
    else:
        lines.append("scaling factor: none (price as estimated)")
    if diagnostics["data_identity"]:
        lines.append(f"data identity: {diagnostics['data_identity']}")
    parts = ("target_ms", "draft_ms", "sampling_ms")
    if all(name in details for name in parts) and reference is None:
        total = sum(details[name] for name in parts)
        if abs(total - result["latency_ms"]) <= 1e-9 * max(1.0, total):
            if speculative:
                lines.append(
                    f"  = draft {details['draft_ms']:.4f} + target (verify) "
                    f"{details['target_ms']:.4f} + sampling {details['sampling_ms']:.4f} ms"
                )
            else:
                lines.append(
                    f"  = target {details['target_ms']:.4f} + sampling "
                    f"{details['sampling_ms']:.4f} ms"
                )
            if "overhead_ms" in details:
                lines.append(
                    f"  of which per-step and per-kernel overheads: {details['overhead_ms']:.4f} ms"
                )
            details = {name: value for name, value in details.items() if name not in parts}
            details.pop("overhead_ms", None)
    for name, value in details.items():
        lines.append(f"  {name}: {value:.6g}")
    if payload["draft_weight_bytes"]:
        lines.append(
            f"draft weights: {payload['draft_weight_bytes']} bytes; draft KV: "
            f"{payload['draft_kv_bytes_per_token']} bytes/token"
        )
    for note in diagnostics["notes"]:
        lines.append(f"note: {note}")
    if "capacity_note" in payload:
        lines.append(f"note: {payload['capacity_note']}")
    for skipped in diagnostics["skipped"]:
        lines.append(f"skipped {skipped['estimator']}: {skipped['reason']}")
    return "\n".join(lines) + "\n"
