"""Replay's view of a resolved block's per-round draft lengths and acceptance trace: vLLM's
batch-size table expanded as the engine expands it, SGLang's adaptive tiers, a trace's rounds
(docs/speculation.md, "Dynamic draft lengths in replay")."""

from __future__ import annotations

from aisim.config._speculation_modes import draft_length_lookup
from aisim.errors import ConfigError
from aisim.replay import AdaptiveTier
from aisim.speculation import (
    REPLAY_MAX_DEPTH,
    REPLAY_MIN_DEPTH,
    AcceptanceTrace,
    ResolvedSpeculation,
)


def replay_depth(resolved: ResolvedSpeculation, backend: str, path: str) -> int:
    """The depth replay simulates: a chain's (``ResolvedSpeculation.replay_depth``), or, on
    SGLang, an EAGLE tree's (``speculative_num_steps``: a path accepts at most one token per
    step), verified at its full width (``speculative_num_draft_tokens``). vLLM's trees are not
    replayed."""
    if not resolved.is_tree:
        return int(resolved.replay_depth)
    if backend != "sglang":
        raise ConfigError(
            f"{path}: kind {resolved.kind}: replay supports trees on sglang only "
            "(--speculative-eagle-topk > 1); vLLM's tree speculation is not modelled"
        )
    widths = resolved.tree_shape or ()
    if len(set(widths)) != 1:
        raise ConfigError(
            f"{path}: kind {resolved.kind}: SGLang drafts speculative_eagle_topk candidates at "
            f"every step; tree_shape {list(widths)} has unequal widths"
        )
    depth = int(resolved.max_accepted_draft_tokens)
    if not REPLAY_MIN_DEPTH <= depth <= REPLAY_MAX_DEPTH:
        raise ConfigError(
            f"{path}: kind {resolved.kind}: replay supports {REPLAY_MIN_DEPTH}.."
            f"{REPLAY_MAX_DEPTH} draft steps per round, got a tree of depth {depth}"
        )
    return depth


class VaryingLengths:
    """What ``SpeculationPlan`` takes beyond a fixed chain (each ``None`` when unused)."""

    def __init__(self) -> None:
        self.draft_lengths: list[int] | None = None
        self.adaptive_tiers: list[AdaptiveTier] | None = None
        self.adaptive_initial = 0
        self.adaptive_cuda_graph_bs: list[int] | None = None
        self.trace_accepted: dict[str, list[int]] | None = None
        self.trace_drafted: dict[str, list[int]] | None = None


def varying_lengths(resolved: ResolvedSpeculation, depth: int, path: str) -> VaryingLengths:
    """The per-round length inputs of ``resolved`` (a ``ResolvedSpeculation``) for replay."""
    result = VaryingLengths()
    schedule = resolved.draft_length_schedule
    if schedule is not None:
        # Indexes past the last range repeat the last K (the engine's tail), so the table
        # stops at the last range's end.
        result.draft_lengths = draft_length_lookup(schedule, schedule[-1][1], depth)
    adaptive = resolved.adaptive_policy
    if adaptive is not None:
        result.adaptive_initial = adaptive.initial_steps
        result.adaptive_cuda_graph_bs = adaptive.cuda_graph_bs
        result.adaptive_tiers = list(adaptive.tiers)
    trace = resolved.acceptance_trace
    if trace is not None and not isinstance(trace, AcceptanceTrace):
        raise TypeError(f"{path}: acceptance trace: expected an AcceptanceTrace, got {trace!r}")
    if trace is not None:
        result.trace_accepted = trace.accepted
        result.trace_drafted = trace.drafted
    if resolved.kind == "suffix" and (trace is None or trace.drafted is None):
        raise ConfigError(
            f"{path}: kind suffix: suffix decoding drafts a text-dependent number of tokens "
            "each round; replay needs an acceptance_trace with drafted counts per round"
        )
    return result
