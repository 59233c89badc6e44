"""Command-line pieces shared by ``aisim replay --intervals N``, ``aisim estimate --intervals``
and ``aisim advise``: the interval flags, SLO flags and the text rendering of intervals."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any, Final

from aisim.errors import ConfigError

#: SLO metrics and statistics (as a sweep's ``slos``: docs/sweep.md).
SLO_METRICS: Final = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")
SLO_STATISTICS: Final = ("mean", "p50", "p90", "p95", "p99")


def add_interval_arguments(
    parser: Any, *, replicas_flag: bool = False, slo_flag: bool = False
) -> None:
    """``--sources``, ``--seed``, ``--acceptance-rounds``, ``--workers`` (and, with
    ``replicas_flag``, ``--replicas``; with ``slo_flag``, ``--slo`` for goodput)."""
    from aisim.cli._args import integer

    group = parser.add_argument_group("prediction intervals (docs/design.md#uncertainty)")
    if replicas_flag:
        group.add_argument(
            "--replicas",
            type=integer,
            default=20,
            metavar="N",
            help="Monte Carlo replicas (default: %(default)s)",
        )
    group.add_argument(
        "--sources",
        default="all",
        help="what the intervals include: all, none, or a comma list of acceptance, cost, "
        "simulation, repeat, drift, frontend, overhead (default: %(default)s)",
    )
    group.add_argument(
        "--seed", type=integer, default=0, help="seed of the replicas' draws (default: %(default)s)"
    )
    group.add_argument(
        "--acceptance-rounds",
        type=integer,
        metavar="R",
        help="treat configured acceptance rates as observed over R rounds (a binomial spread) "
        "where no engine counters give one",
    )
    group.add_argument(
        "--workers",
        type=integer,
        default=1,
        help="processes for the replicas, 1..1024 (default: %(default)s)",
    )
    if slo_flag:
        group.add_argument(
            "--slo",
            action="append",
            default=[],
            metavar="METRIC:STAT=MS",
            help="an SLO defining goodput (tpot_ms:p90=50; repeat); none: every completed "
            "request is good",
        )


#: ``add_interval_arguments``'s flags for the replicas: attribute and default. Given without
#: ``--intervals`` they would do nothing, silently (``aisim replay --slo latency_ms:p90=1`` wrote
#: a replay and exit 0), so ``refuse_without_intervals`` refuses them.
REPLICA_FLAGS: Final = {
    "--slo": ("slo", []),
    "--sources": ("sources", "all"),
    "--seed": ("seed", 0),
    "--acceptance-rounds": ("acceptance_rounds", None),
    "--workers": ("workers", 1),
}


def refuse_without_intervals(
    args: argparse.Namespace, flags: dict[str, tuple[str, object]] = REPLICA_FLAGS
) -> None:
    """Without ``--intervals``: ConfigError naming the first of ``flags`` (flag -> attribute,
    default) given a value other than its default, which only the replicas would use."""
    for flag, (attribute, default) in flags.items():
        value = getattr(args, attribute)
        if value != default:
            shown = value[0] if isinstance(value, list) else value
            raise ConfigError(
                f"{flag} {shown!r}: only used with --intervals N (the replicas); add "
                f"--intervals N or leave {flag} out"
            )


def parse_slos(texts: list[str], flag: str = "--slo") -> dict[str, dict[str, float]]:
    """``METRIC:STAT=MS`` (``tpot_ms:p90=50``) -> ``{"tpot_ms": {"p90": 50.0}}``; one line
    naming the flag, the value and what is allowed when malformed."""
    from aisim.cli._args import number

    slos: dict[str, dict[str, float]] = {}
    for text in texts:
        metric, _, rest = text.partition(":")
        stat, _, limit_text = rest.partition("=")
        if metric not in SLO_METRICS:
            raise ConfigError(
                f"{flag} {text!r}: unknown metric {metric!r}; expected one of "
                f"{', '.join(SLO_METRICS)} (METRIC:STAT=MS, e.g. tpot_ms:p90=50)"
            )
        if stat not in SLO_STATISTICS:
            raise ConfigError(
                f"{flag} {text!r}: unknown statistic {stat!r}; expected one of "
                f"{', '.join(SLO_STATISTICS)}"
            )
        try:
            limit = number(limit_text)
        except argparse.ArgumentTypeError:
            raise ConfigError(f"{flag} {text!r}: expected a limit in ms after '='") from None
        if not limit > 0:
            raise ConfigError(f"{flag} {text!r}: expected a limit > 0 ms, got {limit_text}")
        if stat in slos.get(metric, {}):  # the later one used to replace the earlier silently
            raise ConfigError(
                f"{flag} {text!r}: {metric}:{stat} is already given "
                f"({slos[metric][stat]:g} ms); give each metric and statistic once"
            )
        slos.setdefault(metric, {})[stat] = limit
    return slos


def fmt(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    if abs(value) >= 100:
        return f"{value:.1f}"
    if abs(value) >= 10:
        return f"{value:.2f}"
    return f"{value:.3f}"


def render_intervals(report: dict[str, Any]) -> str:
    """A table of point, p50 and 90 % interval per metric, then what the intervals include."""
    from aisim.uncertainty import METRICS

    lines = [
        f"intervals: {report['replicas']} replicas, seed {report['seed']}, central "
        f"{report['confidence']:.0%}",
        f"{'metric':<28} {'point':>10} {'p50':>10}   90 % interval",
    ]
    for name, label in METRICS.items():
        item = report["metrics"][name]
        lines.append(
            f"{label:<28} {fmt(item['point']):>10} {fmt(item['p50']):>10}   "
            f"[{fmt(item['low'])}, {fmt(item['high'])}]"
        )
    lines.extend(describe_included(report["sources"]))
    return "\n".join(lines) + "\n"


def describe_included(sources: dict[str, dict[str, Any]]) -> list[str]:
    """One line per source: included, off, or on with nothing to sample (and why)."""
    lines = []
    for name, item in sources.items():
        if item["included"]:
            lines.append(f"includes {name}: {_detail(name, item['detail'])}")
        elif not item["on"]:
            lines.append(f"excludes {name}: switched off (--sources)")
        else:
            lines.append(f"excludes {name}: {_detail(name, item['detail'])}")
    return lines


def _detail(name: str, detail: list[Any]) -> str:
    if name == "repeat":
        return "; ".join(_repeat_detail(item) for item in detail)
    if name == "drift":
        return "; ".join(_drift_detail(item) for item in detail)
    if name == "frontend":
        return "; ".join(_frontend_detail(item) for item in detail)
    if name == "overhead":
        return "; ".join(_overhead_detail(item) for item in detail)
    if name != "cost":
        parts = []
        for item in detail:
            if isinstance(item, dict) and "rounds" in item:
                parts.append(
                    f"{item['worker']}: {item['rounds']} rounds, accepted >= i: "
                    f"{item['accepted_at_least']} ({item['origin']})"
                )
            elif isinstance(item, dict):
                parts.append(f"{item['worker']}: {item['origin']} ({item['spread']})")
            else:
                parts.append(str(item))
        return "; ".join(parts)
    parts = []
    for item in detail:
        kinds = item["sampled_kinds"]
        sampled = ", ".join(
            f"{kind} ({info['samples']} samples, ratio 5-95 % "
            f"{fmt(info['p05_ratio'])}-{fmt(info['p95_ratio'])})"
            for kind, info in kinds.items()
        )
        missing = ", ".join(item["without_evidence"])
        text = f"{item['worker']} priced by {item['estimator']}: "
        text += f"sampled {sampled}" if sampled else "no evidence in the cost-error table"
        if sampled and missing:
            text += f"; no evidence for {missing} (priced as estimated)"
        parts.append(text)
    return "; ".join(parts)


def _drift_detail(item: Any) -> str:
    if not isinstance(item, dict):
        return str(item)
    share, time_ms = item["share"], item["time_ms"]
    return (
        f"{item['estimator']}: per-step scatter correlated in time as one of {item['runs']} "
        f"served runs' ({len(item['sources'])} recordings; correlated share 5-95 % "
        f"{fmt(share[0])}-{fmt(share[2])}, correlation time {fmt(time_ms[0])}-{fmt(time_ms[2])} "
        "busy ms)"
    )


def _frontend_detail(item: Any) -> str:
    if not isinstance(item, dict):
        return str(item)
    shown = ", ".join(
        f"{name} {fmt(info['p05'])}-{fmt(info['p95'])}" for name, info in item["terms_ms"].items()
    )
    return (
        f"{item['worker']}: front-end terms of one of {item['samples']} probed recordings "
        f"(ms 5-95 %: {shown}) instead of the model's (measured on another recording)"
    )


def _overhead_detail(item: Any) -> str:
    if not isinstance(item, dict):
        return str(item)
    spread = item["residual_ms"]
    return (
        f"{item['engine']}: the per-request overhead's error on one of {item['samples']} fitted "
        f"points added to TTFT and E2E (ms 5-95 %: {fmt(spread['p05'])}-{fmt(spread['p95'])})"
    )


def _repeat_detail(item: Any) -> str:
    if not isinstance(item, dict):
        return str(item)
    metrics = item["metrics"]
    shown = ", ".join(
        f"{name} x {fmt(info['p05_factor'])}-{fmt(info['p95_factor'])}"
        for name, info in metrics.items()
        if name in ("p90_tpot_ms", "p90_e2e_ms", "output_throughput_tok_s")
    )
    text = (
        f"{item['estimator']}: one of {item['runs']} served runs' deviation from its repeats "
        f"({len(item['sources'])} recordings; factor 5-95 %: {shown})"
    )
    if item.get("not_carried"):
        text += f"; not on {', '.join(item['not_carried'])}"
    return text


#: Most processes (or Ray CPUs) ``--workers`` starts: a sweep's pool one per point and the
#: replicas' pool one per replica up to the count given (``--intervals 10000 --workers 10000``
#: would have started ten thousand). ``aisim sweep``, ``replay --intervals`` and ``advise``.
MAX_WORKERS: Final = 1024


def check_workers(workers: int) -> int:
    """``workers`` if in 1..``MAX_WORKERS``; else a one-line error naming ``--workers``."""
    if not 1 <= workers <= MAX_WORKERS:
        raise ConfigError(f"--workers: expected an integer in 1..{MAX_WORKERS}, got {workers}")
    return workers


#: Most rounds ``--acceptance-rounds`` takes: a rate times a count past 2^53 rounds in float
#: to more rounds than there are (999999999999999999 was refused as 'rounds accepting >= 1
#: drafts must be in 0..999999999999999999, got 1000000000000000000'); at 10^15 rounds the
#: binomial spread is already below 10^-7.
MAX_ACCEPTANCE_ROUNDS: Final = 10**15


def check_acceptance_rounds(rounds: int | None) -> None:
    """``rounds`` None or in 1..``MAX_ACCEPTANCE_ROUNDS``; else one line naming the flag."""
    if rounds is not None and not 1 <= rounds <= MAX_ACCEPTANCE_ROUNDS:
        raise ConfigError(
            f"--acceptance-rounds: expected an integer in 1..{MAX_ACCEPTANCE_ROUNDS}, got {rounds}"
        )


def prepare_intervals(args: argparse.Namespace, out: Any) -> Any:
    """Check ``aisim replay``'s interval flags before the run; returns the intervals.json path
    to write, or None without ``--intervals``."""
    from aisim._io import check_writable
    from aisim.uncertainty import Sources, check_replicas, check_seed

    if args.intervals is None:
        refuse_without_intervals(args)
        return None
    check_replicas(args.intervals)
    check_seed(args.seed)
    Sources.parse(args.sources)
    check_acceptance_rounds(args.acceptance_rounds)
    check_workers(args.workers)
    parse_slos(args.slo)
    return check_writable(out / "intervals.json", args.overwrite)


def run_intervals(
    args: argparse.Namespace,
    model_factory: Callable[[], object] | None = None,
    admission_ms: float = 0.0,
) -> dict[str, Any]:
    """The replicas of ``args.config`` (priced by a fresh ``model_factory()`` each when given:
    the ``--step-table`` model, stateful, with its front end's ``admission_ms``)."""
    from aisim.uncertainty import Sources, replay_intervals

    return replay_intervals(
        args.config,
        args.intervals,
        seed=args.seed,
        sources=Sources.parse(args.sources),
        acceptance_rounds=args.acceptance_rounds,
        workers=args.workers,
        slos=parse_slos(args.slo),
        model_factory=model_factory,
        admission_ms=admission_ms,
    )


def render_interval_report(args: argparse.Namespace, path: Any, report: dict[str, Any]) -> str:
    """The text to print for ``report`` (``run_intervals``), written to ``path``
    (``intervals.json``, with the replay's set): nothing with ``--json`` (the file is the JSON
    answer)."""
    if args.json:
        return ""
    return render_intervals(report) + f"wrote {path}\n"
