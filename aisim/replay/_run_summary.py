"""The typed summary of one replay (``RunSummary``), and its JSON form (``to_dict``: exactly
``summary.json``, docs/replay.md).

The CLI, sweeps and reports read the typed fields; ``to_dict`` is the one place that knows the
JSON key of each (``mean_ttft_ms``, ``accepted_length_histogram``, ...), so the files stay as
they were. Definitions of the statistics: ``aisim/replay/_summary.py``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

#: The latency statistics of a summary, in their JSON order (``ttft`` -> ``mean_ttft_ms``, ...).
LATENCY_NAMES: Final = ("ttft", "time_to_second_token", "tpot", "e2e_latency", "itl")
#: The statistics of each latency, in their JSON order (``median`` -> ``median_ttft_ms``).
STATISTIC_NAMES: Final = ("mean", "median", "p90", "p95", "p99")


@dataclass(frozen=True)
class LatencyStatistics:
    """Mean and percentiles (ms) of one latency; None where it has no samples."""

    mean_ms: float | None
    median_ms: float | None
    p90_ms: float | None
    p95_ms: float | None
    p99_ms: float | None

    def statistic(self, name: str) -> float | None:
        """The statistic called ``name`` (one of ``STATISTIC_NAMES``)."""
        if name == "mean":
            return self.mean_ms
        if name == "median":
            return self.median_ms
        if name == "p90":
            return self.p90_ms
        if name == "p95":
            return self.p95_ms
        if name == "p99":
            return self.p99_ms
        raise ValueError(
            f"latency statistic: expected one of {', '.join(STATISTIC_NAMES)}, got {name!r}"
        )


@dataclass(frozen=True)
class SpeculationCounts:
    """Decode rounds and what SD did in them: ``accepted_length_histogram[k]`` rounds accepted
    ``k`` drafts; ``mean_acceptance_length`` (tokens per SD round) is None without SD rounds."""

    decode_rounds: int
    sd_rounds: int
    accepted_draft_tokens: int
    mean_acceptance_length: float | None
    accepted_length_histogram: tuple[int, ...]


@dataclass(frozen=True)
class SketchedPercentiles:
    """Which latencies had more than ``exact_limit`` samples, so that their percentiles come from
    a relative-error sketch (``sketch``, within ``relative_accuracy``)."""

    sketch: str
    relative_accuracy: float
    exact_limit: int
    sketched: tuple[str, ...]


@dataclass(frozen=True)
class WorkerSummary:
    """One worker as it ran: its role, GPUs (``tensor`` x ``attention_data``), speculation
    kind and draft length (``none`` and 0 without SD), and each rank's peak KV blocks in use."""

    role: str
    tensor: int
    attention_data: int
    speculation: str
    draft_length: int
    peak_used_blocks: tuple[int, ...]

    @property
    def gpus(self) -> int:
        return self.tensor * self.attention_data


@dataclass(frozen=True)
class RunSummary:
    """Counts, duration, throughput, latency and SD statistics of one replay, the workers as
    they ran and the resolved configuration (``config``, as the edge described it).

    ``arrival_order`` is set only when the traffic came out of arrival order,
    ``sketched_percentiles`` only when a latency had too many samples for exact percentiles;
    both are absent from the JSON otherwise, so other summaries are unchanged.
    """

    total_requests: int
    completed_requests: int
    not_completed_reasons: Mapping[str, int]
    duration_ms: float
    total_input_tokens: int
    total_output_tokens: int
    request_throughput_rps: float
    output_throughput_tok_s: float
    input_throughput_tok_s: float
    ttft: LatencyStatistics
    time_to_second_token: LatencyStatistics
    tpot: LatencyStatistics
    e2e_latency: LatencyStatistics
    itl: LatencyStatistics
    speculation: SpeculationCounts
    passes: int
    events: int
    preemptions: int
    sd_reservation_preemptions: int
    cached_prompt_tokens: int
    workers: tuple[WorkerSummary, ...]
    config: Mapping[str, Any]
    arrival_order: str | None = None
    sketched_percentiles: SketchedPercentiles | None = None

    @property
    def not_completed_requests(self) -> int:
        return self.total_requests - self.completed_requests

    @property
    def gpus(self) -> int:
        """GPUs of every worker together."""
        return sum(worker.gpus for worker in self.workers)

    @property
    def decoding_worker(self) -> WorkerSummary:
        """The worker that runs the decode rounds: the aggregated one, or the decode side of a
        prefill/decode pair, wherever it stands in ``workers``."""
        for worker in self.workers:
            if worker.role != "prefill":
                return worker
        raise ValueError("a replay has a worker that decodes")

    def latency(self, name: str) -> LatencyStatistics:
        """The statistics of the latency called ``name`` (one of ``LATENCY_NAMES``)."""
        if name == "ttft":
            return self.ttft
        if name == "time_to_second_token":
            return self.time_to_second_token
        if name == "tpot":
            return self.tpot
        if name == "e2e_latency":
            return self.e2e_latency
        if name == "itl":
            return self.itl
        raise ValueError(f"latency: expected one of {', '.join(LATENCY_NAMES)}, got {name!r}")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``canonical_json(summary.to_dict())`` is ``summary.json``), keys in
        their historical order; a new dict (and a copy of ``config``) on every call."""
        out: dict[str, Any] = {
            "total_requests": self.total_requests,
            "completed_requests": self.completed_requests,
            "not_completed_requests": self.not_completed_requests,
            "not_completed_reasons": dict(self.not_completed_reasons),
            "duration_ms": self.duration_ms,
            "total_input_tokens": self.total_input_tokens,
            "total_output_tokens": self.total_output_tokens,
            "request_throughput_rps": self.request_throughput_rps,
            "output_throughput_tok_s": self.output_throughput_tok_s,
            "input_throughput_tok_s": self.input_throughput_tok_s,
        }
        for name in LATENCY_NAMES:
            statistics = self.latency(name)
            for statistic in STATISTIC_NAMES:
                out[f"{statistic}_{name}_ms"] = statistics.statistic(statistic)
        speculation = self.speculation
        out["decode_rounds"] = speculation.decode_rounds
        out["sd_rounds"] = speculation.sd_rounds
        out["accepted_draft_tokens"] = speculation.accepted_draft_tokens
        out["mean_acceptance_length"] = speculation.mean_acceptance_length
        out["accepted_length_histogram"] = {
            str(accepted): rounds
            for accepted, rounds in enumerate(speculation.accepted_length_histogram)
        }
        out["passes"] = self.passes
        out["events"] = self.events
        out["preemptions"] = self.preemptions
        out["sd_reservation_preemptions"] = self.sd_reservation_preemptions
        out["cached_prompt_tokens"] = self.cached_prompt_tokens
        out["kv_peak_used_blocks"] = [list(worker.peak_used_blocks) for worker in self.workers]
        out["config"] = copy.deepcopy(dict(self.config))
        if self.arrival_order is not None:
            out["arrival_order"] = self.arrival_order
        sketched = self.sketched_percentiles
        if sketched is not None:
            out["latency_percentiles"] = {
                "method": "sketch",
                "sketch": sketched.sketch,
                "relative_accuracy": sketched.relative_accuracy,
                "exact_limit": sketched.exact_limit,
                "sketched": list(sketched.sketched),
            }
        return out
