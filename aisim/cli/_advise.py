"""``aisim advise``: should SD be on for this deployment, with which method and depth, and up to
which load? Ranks SD off and every applicable method x depth by goodput with 90 % intervals,
the probability each beats SD off, and the load where SD stops helping
(docs/uncertainty.md#aisim-advise). Writes DIR/advice.json, advice.md, advice.html and gain_vs_load.png (the plot needs
``aisim[qualify]``'s matplotlib; without it the other files are written and a note says so)."""

from __future__ import annotations

import argparse
import base64
import copy
import html
import math
import sys
from pathlib import Path
from typing import Any, Final

from aisim.cli._args import ExamplesFormatter, integer, named_by_flag, number
from aisim.errors import ConfigError

DEFAULT_REQUESTS = 400
DEFAULT_SCREEN = 5
OUTPUTS = ("advice.json", "advice.md", "advice.html", "gain_vs_load.png")


def register(commands: Any) -> None:
    """Add the ``advise`` subcommand."""
    from aisim.cli._intervals import add_interval_arguments

    parser = commands.add_parser(
        "advise",
        help="should SD be on? rank SD off and each method/depth by goodput, with intervals",
        description=(
            "Replay SD off and every method x depth given an acceptance, at several loads, N "
            "times each with the uncertain inputs drawn (docs/uncertainty.md#aisim-advise); rank "
            "them by goodput under the SLOs, give the probability each beats SD off and the load "
            "where SD stops helping. Writes DIR/advice.{json,md,html} and DIR/gain_vs_load.png."
        ),
        epilog=(
            "examples:\n"
            "  aisim advise --model Qwen/Qwen3-8B --hardware h100_sxm --rate 4 --requests 100 \\\n"
            "      --acceptance ngram=0.5 --replicas 5 --out out/advice\n"
            "  aisim advise --model Qwen/Qwen3-8B --hardware h100_sxm --rate 4 \\\n"
            "      --acceptance ngram=0.5 --acceptance eagle3=vllm-ci/eagle3/qwen3-8b/mt-bench \\\n"
            "      --draft-config qualification/cases/drafts/eagle3_qwen3_8b.json --out out/advice"
        ),
        formatter_class=ExamplesFormatter,
    )
    parser.add_argument("--model", required=True, help="catalogue name or config.json path")
    parser.add_argument("--hardware", required=True, help="catalogue GPU or a GPU YAML file")
    parser.add_argument(
        "--backend",
        default="vllm",
        choices=("vllm", "sglang"),
        help="scheduler replayed (default: %(default)s)",
    )
    parser.add_argument(
        "--tp", type=integer, default=1, help="tensor parallel size (default: %(default)s)"
    )
    parser.add_argument(
        "--max-sequences", type=integer, default=256, help="running cap (default: %(default)s)"
    )
    parser.add_argument(
        "--max-batched-tokens",
        type=integer,
        default=8192,
        help="token budget per pass (default: %(default)s)",
    )
    parser.add_argument(
        "--kv-blocks",
        type=integer,
        help="KV blocks per rank for every configuration (default: SD off's default capacity)",
    )
    traffic = parser.add_mutually_exclusive_group(required=True)
    traffic.add_argument("--rate", type=number, help="Poisson arrivals, requests/s")
    traffic.add_argument("--trace", help="a Mooncake JSONL or CSV trace (its timestamps)")
    traffic.add_argument("--concurrency", type=integer, help="closed loop with this many users")
    parser.add_argument(
        "--requests",
        type=integer,
        help=f"requests replayed (synthetic: {DEFAULT_REQUESTS}; a trace: all, or its first N)",
    )
    parser.add_argument(
        "--prompt-tokens", type=integer, default=1024, help="synthetic (default: %(default)s)"
    )
    parser.add_argument(
        "--output-tokens", type=integer, default=256, help="synthetic (default: %(default)s)"
    )
    parser.add_argument(
        "--slo",
        action="append",
        default=[],
        metavar="METRIC:STAT=MS",
        help="an SLO (tpot_ms:p90=50) (default: tpot_ms:p90=50 and ttft_ms:p90=2000)",
    )
    parser.add_argument(
        "--acceptance",
        action="append",
        default=[],
        metavar="METHOD=RATE|PROFILE",
        help="a method to try and its acceptance: an i.i.d. per-draft rate or a profile name "
        "(aisim speculation profiles); repeat per method",
    )
    parser.add_argument(
        "--depths", default="1,2,3,4", help="draft lengths to try (default: %(default)s)"
    )
    parser.add_argument(
        "--loads",
        default="0.5,1,2,4",
        help="load multipliers of the traffic (default: %(default)s)",
    )
    parser.add_argument("--draft-config", help="the drafter's config.json (eagle3/dflash/dspark)")
    parser.add_argument("--draft-model", help="draft_model_path for draft_model")
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder")
    parser.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    parser.add_argument("--json", action="store_true", help="print advice.json instead")
    parser.add_argument(
        "--screen",
        type=integer,
        default=DEFAULT_SCREEN,
        metavar="K",
        help="replicas every configuration gets before the race; only SD off, the best SD "
        "configuration and the nominal-load configurations not clearly dominated get all N "
        "(--screen N or more: every configuration gets N) (default: %(default)s)",
    )
    add_interval_arguments(parser, replicas_flag=True)
    parser.set_defaults(handler=advise_command)


def _integers(text: str, flag: str, low: int, high: int) -> list[int]:
    """``text``'s comma list of distinct integers in ``low..high``, sorted; a repeated one (a
    slip: one typed twice for another) is refused, as is anything but ASCII digits (``'²'``
    passed ``str.isdigit`` and ended in int()'s traceback)."""
    allowed = f"expected a comma list of distinct integers in {low}..{high}"
    values: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not (part.isascii() and part.isdigit()) or not low <= int(part) <= high:
            raise ConfigError(f"{flag} {text!r}: {allowed}")
        if int(part) in values:
            raise ConfigError(f"{flag} {text!r}: {int(part)} is given twice; {allowed}")
        values.append(int(part))
    return sorted(values)


def _loads(text: str) -> list[float]:
    """``--loads``' comma list of distinct multipliers in 0.01..100, sorted, with the nominal
    load 1 added when it is not given."""
    allowed = "expected a comma list of distinct multipliers in 0.01..100"
    values: list[float] = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and 0.01 <= value <= 100):
            raise ConfigError(f"--loads {text!r}: {allowed}")
        if value in values:
            raise ConfigError(f"--loads {text!r}: {value:g} is given twice; {allowed}")
        values.append(value)
    return sorted(set(values) | {1.0})


def build_question(args: argparse.Namespace) -> Any:
    """The checked question of ``aisim advise``'s flags."""
    from aisim._io import MAX_TRACE_BYTES, input_file_problem
    from aisim.cli._intervals import check_acceptance_rounds, check_workers, parse_slos
    from aisim.config import build_plan
    from aisim.uncertainty import (
        DEFAULT_SLOS,
        Question,
        Sources,
        check_replicas,
        check_seed,
        parse_acceptance,
        variants,
    )

    check_replicas(args.replicas, "--replicas")
    check_replicas(args.screen, "--screen")
    check_seed(args.seed)
    sources = Sources.parse(args.sources)
    slos = parse_slos(args.slo) if args.slo else {k: dict(v) for k, v in DEFAULT_SLOS.items()}
    for flag, value in (
        ("--tp", args.tp),
        ("--max-sequences", args.max_sequences),
        ("--max-batched-tokens", args.max_batched_tokens),
        ("--prompt-tokens", args.prompt_tokens),
        ("--output-tokens", args.output_tokens),
    ):
        if value < 1:
            raise ConfigError(f"{flag}: expected an integer >= 1, got {value}")
    check_workers(args.workers)
    check_acceptance_rounds(args.acceptance_rounds)
    if args.requests is not None and args.requests < 1:
        raise ConfigError(f"--requests: expected an integer >= 1, got {args.requests}")
    depths = _integers(args.depths, "--depths", 1, 5)
    loads = _loads(args.loads)
    draft_config = _draft_config(args.draft_config) if args.draft_config is not None else None
    found, notes = variants(
        parse_acceptance(args.acceptance), depths, draft_config, args.draft_model
    )
    base_dir = Path.cwd()
    if args.rate is not None:
        if not args.rate > 0:
            raise ConfigError(f"--rate: expected requests/s > 0, got {args.rate}")
        traffic: dict[str, Any] = {
            "source": _synthetic(args),
            "load": {"type": "poisson", "rate_rps": args.rate},
        }
        kind = "rate"
    elif args.concurrency is not None:
        if args.concurrency < 1:
            raise ConfigError(f"--concurrency: expected an integer >= 1, got {args.concurrency}")
        traffic = {
            "source": _synthetic(args),
            "load": {"type": "concurrency", "users": args.concurrency},
        }
        kind = "concurrency"
    else:
        path = Path(args.trace)
        problem = input_file_problem(path, MAX_TRACE_BYTES)
        if problem is not None:
            raise ConfigError(f"--trace {args.trace!r}: {problem}")
        traffic = {
            "source": {"type": "trace", "path": str(path.resolve())},
            "load": {"type": "trace_timestamps", "time_scale": 1.0},
        }
        if args.requests is not None:
            traffic["max_requests"] = args.requests
        kind = "trace"
    engine: dict[str, Any] = {
        "model": args.model,
        "hardware": args.hardware,
        "backend": args.backend,
        "workers": {"aggregated": _worker(args)},
    }
    try:
        plan, _ = build_plan({"traffic": traffic, "engine": engine}, base_dir)
        # The loads searched scale the traffic (``aisim.uncertainty``'s ``config_for``): the
        # extreme ones must be valid too, before any replay runs.
        for load in sorted({min(loads), max(loads)}):
            scaled = copy.deepcopy(traffic)
            if kind == "rate":
                scaled["load"]["rate_rps"] = args.rate * load
            elif kind == "trace":
                scaled["load"]["time_scale"] = 1.0 / load
            else:
                scaled["load"]["users"] = max(1, round(args.concurrency * load))
            try:
                build_plan({"traffic": scaled, "engine": engine}, base_dir)
            except ConfigError as exc:
                raise ConfigError(f"--loads {load:g}: {exc}") from None
    except ConfigError as exc:
        raise ConfigError(named_by_flag(str(exc), FLAG_OF_FIELD)) from None
    if args.kv_blocks is None:
        blocks = plan.workers[0].kv.blocks
        notes.append(
            f"KV capacity: {blocks} blocks per rank for every configuration (SD off's default "
            "capacity; draft weights and draft KV are not subtracted: give --kv-blocks)"
        )
    else:
        blocks = args.kv_blocks
    engine["workers"]["aggregated"]["kv_cache"] = {"capacity": {"type": "fixed", "blocks": blocks}}
    nominal = float(args.rate) if kind == "rate" else 0.0
    if kind == "trace":
        nominal = _trace_rate(plan)
        if not nominal > 0:  # advised 'at 0 req/s', every load the same replay
            raise ConfigError(
                f"--trace {args.trace!r}: the requests replayed all arrive at one time, so the "
                "trace has no rate for --loads to scale; give a trace whose arrivals span some "
                "time, or --rate / --concurrency"
            )
    if kind == "concurrency":
        nominal = float(args.concurrency)
    return Question(
        engine,
        traffic,
        kind,
        nominal,
        loads,
        found,
        slos,
        args.replicas,
        args.seed,
        sources,
        args.acceptance_rounds,
        base_dir,
        notes,
        args.screen,
    )


#: The config fields ``aisim advise`` builds from its flags: an error in one names the flag.
FLAG_OF_FIELD: Final = (
    ("traffic.source.num_requests", "--requests"),
    ("traffic.source.prompt_tokens", "--prompt-tokens"),
    ("traffic.source.output_tokens", "--output-tokens"),
    ("traffic.source.path", "--trace"),
    ("traffic.max_requests", "--requests"),
    ("traffic.load.rate_rps", "--rate"),
    ("traffic.load.users", "--concurrency"),
    ("engine.model", "--model"),
    ("engine.speculation.draft_config", "--draft-config"),
    ("engine.speculation.draft_model_path", "--draft-model"),
    ("engine.hardware", "--hardware"),
    ("engine.workers.aggregated.parallelism.tensor", "--tp"),
    ("engine.workers.aggregated.scheduler.max_sequences", "--max-sequences"),
    ("engine.workers.aggregated.scheduler.max_batched_tokens", "--max-batched-tokens"),
    ("engine.workers.aggregated.kv_cache.capacity.blocks", "--kv-blocks"),
    ("engine.workers.aggregated.kv_cache.capacity", "--kv-blocks"),
)


def _draft_config(text: str) -> Any:
    """The mapping in the ``--draft-config`` file; every problem with the file is one line
    naming the flag and the value (the loader's own errors name only the path)."""
    from aisim._io import MAX_DOCUMENT_BYTES, check_path_text, input_file_problem, load_config_file

    path = check_path_text(text, "--draft-config")
    problem = input_file_problem(path, MAX_DOCUMENT_BYTES)
    if problem is not None:
        raise ConfigError(
            f"--draft-config {text!r}: {problem}; expected the drafter's config.json (a file)"
        )
    try:
        return load_config_file(path, "--draft-config")
    except ConfigError as exc:
        raise ConfigError(f"--draft-config: {exc}") from None


def _synthetic(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "type": "synthetic",
        "num_requests": args.requests if args.requests is not None else DEFAULT_REQUESTS,
        "prompt_tokens": args.prompt_tokens,
        "output_tokens": args.output_tokens,
    }


def _worker(args: argparse.Namespace) -> dict[str, Any]:
    if args.backend == "vllm":
        scheduler = {
            "max_batched_tokens": args.max_batched_tokens,
            "max_sequences": args.max_sequences,
        }
    else:
        scheduler = {
            "chunked_prefill_size": args.max_batched_tokens,
            "max_running_requests": args.max_sequences,
        }
    return {
        "parallelism": {"tensor": args.tp},
        "scheduler": scheduler,
        "kv_cache": {"capacity": {"type": "default"}},
        "timing": {"estimator": "auto"},
    }


def _trace_rate(plan: Any) -> float:
    """Mean arrival rate of the trace, requests/s."""
    requests = plan.stream.requests() if plan.stream is not None else iter(plan.requests)
    first = last = None
    count = 0
    for request in requests:
        first = request.arrival_ms if first is None else first
        last = request.arrival_ms
        count += 1
    if count < 2 or first is None or last is None or last <= first:
        return 0.0
    return float((count - 1) / (last - first) * 1000.0)


def advise_command(args: argparse.Namespace) -> int:
    """Handler of ``aisim advise``."""
    from aisim._io import canonical_json, check_output_dir, write_together
    from aisim.uncertainty import advise

    out = check_output_dir(args.out, args.overwrite, "--out", tuple(OUTPUTS))
    question = build_question(args)
    try:
        answer = advise(question, workers=args.workers)
    except ConfigError as exc:  # e.g. a request that can never fit the --kv-blocks given
        raise ConfigError(named_by_flag(str(exc), FLAG_OF_FIELD)) from None
    plot = gain_plot(answer)
    if plot is None:
        answer["notes"].append("gain_vs_load.png not drawn: install aisim[qualify] (matplotlib)")
    markdown = to_markdown(answer)
    # One set: a failure part way leaves the earlier advice whole, not a new advice.json
    # beside an earlier advice.html; without a plot an earlier run's would read as this one's.
    files = {
        "advice.json": canonical_json(answer).encode("utf-8"),
        "advice.md": markdown.encode("utf-8"),
        "advice.html": to_html(answer, plot).encode("utf-8"),
        "gain_vs_load.png": plot,
    }
    write_together(out, files, overwrite=args.overwrite)
    written = [str(out / name) for name, data in files.items() if data is not None]
    if args.json:
        sys.stdout.write(canonical_json(answer))
    else:
        sys.stdout.write(markdown + f"\nwrote {', '.join(written)}\n")
    return 0


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:.{digits}g}"


def _band(item: dict[str, Any], digits: int = 3) -> str:
    return (
        f"{_fmt(item['p50'], digits)} [{_fmt(item['low'], digits)}, {_fmt(item['high'], digits)}]"
    )


def verdict(answer: dict[str, Any]) -> list[str]:
    """The answer in a few sentences."""
    unit = answer["load_unit"]
    best = answer["ranking"][0]
    off = next(item for item in answer["ranking"] if item["kind"] == "none")
    latency = answer["headline_latency"]
    lines = [
        f"Recommendation at {_fmt(answer['nominal_load'])} {unit}: **{best['configuration']}** "
        f"(goodput {_band(best['goodput_rps'])} req/s, {latency} {_band(best['latency'])} ms; "
        f"SD off: goodput {_band(off['goodput_rps'])} req/s, {latency} {_band(off['latency'])} ms)."
    ]
    if best["kind"] != "none":
        lines.append(
            f"It beats SD off in {best['p_beats_sd_off']:.0%} of the {best['replicas']} "
            "replicas (paired: same draws)."
        )
    series = answer["gain_vs_load"][answer["best_sd"]]
    crossover = answer["sd_stops_helping_at"]
    if crossover is not None:
        lines.append(
            f"SD ({answer['best_sd']}) stops helping above {_fmt(crossover)} {unit} "
            f"(median gain in {latency} crosses 0 between the loads searched)."
        )
    elif all((item["p50"] or 0) > 0 for item in series):
        lines.append(
            f"SD ({answer['best_sd']}) helps at every load searched (up to "
            f"{_fmt(series[-1]['load'])} {unit})."
        )
    else:
        lines.append(f"SD ({answer['best_sd']}) does not help at the loads searched.")
    return lines


def to_markdown(answer: dict[str, Any]) -> str:
    latency = answer["headline_latency"]
    lines = ["# aisim advise", ""]
    lines.extend(verdict(answer))
    lines += [
        "",
        f"## Ranking at the nominal load (p50 [central {answer['confidence']:.0%} interval], "
        f"{answer['replicas']} replicas, seed {answer['seed']})",
        "",
        f"| rank | configuration | goodput req/s | {latency} ms | mean TTFT ms | mean E2E ms "
        "| P(beats SD off) | replicas |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for rank, item in enumerate(answer["ranking"], start=1):
        metrics = item["metrics"]
        beats = "-" if item["p_beats_sd_off"] is None else f"{item['p_beats_sd_off']:.0%}"
        lines.append(
            f"| {rank} | {item['configuration']} | {_band(item['goodput_rps'])} | "
            f"{_band(item['latency'])} | {_band(metrics['mean_ttft_ms'])} | "
            f"{_band(metrics['mean_e2e_ms'])} | {beats} | {item['replicas']} |"
        )
    lines += ["", f"## Gain in {latency} against load (1 - with SD / without, paired)", ""]
    loads = [_fmt(load) for load in answer["loads"]]
    lines.append(f"| configuration | {' | '.join(loads)} |")
    lines.append("|---|" + "---|" * len(loads))
    for label, series in answer["gain_vs_load"].items():
        cells = [
            f"{_pct(item['point'])} (point)"
            if item["replicas"] == 0
            else f"{_pct(item['p50'])} [{_pct(item['low'])}, {_pct(item['high'])}]"
            + ("" if item["replicas"] == answer["replicas"] else f" ({item['replicas']})")
            for item in series
        ]
        lines.append(f"| {label} | {' | '.join(cells)} |")
    lines += ["", f"Loads in {answer['load_unit']}. SLOs: {answer['slos']}.", ""]
    search = answer["search"]
    if search["kind"] == "race":
        lines += [
            f"Search: a race ({search['replays']} replays instead of "
            f"{search['replays_of_a_full_search']}): every configuration got its point and "
            f"{search['screen']} replicas at the nominal load; SD off and the best SD "
            f"configuration got all {search['replicas']} at every load, the others not clearly "
            f"dominated all {search['replicas']} at the nominal load and {search['screen']} at "
            "the others, the clearly dominated ones their point run at the others (a gain made "
            "from fewer replicas says how many in brackets; --screen N for a full search).",
            "",
        ]
    lines.append("## What the intervals include")
    lines.append("")
    from aisim.cli._intervals import describe_included

    lines.extend(f"- {line}" for line in describe_included(answer["sources"]))
    lines.append(
        "- never included: engine behaviours no evidence covers (docs/design.md#uncertainty)"
    )
    if answer["notes"]:
        lines += ["", "## Notes", ""]
        lines.extend(f"- {note}" for note in answer["notes"])
    return "\n".join(lines) + "\n"


def _pct(value: float | None) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:+.0%}"


def to_html(answer: dict[str, Any], plot: bytes | None) -> str:
    """A self-contained page: the verdict, the tables and the plot (inline PNG)."""
    import re

    markdown = to_markdown(answer)
    body = []
    table: list[str] = []
    for line in markdown.splitlines():
        if line.startswith("|"):
            if set(line.replace("|", "").strip()) <= {"-"}:
                continue
            cells = [html.escape(cell.strip()) for cell in line.strip("|").split("|")]
            tag = "th" if not table else "td"
            table.append("<tr>" + "".join(f"<{tag}>{c}</{tag}>" for c in cells) + "</tr>")
            continue
        if table:
            body.append("<table>" + "".join(table) + "</table>")
            table = []
        text = html.escape(line)
        text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
        if line.startswith("# "):
            body.append(f"<h1>{text[2:]}</h1>")
        elif line.startswith("## "):
            body.append(f"<h2>{text[3:]}</h2>")
        elif line.startswith("- "):
            body.append(f"<li>{text[2:]}</li>")
        elif line:
            body.append(f"<p>{text}</p>")
    if table:
        body.append("<table>" + "".join(table) + "</table>")
    if plot is not None:
        encoded = base64.b64encode(plot).decode("ascii")
        body.append(f'<img alt="gain against load" src="data:image/png;base64,{encoded}">')
    style = (
        "body{font-family:sans-serif;max-width:72em;margin:2em auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>aisim advise</title>"
        f"<style>{style}</style></head><body>" + "\n".join(body) + "</body></html>\n"
    )


def gain_plot(answer: dict[str, Any]) -> bytes | None:
    """Gain in the headline latency against load, p50 with its 90 % band, per SD config
    (PNG bytes without time stamps); None without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return None
    import io

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4.5))
    for label, series in answer["gain_vs_load"].items():
        xs = [item["load"] for item in series if item["p50"] is not None]
        mid = [item["p50"] for item in series if item["p50"] is not None]
        low = [item["low"] for item in series if item["p50"] is not None]
        high = [item["high"] for item in series if item["p50"] is not None]
        (line,) = axis.plot(xs, mid, marker="o", label=label)
        axis.fill_between(xs, low, high, alpha=0.15, color=line.get_color())
    axis.axhline(0.0, color="grey", linestyle=":")
    if answer["sd_stops_helping_at"] is not None:
        axis.axvline(answer["sd_stops_helping_at"], color="black", linestyle="--", linewidth=0.8)
    axis.set_xlabel(f"load ({answer['load_unit']})")
    axis.set_ylabel(f"gain in {answer['headline_latency']} (1 - SD / off)")
    axis.legend(fontsize=7)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    plt.close(figure)
    return buffer.getvalue()
