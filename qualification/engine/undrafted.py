"""Per request, the ``ngram`` decode rounds that drafted nothing, and how closely the engine
repeats its own per-request E2E (``python -m qualification.engine.undrafted evidence/engine/NAME
[...]``).

vLLM's n-gram proposer drafts nothing until the context's suffix matches an earlier n-gram
(``vllm/v1/spec_decode/ngram_proposer.py``, ``NgramProposer.propose``), so each request starts
with some decode rounds that emit one token. Replay gives every request the same number
(``speculation.undrafted_rounds``, the grid's mean). This reads a request's count from the
recording: the engine's step that emitted each token is the step whose end time is the token's
time (the recorder stamps a step's tokens with its end, ``qualification/engine/_record.py``), a
request's first token is its prefill's, and its undrafted rounds are the decode steps emitting
one token before the first that emitted more. A drafted round whose first draft was rejected
also emits one token; the vLLM counters' mean, (decode rounds - drafted rounds) / finished
requests, is printed beside the count as the check.

The repeat floor: each served run's per-request E2E predicted by the mean of the other served
runs of the same trace (same engine, same per-request undrafted rounds), its median and P90
absolute error. A replay that predicts one E2E per request is not expected to beat it. It reads
only the committed recording; it is a diagnostic, not a score.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from aisim.errors import DataIntegrityError
from qualification.engine._diagnostic import diagnostic_parser, run_diagnostic
from qualification.engine._score import leave_one_out


def undrafted_rounds(steps: Any, requests: Any, where: str = "recording") -> dict[str, int | None]:
    """Per request id (``requests`` order), its decode rounds emitting one token before its
    first round emitting more (None: no round emitted more). ``steps``: the served run's steps
    (``end_ms``); ``requests``: its requests (``request_id``, ``token_times_ms``). A token time
    that is no step's end is refused naming the request and token."""
    if len(steps) == 0 and len(requests):
        # A client-side driver (vllm bench serve) records no engine steps: this was refused as
        # "token_times_ms[0] = 32.03 is no step's end_ms".
        raise DataIntegrityError(
            f"{where}: no engine steps (steps.csv left out: a client-side recording); the "
            "undrafted rounds are read from the engine's steps"
        )
    step_of = {float(end): index for index, end in enumerate(steps["end_ms"].tolist())}
    out: dict[str, int | None] = {}
    for rid, times in zip(
        requests["request_id"].tolist(), requests["token_times_ms"].tolist(), strict=True
    ):
        emitted: Counter[int] = Counter()
        for number, time in enumerate(times):
            index = step_of.get(float(time))
            if index is None:
                raise DataIntegrityError(
                    f"{where}: request {str(rid)!r}: token_times_ms[{number}] = {float(time)!r} "
                    "is no step's end_ms; the tokens per step are unknown"
                )
            emitted[index] += 1
        order = sorted(emitted)
        count: int | None = None
        for position, index in enumerate(order[1:]):
            if emitted[index] > 1:
                count = position
                break
        out[str(rid)] = count
    return out


def repeat_floor(e2e: Sequence[Sequence[float]]) -> list[dict[str, float]]:
    """Per served run (``e2e[i]``: its per-request E2E, the same requests in the same order in
    every run), the median and P90 absolute relative error (%) of the mean of the other runs'
    E2E as its prediction (``_score.leave_one_out``). Needs two runs or more."""
    return [
        {key: figures[key] for key in ("median_abs_error_pct", "p90_abs_error_pct")}
        for figures in leave_one_out(e2e)
    ]


def describe_recording(recording: Any) -> str:
    """Markdown: per served run, the undrafted rounds per request (distribution, mean, the vLLM
    counters' mean, correlation with prompt and output length), and the repeat floor."""
    from qualification.engine._measured import measured_latencies
    from qualification.engine._replay import observed_acceptance
    from qualification.engine._score import _undrafted_per_request

    lines = [f"## {recording.name}", ""]
    lines += [
        "| run | requests | undrafted rounds: requests | mean | counters' mean | never drafted "
        "| corr. prompt | corr. output |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in recording.served:
        counters = _undrafted_per_request(observed_acceptance(run))
        if len(run.steps) == 0:
            # A client-side recording (vllm bench serve): no engine steps to count rounds in;
            # its repeat floor below needs only the requests.
            lines.append(
                f"| {run.name} | {len(run.requests)} | n/a (no engine steps) | n/a | "
                + ("n/a" if counters is None else f"{counters:.2f}")
                + " | n/a | n/a | n/a |"
            )
            continue
        counts = undrafted_rounds(run.steps, run.requests, repr(str(run.directory)))
        known = [count for count in counts.values() if count is not None]
        frame = run.requests.set_index(run.requests["request_id"].astype(str))
        kept = [rid for rid, count in counts.items() if count is not None]
        prompts = frame.loc[kept, "prompt_tokens"].astype(float).to_numpy()
        outputs = frame.loc[kept, "output_tokens"].astype(float).to_numpy()
        values = np.asarray(known, dtype=float)
        spread = len(set(known)) > 1
        histogram = ", ".join(f"{k}: {n}" for k, n in sorted(Counter(known).items()))
        mean = f"{values.mean():.2f}" if known else "n/a"
        lines.append(
            f"| {run.name} | {len(counts)} | {histogram} | {mean} | "
            + ("n/a" if counters is None else f"{counters:.2f}")
            + f" | {len(counts) - len(known)} | "
            + (f"{np.corrcoef(prompts, values)[0, 1]:+.2f}" if spread else "n/a")
            + " | "
            + (f"{np.corrcoef(outputs, values)[0, 1]:+.2f}" if spread else "n/a")
            + " |"
        )
    if len(recording.served) >= 2:
        floor = repeat_floor([measured_latencies(run)["e2e"] for run in recording.served])
        lines += [
            "",
            "Repeat floor (each run's per-request E2E predicted by the mean of the other runs): "
            + "; ".join(
                f"{run.name} median {f['median_abs_error_pct']:.1f} %, "
                f"P90 {f['p90_abs_error_pct']:.1f} %"
                for run, f in zip(recording.served, floor, strict=True)
            )
            + "; mean over runs median "
            + f"{np.mean([f['median_abs_error_pct'] for f in floor]):.1f} %, P90 "
            + f"{np.mean([f['p90_abs_error_pct'] for f in floor]):.1f} %.",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = diagnostic_parser(
        "undrafted",
        "Per request, the n-gram decode rounds that drafted nothing, and the engine's repeat "
        "floor of per-request E2E (the served runs only: a recording without grid/ will do).",
    ).parse_args(argv)
    return run_diagnostic(
        args.recordings, lambda recording: print(describe_recording(recording)), need_grid=False
    )


if __name__ == "__main__":
    sys.exit(main())
