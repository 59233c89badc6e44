"""Fit SGLang's per-request host time without the overlap scheduler (held-out protocol).

The InferenceX B200 fp8 SGLang MTP script (``dsr1_fp8_b200_mtp.sh`` at
SemiAnalysisAI/InferenceX@843c6254; the fp4 one exports it) writes ``SGLANG_ENABLE_SPEC_V2=1``
as a plain shell assignment that is never exported, so the server runs EAGLE / MTP without
Spec V2, and SGLang then turns its overlap scheduler off (sgl-project/sglang ``python/sglang/srt/server_args.py``,
``ServerArgs._handle_speculative_decoding``: ``disable_overlap_schedule = True`` unless
``envs.SGLANG_ENABLE_SPEC_V2``). Its ``Scheduler.event_loop_normal``
(``python/sglang/srt/managers/scheduler.py``) then runs ``get_next_batch_to_run``,
``run_batch`` and ``process_batch_result`` one after the other, so the per-request host work of
a round (batch preparation, the verify bookkeeping, appending each request's accepted tokens,
the finish checks and the streamed outputs) lies between GPU rounds instead of behind them
(``event_loop_overlap``). No public source states its size per request.

Fitted here: one constant, the host time per request per pass, on the median TPOT of the
B200 SGLang MTP **history** rows at 1024/1024 and 512 streams that are not also latest rows
(``training_rows``): there all 512 requests run every round and the KV cache is far from full,
so the extra time per round is that constant times 512. Every other row is held out (the
latest file's B200 SGLang MTP rows, the history rows at 4..64 streams and at 8k/1k and 1k/8k).
Each evaluation is a full replay of that one workload; the predicted TPOT is close to linear in
the constant (one batch of 512 throughout), so a secant search converges in a few replays.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any, Final

from aisim.config import run_replay
from qualification.public_gpu._points import load_points
from qualification.public_gpu._workload import Refusal, replay_config, serial_host

#: The rows the constant is fitted on (see the module docstring).
HOST_FIT_FILTER: Final = {
    "source": "inferencex-history",
    "hardware": "b200",
    "engine": "sglang",
    "sd": "mtp",
    "isl": 1024,
    "osl": 1024,
    "conc": 512,
}
#: The term's name in ``seen_by``.
HOST_TERM: Final = "SGLANG_SERIAL_HOST_US_PER_REQUEST"


def training_rows(evidence: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(point, replay config) of every row the host constant is fitted on."""
    rows = []
    for point in load_points(evidence):
        if point["also_in_latest"]:
            continue
        if any(point.get(key) != value for key, value in HOST_FIT_FILTER.items()):
            continue
        try:
            config, _ = replay_config(point)
        except Refusal:
            continue
        if not serial_host(point):
            continue
        rows.append((point, config))
    return rows


def _median_tpot(config: dict[str, Any], host_us: float) -> float:
    config["engine"]["workers"]["aggregated"]["scheduler"]["host_us_per_request"] = host_us
    median = run_replay(config).run_summary.tpot.median_ms
    if median is None:
        raise ValueError("the replay completed no request with a TPOT")
    return float(median)


def fit_serial_host(evidence: Path, progress: Any = None) -> dict[str, Any]:
    """The host time per request per pass (us) that makes the median predicted TPOT of the
    training rows equal their median measured TPOT (all of them one workload, replayed)."""
    rows = training_rows(evidence)
    if not rows:
        return {}
    configs = {id(c): c for _, c in rows}
    if len({repr(sorted(c.items())) for c in configs.values()}) != 1:
        raise ValueError("the host fit's rows do not share one workload")
    config = rows[0][1]
    target = statistics.median(float(p["measured"]["median_tpot_ms"]) for p, _ in rows)
    seen: list[tuple[float, float]] = []
    low, high = 0.0, 100.0
    f_low, f_high = _median_tpot(config, low), _median_tpot(config, high)
    seen += [(low, f_low), (high, f_high)]
    for _ in range(6):
        # Secant on the predicted median TPOT, nearly linear in the constant.
        guess = high + (target - f_high) * (high - low) / (f_high - f_low)
        guess = max(0.0, round(guess, 2))
        value = _median_tpot(config, guess)
        seen.append((guess, value))
        if progress is not None:
            progress(f"host {guess} us: median TPOT {value:.3f} ms (target {target:.3f})")
        low, f_low, high, f_high = high, f_high, guess, value
        if abs(math.log(value / target)) < 0.002 or f_high == f_low:
            break
    host_us, predicted = seen[-1]
    errors = [100.0 * (predicted / float(p["measured"]["median_tpot_ms"]) - 1.0) for p, _ in rows]
    return {
        "us": host_us,
        "rows": len(rows),
        "ids": sorted(p["id"] for p, _ in rows),
        "target_median_tpot_ms": target,
        "predicted_median_tpot_ms": predicted,
        "in_sample_median_abs_tpot_error_pct": statistics.median(abs(e) for e in errors),
        "evaluations": [[h, v] for h, v in seen],
    }
