"""One fixed-timing request for interval tests: its replay is known by hand."""

from __future__ import annotations

from typing import Any


def single_request(output_tokens: int = 13, rate: float = 1.0) -> dict[str, Any]:
    """One request (100 in, ``output_tokens`` out), MTP d = 1 with i.i.d. acceptance ``rate``,
    fixed timing: prefill 10 ms, decode (an SD round) 5 ms. With the defaults every draft is
    accepted: prefill, then 6 SD rounds of 2 tokens: E2E 40 ms, TTFT 10 ms, in every replay."""
    return {
        "traffic": {
            "source": {
                "type": "synthetic",
                "num_requests": 1,
                "prompt_tokens": 100,
                "output_tokens": output_tokens,
            },
            "load": {"type": "constant", "rate_rps": 1},
        },
        "engine": {
            "backend": "vllm",
            "speculation": {
                "kind": "mtp",
                "params": {"depth": 1},
                "acceptance_rate": rate,
                "seed": 1,
            },
            "workers": {
                "aggregated": {
                    "kv_cache": {"capacity": {"type": "fixed", "blocks": 64}},
                    "timing": {"type": "fixed", "prefill_ms": 10, "decode_ms": 5},
                }
            },
        },
    }
