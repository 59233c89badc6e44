"""The limits of every traffic value: tokens per request, requests per replay, and times
(docs/replay.md "Limits"); the config models and the trace readers both check against them."""

from __future__ import annotations

from typing import Final

MAX_TOKENS: Final = 1 << 24
MAX_REQUESTS: Final = 10_000_000
#: Largest time any traffic input may give, and the latest any request may arrive once the
#: load is applied: 2**32 ms (about 49.7 days). At that magnitude float64 still resolves
#: 2**-20 ms (under a nanosecond), so latencies measured from an arrival (TTFT = first token -
#: arrival) keep their value instead of rounding away; and a sum over the largest trace
#: (10**7 < 2**24 requests) stays below 2**56 ms, far from overflow (integer-millisecond values
#: add exactly while a running sum is below 2**53). See docs/replay.md "Limits".
MAX_TIME_MS: Final = float(1 << 32)
