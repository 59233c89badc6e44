"""Where the step model's misses come from, measured on engine recordings (issue 23;
``python -m qualification.engine.step_causes evidence/engine/NAME [...]``, no engine needed).

``step_diff`` says how far each kind of served step is from the grid's price; this says which
of the candidate causes the misses follow (docs/evidence.md, "Per kind and shape"):

* **the decode line's shape per request count**: the line fitted to every timed decode step
  (or SD round) of the grid, its median error per batch size on the grid's own steps beside the
  same on the served steps (where the two agree, the miss is the line's shape, read from the
  grid alone);
* **the grid's sampling**: the line refitted on the grid's timed steps resampled within each
  point, its price at the served decode steps' shapes (standard deviation over resamples);
* **the minutes**: each served run priced from the grid passes beside it in time only (our
  recorder serves run k between passes k - 1 and k: ``qualification/engine/_cli.py``,
  ``serve_next`` as ``record_grid``'s ``between_passes``), from the other passes only, and from
  all (the (run, kind) medians within 5 % each way);
* pooled over the recordings given, each served decode step's measured / price over its run's
  median (the run's speed taken out) by batch size, by past KV per request, by how many steps
  after the last prompt-carrying step it ran (the grid times the second decode step after its
  batch's prefill), and, for SD rounds, by the share of its drafts the round accepted; and the
  prefill-only steps' measured / the run's speed - price beside the wake cost charged;
* per recording and pooled, the prompt-carrying steps (prefill only, mixed) at the local speed
  (each price x the median measured / price of the decode steps within 15 steps of it): their
  price error at a token count new to the primitive cache and at one run before, and the
  prefill-only steps' cost beyond their price without the wake cost, after an idle spell of
  the engine and right after another step (the wake cost the served steps paid, beside the
  one charged).

Every figure is a diagnostic read from the committed recordings, none is a price.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import pandas as pd

from aisim.cli import integer_argument
from qualification.engine._diagnostic import BAD_INPUT, diagnostic_parser, run_diagnostic
from qualification.engine._recording import EngineRecording
from qualification.engine.step_diff import IDLE_MS

#: The half-width, in percent, of the step model's target (issue 23).
TOLERANCE_PCT = 5.0


def _decode_phase(depth: int) -> str:
    return "sd" if depth > 0 else "decode"


def _main_decode_kind(depth: int) -> str:
    return "decode-drafted" if depth > 0 else "decode"


def _timed_decode(table: Any, depth: int) -> Any:
    frame = table.timed(_decode_phase(depth))
    if depth > 0:
        frame = frame[frame["num_draft_tokens"] == depth]
    return frame


def line_misfit_by_count(model: Any, table: Any, depth: int) -> dict[int, float]:
    """Per batch size the grid timed, the median of (the decode line's price - measured) /
    measured in percent over the grid's own timed decode steps (SD rounds with SD on):
    ``model`` is the step model built from ``table`` (its ``decode`` line)."""
    found: dict[int, list[float]] = {}
    frame = _timed_decode(table, depth)
    for count, kv, latency in zip(
        frame["batch_size"].tolist(),
        frame["total_kv_tokens"].tolist(),
        frame["wall_ms"].tolist(),
        strict=True,
    ):
        price = float(model.decode.price(int(count), int(kv), {}))
        found.setdefault(int(count), []).append((price - float(latency)) / float(latency) * 100)
    return {count: float(np.median(values)) for count, values in sorted(found.items())}


def served_misfit_by_count(rows: Sequence[dict[str, Any]], depth: int) -> dict[int, float]:
    """Per batch size, the median price error in percent of a run's decode steps of the main
    decode kind (``decode``; ``decode-drafted`` with SD), from ``step_diff.priced_steps``
    rows (those of several runs may be given together)."""
    kind = _main_decode_kind(depth)
    found: dict[int, list[float]] = {}
    for row in rows:
        if row["kind"] == kind and row["measured_ms"] > 0:
            error = (row["price_ms"] - row["measured_ms"]) / row["measured_ms"] * 100
            found.setdefault(int(row["decode_requests"]), []).append(error)
    return {count: float(np.median(values)) for count, values in sorted(found.items())}


def bootstrap_spread_pct(
    table: Any, depth: int, rows: Sequence[dict[str, Any]], rounds: int = 200, seed: int = 0
) -> float:
    """How much the grid's own sampling moves its decode price at the served shapes: the
    standard deviation, in percent, over ``rounds`` resamples of the grid's timed decode steps
    (with replacement, within each point) of the mean over the served decode steps of the
    ``rows`` (main decode kind) of the refitted line's price / the line's price."""
    from qualification.engine._step_model import EngineStepModel

    kind = _main_decode_kind(depth)
    shapes = [
        (int(row["decode_requests"]), int(row["decode_kv_tokens"]))
        for row in rows
        if row["kind"] == kind
    ]
    if not shapes:
        return float("nan")
    base = EngineStepModel(table, depth)
    base_prices = np.array([base.decode.price(count, kv, {}) for count, kv in shapes])
    timed = _timed_decode(table, depth)
    points = [np.asarray(index) for index in timed.groupby("point_id").indices.values()]
    others = table.steps.drop(index=timed.index)
    rng = np.random.default_rng(seed)
    ratios = []
    for _ in range(rounds):
        chosen = np.concatenate([rng.choice(index, len(index)) for index in points])
        steps = pd.concat([others, timed.iloc[chosen]], ignore_index=True)
        model = EngineStepModel(dataclasses.replace(table, steps=steps), depth)
        prices = np.array([model.decode.price(count, kv, {}) for count, kv in shapes])
        ratios.append(float(np.mean(prices / base_prices)))
    return float(np.std(ratios) * 100)


def passes_beside(run_index: int, repetitions: int) -> set[int]:
    """The grid passes beside served run ``run_index`` (0-based) in time: our recorder serves
    runs 1, 2, ... after passes 0, 1, ... while passes remain (``record_grid``'s
    ``between_passes``), the rest after the last pass."""
    if run_index < repetitions - 1:
        return {run_index, run_index + 1}
    return {repetitions - 1}


def _within(runs: Sequence[Any], table: Any, tables: Sequence[Any]) -> tuple[int, int]:
    from qualification.engine.step_diff import price_errors, priced_steps, run_prompts

    within = total = 0
    for index, run in enumerate(runs):
        depth = int(run.settings["num_speculative_tokens"] or 0)
        model = _warmed(tables[index], depth, runs[:index])
        rows = priced_steps(run.steps, model, 1.0, depth, run_prompts(run))
        for values in price_errors(rows).values():
            total += 1
            within += abs(float(np.median(values)) * 100) <= TOLERANCE_PCT
    return within, total


def _warmed(table: Any, depth: int, earlier: Sequence[Any]) -> Any:
    from qualification.engine.step_diff import warmed_model

    return warmed_model(table, depth, earlier)


def pass_counts(runs: Sequence[Any], table: Any) -> dict[str, tuple[int, int]] | None:
    """(run, kind) medians within 5 % and their number, each run priced from the grid passes
    beside it in time (``beside``), from the other passes (``away``) and from all (``all``);
    None for a grid not interleaved with its served runs."""
    grid = table.sidecar.get("grid") or {}
    if not grid.get("interleaved_with_served_runs"):
        return None
    repetitions = int(grid["repetitions"])
    steps = table.steps

    def subset(passes: set[int], keep: bool) -> Any:
        chosen = steps["repetition"].isin(sorted(passes))
        mask = (chosen if keep else ~chosen) | steps["warmup"]
        return dataclasses.replace(table, steps=steps[mask].reset_index(drop=True))

    beside = [subset(passes_beside(k, repetitions), True) for k in range(len(runs))]
    away = [subset(passes_beside(k, repetitions), False) for k in range(len(runs))]
    return {
        "beside": _within(runs, table, beside),
        "away": _within(runs, table, away),
        "all": _within(runs, table, [table] * len(runs)),
    }


def relative_to_run(rows: Sequence[dict[str, Any]]) -> list[float | None]:
    """Per row, measured / price over the run's median measured / price of its decode steps
    (every ``decode*`` kind): the run's speed taken out; None for a step without a price."""
    from qualification.engine.step_diff import run_speed

    speed = run_speed(list(rows))
    return [
        None
        if speed is None or not row["price_ms"] > 0
        else row["measured_ms"] / row["price_ms"] / speed
        for row in rows
    ]


def steps_since_prompt(rows: Sequence[dict[str, Any]]) -> list[int | None]:
    """Per row, how many steps after the last step carrying prompt tokens it ran (1: the step
    right after); None before the run's first prompt-carrying step and for such steps."""
    out: list[int | None] = []
    since: int | None = None
    for row in rows:
        if row["prefill_requests"] > 0:
            since = 0
            out.append(None)
            continue
        since = None if since is None else since + 1
        out.append(since)
    return out


def _bin(value: float, edges: Sequence[float]) -> str:
    for low, high in zip(edges, edges[1:], strict=False):
        if low < value <= high:
            return f"{low:g}-{high:g}"
    return f">{edges[-1]:g}"


def pooled_decode(
    runs_rows: Sequence[tuple[Sequence[dict[str, Any]], Any]],
) -> dict[str, dict[str, tuple[int, float]]]:
    """Pooled over served runs (each its ``priced_steps`` rows and its recorded steps), the
    decode steps' measured / price over their run's median (``relative_to_run``): by batch
    size, by past KV per request, by steps since the last prompt step (batch size 1 only), and
    for drafted SD rounds by the share of their drafts accepted (from the step's emitted
    tokens: emitted - requests, over the drafts). Each bin: (steps, median)."""
    groups: dict[str, dict[str, list[float]]] = {
        "batch size": {},
        "past KV per request": {},
        "steps since a prompt step (B = 1)": {},
        "drafts accepted (SD rounds)": {},
    }

    def add(group: str, key: str, value: float) -> None:
        groups[group].setdefault(key, []).append(value)

    for rows, steps in runs_rows:
        emitted = steps["tokens_emitted"].tolist()
        for row, value, since, tokens in zip(
            rows, relative_to_run(rows), steps_since_prompt(rows), emitted, strict=True
        ):
            if value is None or not row["kind"].startswith("decode"):
                continue
            count = row["decode_requests"]
            add("batch size", _bin(count, (0, 1, 2, 4, 8)), value)
            add(
                "past KV per request",
                _bin(row["decode_kv_tokens"] / count, (0, 32, 64, 128, 256, 512)),
                value,
            )
            if count == 1 and since is not None:
                add(
                    "steps since a prompt step (B = 1)", _bin(since, (0, 1, 2, 3, 5, 10, 20)), value
                )
            drafts = row["draft_tokens"]
            if row["kind"] == "decode-drafted" and drafts > 0:
                accepted = int(tokens) - count
                share = "all" if accepted >= drafts else "none" if accepted <= 0 else "some"
                add("drafts accepted (SD rounds)", share, value)
    return {
        group: {
            key: (len(values), float(np.median(values))) for key, values in sorted(bins.items())
        }
        for group, bins in groups.items()
    }


def prefill_excess(rows: Sequence[dict[str, Any]]) -> list[float]:
    """Per prefill-only step of a run: measured / the run's speed - price, in ms at the
    table's speed (``run_speed``); empty without decode steps."""
    from qualification.engine.step_diff import run_speed

    speed = run_speed(list(rows))
    if speed is None:
        return []
    return [
        row["measured_ms"] / speed - row["price_ms"]
        for row in rows
        if row["kind"] == "prefill" and row["price_ms"] > 0
    ]


def prompt_steps(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per prompt-carrying step (``prefill`` only or ``mixed``) of a run's ``priced_steps``
    rows with a local speed (``step_diff.local_speed``: the median measured / price of the
    decode steps within 15 steps of it, the minute's speed read from the run): its ``kind``,
    ``woken`` (it began more than ``IDLE_MS`` after the step before it ended), ``created``
    (its token count paid primitive creation), ``error_pct`` ((price x the local speed -
    measured) / measured, percent) and ``unwoken_excess_ms`` (measured / the local speed -
    (price - the wake cost charged), ms at the table's speed: for a prefill-only step, the
    wake cost it paid, read as what the step cost beyond its price without the wake)."""
    from qualification.engine.step_diff import local_speed

    out = []
    for row, speed in zip(rows, local_speed(list(rows)), strict=True):
        if row["kind"] not in ("prefill", "mixed") or speed is None or not row["price_ms"] > 0:
            continue
        if not row["measured_ms"] > 0:
            continue
        out.append(
            {
                "kind": row["kind"],
                "woken": bool(row["idle_before_ms"] > IDLE_MS),
                "created": bool(row.get("created", False)),
                "error_pct": (row["price_ms"] * speed - row["measured_ms"])
                / row["measured_ms"]
                * 100.0,
                "unwoken_excess_ms": row["measured_ms"] / speed
                - (row["price_ms"] - float(row.get("wake_ms", 0.0))),
                "wake_ms": float(row.get("wake_ms", 0.0)),
            }
        )
    return out


def _median_of(found: Sequence[dict[str, Any]], key: str, fmt: str, unit: str) -> str:
    if not found:
        return "- (0)"
    value = float(np.median([item[key] for item in found]))
    return f"{format(value, fmt)}{unit} ({len(found)})"


def prompt_step_lines(found: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown lines of ``prompt_steps`` results (one run's or several pooled)."""
    lines = []
    for kind in ("prefill", "mixed"):
        mine = [item for item in found if item["kind"] == kind]
        created = [item for item in mine if item["created"]]
        cached = [item for item in mine if not item["created"]]
        lines.append(
            f"- {kind} steps at the local speed, median price error (steps): at a token count "
            f"new to the cache {_median_of(created, 'error_pct', '+.1f', ' %')}, at a count "
            f"run before {_median_of(cached, 'error_pct', '+.1f', ' %')}"
        )
    prefill = [item for item in found if item["kind"] == "prefill"]
    woken = [item for item in prefill if item["woken"]]
    busy = [item for item in prefill if not item["woken"]]
    charged = [item["wake_ms"] for item in prefill if item["wake_ms"] > 0]
    lines.append(
        "- prefill-only steps, measured / the local speed - (price - the wake cost charged), "
        f"median (steps): after more than {IDLE_MS:g} ms idle "
        f"{_median_of(woken, 'unwoken_excess_ms', '+.2f', ' ms')}, after less "
        f"{_median_of(busy, 'unwoken_excess_ms', '+.2f', ' ms')}; the wake cost charged "
        + (f"{float(np.median(charged)):.2f} ms" if charged else "none")
    )
    return lines


def _fmt_counts(found: dict[int, float]) -> str:
    return ", ".join(f"B = {count}: {value:+.1f} %" for count, value in found.items()) or "-"


def analyse(
    recording: Any, rounds: int
) -> tuple[list[str], list[tuple[Any, Any]], list[float], list[float], list[dict[str, Any]]]:
    """The per-recording lines, and what the pooled section needs: (rows, steps) per served
    run, the prefill-only excesses, the wake cost charged per run and the prompt steps
    (``prompt_steps``) of every run."""
    from qualification.engine.step_diff import priced_steps, run_prompts, warmed_model

    table = recording.grid
    lines = [f"### {recording.name}", ""]
    all_rows: list[dict[str, Any]] = []
    runs_rows: list[tuple[Any, Any]] = []
    excess: list[float] = []
    wakes: list[float] = []
    prompts: list[dict[str, Any]] = []
    depth = 0
    for index, run in enumerate(recording.served):
        depth = int(run.settings["num_speculative_tokens"] or 0)
        model = warmed_model(table, depth, recording.served[:index])
        rows = priced_steps(run.steps, model, 1.0, depth, run_prompts(run))
        all_rows += rows
        runs_rows.append((rows, run.steps))
        wake = model.served.wake_ms if model.served.wake is not None else 0.0
        excess += prefill_excess(rows)
        prompts += prompt_steps(rows)
        wakes.append(wake)
    model = warmed_model(table, depth)
    lines.append(
        "- decode line per batch size, (price - measured) / measured, median: on the grid's own "
        f"timed steps {_fmt_counts(line_misfit_by_count(model, table, depth))}; on the served "
        f"steps {_fmt_counts(served_misfit_by_count(all_rows, depth))}"
    )
    spread = bootstrap_spread_pct(table, depth, all_rows, rounds=rounds)
    lines.append(
        f"- the grid's sampling: its decode line refitted on {rounds} resamples of its timed "
        f"steps (within each point) moves the price at the served shapes by {spread:.1f} % (SD)"
    )
    counts = pass_counts(recording.served, table)
    if counts is not None:
        parts = [f"{name} {a} of {b}" for name, (a, b) in counts.items()]
        lines.append(
            "- (run, kind) medians within 5 %, each run priced from the grid passes beside it "
            "in time / the other passes / all: " + ", ".join(parts)
        )
    lines += prompt_step_lines(prompts)
    return lines + [""], runs_rows, excess, wakes, prompts


#: Most bootstrap resamples ``--rounds`` takes: 200 take ~3 s on a committed recording, so
#: 10,000 take minutes; 10^11 ran on for ever (the count was unbounded).
MAX_ROUNDS: Final = 10_000


def main(argv: list[str] | None = None) -> int:
    parser = diagnostic_parser(
        "step_causes",
        "Which candidate causes the step model's misses follow: the decode line's shape per "
        "request count, the grid's sampling, the minutes, and pooled over the recordings the "
        "served steps by shape.",
    )
    parser.add_argument(
        "--rounds",
        type=integer_argument,
        default=200,
        help=f"bootstrap resamples, 1..{MAX_ROUNDS} (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.rounds <= MAX_ROUNDS:
        print(
            f"error: --rounds: expected an integer in 1..{MAX_ROUNDS}, got {args.rounds}",
            file=sys.stderr,
        )
        return BAD_INPUT
    pooled: list[tuple[Any, Any]] = []
    excess: list[float] = []
    wakes: list[float] = []
    prompts: list[dict[str, Any]] = []

    def each(recording: EngineRecording) -> None:
        lines, runs_rows, found, charged, steps = analyse(recording, args.rounds)
        print("\n".join(lines))
        pooled.extend(runs_rows)
        excess.extend(found)
        wakes.extend(charged)
        prompts.extend(steps)

    status = run_diagnostic(args.recordings, each, need_grid=True)
    if status:
        return status
    print(f"### Pooled over {len(args.recordings)} recording(s)\n")
    print("Served decode steps, measured / price over their run's median (steps, median):\n")
    for group, bins in pooled_decode(pooled).items():
        parts = [f"{key}: {value:.3f} ({steps})" for key, (steps, value) in bins.items()]
        print(f"- {group}: " + ("; ".join(parts) or "-"))
    if excess:
        print(
            f"\nPrefill-only steps: measured / the run's speed - price, median "
            f"{float(np.median(excess)):+.2f} ms over {len(excess)} steps; the wake cost "
            f"charged {float(np.median(wakes)):.2f} ms (median over the runs)"
        )
    if prompts:
        print("\nPrompt steps at the local speed:\n")
        print("\n".join(prompt_step_lines(prompts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
