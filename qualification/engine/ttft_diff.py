"""Request-level diff of replay's TTFT against an engine recording: which requests carry the
mean TTFT error, and how much of it the step prices explain
(``python -m qualification.engine.ttft_diff evidence/engine/NAME [...]``).

Two views per recording:

* **by request class** (over the served runs): each request classed by what the engine did
  when it arrived and with its prompt (``request_classes``): it arrived while a step ran
  (``busy``) or not (``idle``); the first step that carried its prompt was ``prefill`` only or
  ``mixed`` (beside decoding requests), ``chunked`` when its prompt needed more than that step
  (``unknown`` when the steps name no requests: a driver that records none). Per class: the
  requests, their measured and predicted mean TTFT, the class's error, its share of the
  recording's mean TTFT error (points: the class's summed error over every request's summed
  measured TTFT, so the shares add up to the pooled error), and the engine's mean wait
  (arrival to the start of that first step) and mean first-step time beside replay's
  (``replay_first_passes``: its first pass when the prompt was not chunked, read from replay's
  token times).
* **with the step prices taken out** (per served run): the mean TTFT error as replayed, with
  replay's decode-only passes priced x the run's own decode ratio (median measured / price
  of its recorded decode steps), and with its prompt-carrying passes also x the run's
  prompt-step ratio (the same over its prefill and mixed steps). Both ratios are read from the
  run being scored: an oracle that bounds what a right step price would do to the TTFT, never
  a prediction; what is left with both is replay's schedule (admission, batching, when a
  token becomes visible), not the prices.

One engine process served a recording's runs in turn, so each run's replay starts with the
primitive caches the previous run's replay left (as ``aisim qualify engine`` replays them), and
each run's steps are priced with the caches the recorded steps before them left
(``step_diff.warmed_model``). It reads only the committed recording; it is a diagnostic.
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from qualification.engine._diagnostic import diagnostic_parser, run_diagnostic

#: A request whose first token came more than this (ms) after the end of the first step that
#: carried its prompt had its prompt chunked over several steps.
SAME_MS = 1e-6


def request_classes(requests: Any, steps: Any) -> dict[str, dict[str, Any]]:
    """Per request id of a served run (``requests``: ``request_id``, ``arrival_ms``,
    ``first_token_ms``; ``steps``: ``start_ms``, ``end_ms``, ``num_decode_requests``,
    ``request_ids``): ``arrived`` (``busy`` when some step ran at its arrival, start <= arrival
    < end, else ``idle``; ``unknown`` when the run recorded no steps), ``first_step``
    (``prefill``, ``mixed``, ``prefill-chunked``, ``mixed-chunked``, or ``unknown`` when no
    step names it), and the engine's ``wait_ms`` (arrival to that step's start) and
    ``first_step_ms`` (that step's time), None when unknown."""
    starts = [float(value) for value in steps["start_ms"]]
    ends = [float(value) for value in steps["end_ms"]]
    first: dict[str, int] = {}
    for index, ids in enumerate(steps["request_ids"]):
        for rid in (part for part in str(ids).split(";") if part):
            first.setdefault(rid, index)
    decodes = [int(value) for value in steps["num_decode_requests"]]
    out: dict[str, dict[str, Any]] = {}
    for rid, arrival, first_token in zip(
        requests["request_id"], requests["arrival_ms"], requests["first_token_ms"], strict=True
    ):
        arrival = float(arrival)
        busy = any(start <= arrival < end for start, end in zip(starts, ends, strict=True))
        row: dict[str, Any] = {
            "arrived": ("busy" if busy else "idle") if starts else "unknown",
            "first_step": "unknown",
            "wait_ms": None,
            "first_step_ms": None,
        }
        found = first.get(str(rid))
        if found is not None:
            kind = "mixed" if decodes[found] > 0 else "prefill"
            if float(first_token) > ends[found] + SAME_MS:
                kind += "-chunked"
            row["first_step"] = kind
            row["wait_ms"] = starts[found] - arrival
            row["first_step_ms"] = ends[found] - starts[found]
        out[str(rid)] = row
    return out


def class_table(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (arrived, first step) class of ``rows`` (``request_classes`` rows with
    ``measured_ms`` and ``predicted_ms``, the requests of every served run): requests, mean
    measured and predicted TTFT, the class's mean TTFT error (%), its share of the pooled mean
    TTFT error (points), the engine's mean wait and first-step ms (None when unknown) and
    replay's (rows' ``replay_wait_ms`` and ``replay_first_pass_ms`` where given). Ordered by
    class."""
    total = sum(float(row["measured_ms"]) for row in rows)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["arrived"], row["first_step"]), []).append(row)
    table = []
    for (arrived, first_step), members in sorted(groups.items()):
        measured = sum(float(row["measured_ms"]) for row in members)
        predicted = sum(float(row["predicted_ms"]) for row in members)
        waits = [row["wait_ms"] for row in members if row["wait_ms"] is not None]
        firsts = [row["first_step_ms"] for row in members if row["first_step_ms"] is not None]
        replay_waits = [
            row["replay_wait_ms"] for row in members if row.get("replay_wait_ms") is not None
        ]
        replay_firsts = [
            row["replay_first_pass_ms"]
            for row in members
            if row.get("replay_first_pass_ms") is not None
        ]
        table.append(
            {
                "arrived": arrived,
                "first_step": first_step,
                "requests": len(members),
                "measured_ms": measured / len(members),
                "predicted_ms": predicted / len(members),
                "error_pct": (predicted - measured) / measured * 100.0 if measured else None,
                "share_pts": (predicted - measured) / total * 100.0 if total else None,
                "engine_wait_ms": float(np.mean(waits)) if waits else None,
                "engine_first_step_ms": float(np.mean(firsts)) if firsts else None,
                "replay_wait_ms": float(np.mean(replay_waits)) if replay_waits else None,
                "replay_first_pass_ms": float(np.mean(replay_firsts)) if replay_firsts else None,
            }
        )
    return table


class _ScaledPricer:
    """Wraps a step model (duck-typed as replay's forward-pass model): a pass carrying prompt
    tokens priced x ``prompt``, any other x ``decode`` (the plain decode model of an SD table
    too)."""

    def __init__(self, model: Any, decode: float, prompt: float) -> None:
        self.model = model
        self.decode = decode
        self.prompt = prompt
        self.name = model.name
        self.prices_speculation_natively = model.prices_speculation_natively
        self.supports_draft_length = model.supports_draft_length
        plain = getattr(model, "plain_decode_model", None)
        self.plain_decode_model = None if plain is None else _ScaledPricer(plain, decode, prompt)

    def estimate_forward_pass_time_ms(self, metrics: Any, draft_length: int | None = None) -> float:
        price = float(self.model.estimate_forward_pass_time_ms(metrics))
        ranks = metrics if isinstance(metrics, list) else [metrics]
        prompt = any(int(rank.num_prefill_requests) > 0 for rank in ranks)
        return price * (self.prompt if prompt else self.decode)


def step_ratios(
    run: Any, table: Any, earlier: Sequence[Any] = ()
) -> tuple[float | None, float | None]:
    """(decode, prompt): the median measured / price of ``run``'s recorded decode steps (every
    ``decode*`` kind) and of its prefill and mixed steps, priced as replay prices passes of
    the same composition (``step_diff.priced_steps``); None where a run has none."""
    from qualification.engine.step_diff import priced_steps, run_prompts, warmed_model

    depth = int(run.settings["num_speculative_tokens"] or 0)
    model = warmed_model(table, depth, earlier)
    rows = priced_steps(run.steps, model, 1.0, depth, run_prompts(run))
    decode = [
        row["measured_ms"] / row["price_ms"]
        for row in rows
        if row["kind"].startswith("decode") and row["price_ms"] > 0
    ]
    prompt = [
        row["measured_ms"] / row["price_ms"]
        for row in rows
        if row["kind"] in ("prefill", "mixed") and row["price_ms"] > 0
    ]
    return (
        float(np.median(decode)) if decode else None,
        float(np.median(prompt)) if prompt else None,
    )


def replay_ttft(
    run: Any,
    table: Any,
    frontend: Any = None,
    cache: Any = None,
    decode: float = 1.0,
    prompt: float = 1.0,
) -> tuple[list[float], Any, Any]:
    """Replay's TTFT per request of ``run`` (in ``run.requests`` order) priced as ``aisim
    qualify engine`` prices it (``frontend``; ``cache``: the primitive caches the replay of
    the previous run left), its decode-only passes x ``decode`` and prompt-carrying passes x
    ``prompt``; the replay's result (with its token times); and the caches it leaves."""
    from aisim import run_replay
    from qualification.engine._replay import check_same_engine, recorded_settings, replay_config
    from qualification.engine._step_model import EngineStepModel

    check_same_engine(run, table)
    depth = int(recorded_settings(run)["num_speculative_tokens"] or 0)
    model = EngineStepModel(table, depth, frontend=frontend, cache=cache)
    result = run_replay(
        replay_config(run, table),
        base_dir=Path("."),
        forward_pass_model=_ScaledPricer(model, decode, prompt),
        admission_ms=0.0 if frontend is None else frontend.request_ms,
        per_token=True,
    )
    frame = result.requests.set_index(result.requests["request_id"].astype(str))
    order = [str(rid) for rid in run.requests["request_id"]]
    return [float(value) for value in frame.loc[order, "ttft_ms"]], result, model.cache


def replay_first_passes(
    arrivals: dict[str, float], first_tokens: dict[str, float], token_times: Sequence[float]
) -> dict[str, tuple[float, float]]:
    """Per request, replay's (wait, first pass ms) for a prompt replay computed in one pass:
    that pass ended at the request's first token (``first_tokens``), and began when the pass
    before it ended (the latest token time of any request before the first token,
    ``token_times``) or, when that was before the request's arrival (``arrivals``), at the
    arrival (replay starts a pass as a request reaches an idle engine). A pass that emitted no
    token (a chunk not ending its prompt, beside no decode) is not seen: the pass before it
    stands in for it."""
    ends = sorted(set(float(value) for value in token_times))
    out: dict[str, tuple[float, float]] = {}
    for rid, first in first_tokens.items():
        arrival = arrivals[rid]
        index = bisect.bisect_left(ends, first) - 1
        start = ends[index] if index >= 0 and ends[index] > arrival else arrival
        out[rid] = (start - arrival, first - start)
    return out


def _mean_error(predicted: Sequence[float], measured: Sequence[float]) -> float:
    return (float(np.mean(predicted)) - float(np.mean(measured))) / float(np.mean(measured)) * 100.0


def diff_recording(recording: Any) -> dict[str, Any]:
    """Both views of ``recording`` (module docstring): ``classes`` (``class_table``) and
    ``runs`` (per served run: the decode and prompt ratios and the mean TTFT error as
    replayed, with the decode ratio, and with both)."""
    table = recording.grid
    frontend = recording.frontend
    rows: list[dict[str, Any]] = []
    runs = []
    caches: dict[str, Any] = {"replayed": None, "decode": None, "both": None}
    for index, run in enumerate(recording.served):
        measured = [
            float(first) - float(arrival)
            for first, arrival in zip(
                run.requests["first_token_ms"], run.requests["arrival_ms"], strict=True
            )
        ]
        decode, prompt = step_ratios(run, table, recording.served[:index])
        errors: dict[str, float | None] = {}
        replayed: list[float] = []
        for key, scales in (
            ("replayed", (1.0, 1.0)),
            ("decode", None if decode is None else (decode, 1.0)),
            ("both", None if decode is None or prompt is None else (decode, prompt)),
        ):
            if scales is None:
                errors[key] = None  # the run recorded no such steps
                continue
            predicted, result, caches[key] = replay_ttft(run, table, frontend, caches[key], *scales)
            errors[key] = _mean_error(predicted, measured)
            if key == "replayed":
                replayed = predicted
                tokens = result.tokens or {"time_ms": []}
                frame = result.requests
                passes = replay_first_passes(
                    dict(
                        zip(
                            run.requests["request_id"].astype(str),
                            run.requests["arrival_ms"],
                            strict=True,
                        )
                    ),
                    dict(
                        zip(frame["request_id"].astype(str), frame["first_token_ms"], strict=True)
                    ),
                    tokens["time_ms"],
                )
        runs.append(
            {
                "run": run.name,
                "decode_ratio": decode,
                "prompt_ratio": prompt,
                "ttft_mean_error_pct": errors,
            }
        )
        classes = request_classes(run.requests, run.steps)
        for rid, measured_ms, predicted_ms in zip(
            run.requests["request_id"], measured, replayed, strict=True
        ):
            row = {**classes[str(rid)], "measured_ms": measured_ms, "predicted_ms": predicted_ms}
            if row["first_step"] in ("prefill", "mixed"):
                # Not chunked in the engine: replay's one pass beside the engine's one step.
                row["replay_wait_ms"], row["replay_first_pass_ms"] = passes[str(rid)]
            rows.append(row)
    return {"recording": recording.name, "classes": class_table(rows), "runs": runs}


def _fmt(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def to_markdown(diff: dict[str, Any]) -> str:
    lines = [
        f"### {diff['recording']}",
        "",
        "| arrived | first step | requests | measured ms | replay ms | error | share of the "
        "mean TTFT error | wait ms: engine / replay | first step ms: engine / replay |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in diff["classes"]:
        lines.append(
            f"| {row['arrived']} | {row['first_step']} | {row['requests']} "
            f"| {row['measured_ms']:.1f} | {row['predicted_ms']:.1f} "
            f"| {_fmt(row['error_pct'], '+.1f')} % | {_fmt(row['share_pts'], '+.1f')} pts "
            f"| {_fmt(row['engine_wait_ms'], '.1f')} / {_fmt(row['replay_wait_ms'], '.1f')} "
            f"| {_fmt(row['engine_first_step_ms'], '.1f')} / "
            f"{_fmt(row['replay_first_pass_ms'], '.1f')} |"
        )
    lines += [
        "",
        "Mean TTFT error per served run: as replayed; decode-only passes x the run's decode "
        "ratio; prompt-carrying passes also x its prompt-step ratio (both read from the run: "
        "an oracle, not a prediction):",
        "",
        "| run | decode ratio | prompt ratio | replayed | x decode ratio | x both |",
        "|---|---|---|---|---|---|",
    ]
    for run in diff["runs"]:
        errors = run["ttft_mean_error_pct"]
        lines.append(
            f"| {run['run']} | {_fmt(run['decode_ratio'], '.3f')} "
            f"| {_fmt(run['prompt_ratio'], '.3f')} | {errors['replayed']:+.1f} % "
            f"| {_fmt(errors['decode'], '+.1f')} % | {_fmt(errors['both'], '+.1f')} % |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = diagnostic_parser(
        "ttft_diff",
        "Per request class: replay's mean TTFT against the engine's, and per served run the "
        "mean TTFT error with the run's own step-price ratios taken out.",
    ).parse_args(argv)
    return run_diagnostic(
        args.recordings,
        lambda recording: print(to_markdown(diff_recording(recording))),
        need_grid=True,
    )


if __name__ == "__main__":
    sys.exit(main())
