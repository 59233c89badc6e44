"""Figures for the engine rules replay follows in P/D and under SD KV pressure (issue 15).

``python -m qualification.bench.replay_engine_rules TRACE.csv [--requests 1000]`` replays the
first N requests of a CSV trace (``arrival_s,prompt_tokens,output_tokens``) under fixed timing
(prefill pass 30 ms, decode pass 12 ms) and prints one JSON line per case:

- ``pd/<backend>/<link>``: disaggregated prefill + decode (each 128 sequences, 4096 batched
  tokens, 4096 blocks of 16), no SD, the KV hand-off free (``instant``) or over a 5 GB/s link;
  reports the mean TTFT.
- ``tight-kv/<backend>/<scheme>``: one aggregated worker with 700 blocks of 16 tokens and SD
  (MTP d = 3 or EAGLE-3 K = 3, every draft accepted, so timing is deterministic); reports
  preemptions (retractions on SGLang) and, where the build counts them, those caused by SD
  reservations.

The figures depend only on ``aisim.replay.run``, so the same command measures any build (run it
from another checkout for a before/after comparison).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

MODEL = "Qwen/Qwen3-8B"
HARDWARE = "h100_sxm"
FIXED: dict[str, Any] = {"type": "fixed", "prefill_ms": 30.0, "decode_ms": 12.0}
SCHEMES: dict[str, dict[str, Any]] = {
    "mtp3": {"kind": "mtp", "params": {"depth": 3}, "acceptance_rates": [1.0, 1.0, 1.0]},
}
LINKS: dict[str, dict[str, Any]] = {
    "instant": {"bandwidth_bytes_per_s": 1e18, "latency_ms": 0.0},
    "5GBps": {"bandwidth_bytes_per_s": 5e9, "latency_ms": 0.0},
}


def _scheduler(backend: str) -> dict[str, Any]:
    if backend == "vllm":
        return {"max_batched_tokens": 4096, "max_sequences": 128}
    return {"chunked_prefill_size": 4096, "max_running_requests": 128}


def _worker(backend: str, blocks: int) -> dict[str, Any]:
    return {
        "scheduler": _scheduler(backend),
        "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": blocks}},
        "timing": dict(FIXED),
    }


def pd_config(trace: str, requests: int, backend: str, link: str) -> dict[str, Any]:
    return {
        "traffic": {"source": {"type": "trace", "path": trace}, "max_requests": requests},
        "engine": {
            "model": MODEL,
            "hardware": HARDWARE,
            "backend": backend,
            "kv_transfer": dict(LINKS[link]),
            "workers": {"prefill": _worker(backend, 4096), "decode": _worker(backend, 4096)},
        },
    }


def tight_kv_config(trace: str, requests: int, backend: str, scheme: str) -> dict[str, Any]:
    return {
        "traffic": {"source": {"type": "trace", "path": trace}, "max_requests": requests},
        "engine": {
            "model": MODEL,
            "hardware": HARDWARE,
            "backend": backend,
            "speculation": dict(SCHEMES[scheme]),
            "workers": {"aggregated": _worker(backend, 700)},
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m qualification.bench.replay_engine_rules")
    parser.add_argument("trace", help="CSV trace: arrival_s,prompt_tokens,output_tokens")
    parser.add_argument("--requests", type=int, default=1000)
    args = parser.parse_args()
    from aisim.config import run_replay
    from aisim.errors import AisimError

    try:
        for backend in ("vllm", "sglang"):
            for link in LINKS:
                config = pd_config(args.trace, args.requests, backend, link)
                summary = run_replay(config).run_summary
                row = {"case": f"pd/{backend}/{link}", "mean_ttft_ms": summary.ttft.mean_ms}
                print(json.dumps(row), flush=True)
        for backend in ("vllm", "sglang"):
            for scheme in SCHEMES:
                summary = run_replay(
                    tight_kv_config(args.trace, args.requests, backend, scheme)
                ).run_summary
                row = {
                    "case": f"tight-kv/{backend}/{scheme}",
                    "preemptions": summary.preemptions,
                    "sd_reservation_preemptions": summary.sd_reservation_preemptions,
                    "mean_ttft_ms": summary.ttft.mean_ms,
                    "mean_e2e_latency_ms": summary.e2e_latency.mean_ms,
                }
                print(json.dumps(row), flush=True)
    except AisimError as exc:
        print(f"replay_engine_rules: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
