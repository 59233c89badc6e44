"""Replay (docs/design.md#replay): a deterministic discrete-event simulation of vLLM-like and SGLang-like
serving with speculative decoding.

``run(plan) -> ReplayResult`` simulates a validated ``ReplayPlan``; a config (mapping or file)
is replayed by ``aisim.run_replay(config)``, which validates it at the config edge. The
simulation core is compiled by mypyc; ``run`` and the result (numpy summary, pandas) are not.
"""

from __future__ import annotations

from aisim.replay._engine import Simulation
from aisim.replay._kv_sizing import (
    check_request_fits,
    check_requests_fit,
    free_kv_bytes_per_gpu,
    kv_blocks,
    kv_bytes_per_token_per_gpu,
)
from aisim.replay._parquet import RequestsParquet, TokensParquet
from aisim.replay._plan import (
    ROLE_AGGREGATED,
    ROLE_DECODE,
    ROLE_PREFILL,
    SCHEDULER_SGLANG,
    SCHEDULER_VLLM,
    KvPlan,
    ReplayPlan,
    RequestSpec,
    RequestStream,
    SchedulerPlan,
    SpeculationPlan,
    WorkerPlan,
    lookahead_tokens_for,
    no_speculation,
)
from aisim.replay._pricing import (
    PRICING_FIXED,
    SCALE_KINDS,
    MetricsFactory,
    PassModel,
    PassPricer,
    PriceScale,
)
from aisim.replay._run import ReplayResult, RequestSink, TokenRows, run
from aisim.replay._run_summary import (
    LatencyStatistics,
    RunSummary,
    SketchedPercentiles,
    SpeculationCounts,
    WorkerSummary,
)
from aisim.replay._sketch import RELATIVE_ACCURACY, SKETCH_KIND, Distribution, QuantileSketch
from aisim.replay._synthetic import (
    DIST_FIXED,
    DIST_UNIFORM,
    DISTRIBUTIONS,
    LOAD_CONCURRENCY,
    LOAD_CONSTANT,
    LOAD_POISSON,
    LOAD_TRACE,
    LOADS,
    ArrivalClock,
    LengthDistribution,
    SyntheticLengths,
    apply_load,
    synthetic_lengths,
)
from aisim.speculation import AdaptiveTier

__all__ = [
    "DISTRIBUTIONS",
    "DIST_FIXED",
    "DIST_UNIFORM",
    "LOADS",
    "LOAD_CONCURRENCY",
    "LOAD_CONSTANT",
    "LOAD_POISSON",
    "LOAD_TRACE",
    "RELATIVE_ACCURACY",
    "ROLE_AGGREGATED",
    "ROLE_DECODE",
    "ROLE_PREFILL",
    "SCHEDULER_SGLANG",
    "SCHEDULER_VLLM",
    "SKETCH_KIND",
    "ArrivalClock",
    "Distribution",
    "KvPlan",
    "LengthDistribution",
    "MetricsFactory",
    "PassModel",
    "PassPricer",
    "PriceScale",
    "QuantileSketch",
    "ReplayPlan",
    "ReplayResult",
    "RequestSink",
    "RequestSpec",
    "RequestStream",
    "RequestsParquet",
    "SchedulerPlan",
    "SpeculationPlan",
    "SyntheticLengths",
    "TokenRows",
    "TokensParquet",
    "WorkerPlan",
    "apply_load",
    "check_request_fits",
    "check_requests_fit",
    "free_kv_bytes_per_gpu",
    "kv_blocks",
    "kv_bytes_per_token_per_gpu",
    "lookahead_tokens_for",
    "no_speculation",
    "run",
    "synthetic_lengths",
    "AdaptiveTier",
    "PRICING_FIXED",
    "SCALE_KINDS",
    "Simulation",
    "RunSummary",
    "LatencyStatistics",
    "SpeculationCounts",
    "SketchedPercentiles",
    "WorkerSummary",
]
