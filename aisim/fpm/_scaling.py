"""The published STP->SD scaling rule: T_SD(B, K, d) = (0.08 d + 1.25) * F_STP((d + 1) B, K).

Fixed coefficients, no runtime fitting. Widening maps each rank's B logical decode requests to
(d + 1) B STP requests with the total past KV preserved exactly; per-request KV lists split each
length L into d + 1 parts of floor(L / (d + 1)), the first L mod (d + 1) parts one larger.
"""

from __future__ import annotations

from typing import Final

from aisim.errors import ConfigError, UnsupportedQuery
from aisim.fpm._pass_metrics import MAX_COUNT, ForwardPassMetrics

#: Published slope and intercept of the factor (0.08 d + 1.25).
RULE_SLOPE: Final = 0.08
RULE_INTERCEPT: Final = 1.25
#: Most per-request KV entries a widened rank may list (keeps widening bounded in memory).
MAX_WIDENED_LIST: Final = 10_000_000


def scaling_factor(draft_length: int) -> float:
    """``0.08 * d + 1.25`` (d 1..5 -> 1.33, 1.41, 1.49, 1.57, 1.65)."""
    return RULE_SLOPE * draft_length + RULE_INTERCEPT


def check_draft_length(draft_length: object, path: str = "draft_length") -> int:
    """A positive integer d (integral floats accepted; bools, 0, negatives, 2.5 rejected).

    A plain ``int`` in range returns here; anything else goes to the interpreted edge
    (``aisim.fpm._coerce.draft_length_value``), which converts it or names what is wrong.
    """
    if (
        isinstance(draft_length, int)
        and not isinstance(draft_length, bool)
        and 1 <= draft_length <= MAX_COUNT
    ):
        return int(draft_length)
    from aisim.fpm._coerce import draft_length_value

    return draft_length_value(draft_length, path, MAX_COUNT)


def split_kv_length(length: int, parts: int) -> list[int]:
    """``length`` split into ``parts`` near-equal integers (larger ones first), summing exactly."""
    base = length // parts
    extra = length - base * parts
    return [base + 1 if index < extra else base for index in range(parts)]


def widen_rank(metrics: ForwardPassMetrics, draft_length: int, path: str) -> ForwardPassMetrics:
    """The STP reference coordinates of one rank for a round of ``draft_length`` drafts.

    Raises ``UnsupportedQuery`` for prefill or mixed work (the rule prices decode rounds only)
    and ``ConfigError`` when the widened batch would overflow ``MAX_COUNT``.
    """
    if metrics.has_prefill:
        kind = "mixed prefill+decode" if metrics.has_decode else "prefill"
        raise UnsupportedQuery(
            f"{path}: the STP->SD scaling rule prices decode rounds only; this rank carries "
            f"{kind} work ({metrics.num_prefill_requests} prefill requests, "
            f"{metrics.sum_prefill_tokens} tokens); price prefill without draft_length"
        )
    width = draft_length + 1
    batch = metrics.num_decode_requests
    if batch > MAX_COUNT // width:
        raise ConfigError(
            f"draft_length: widened batch ({draft_length} + 1) * {batch} exceeds {MAX_COUNT}; "
            "allowed: draft lengths whose widened batch fits in 62 bits"
        )
    lengths: list[int] | None = None
    source = metrics.past_kv_lengths
    if source is not None and len(source) > MAX_WIDENED_LIST // width:
        raise ConfigError(
            f"draft_length: widening {len(source)} per-request KV lengths by {width} would list "
            f"more than {MAX_WIDENED_LIST} entries; allowed: at most {MAX_WIDENED_LIST}"
        )
    if source is not None:
        lengths = []
        for length in source:
            lengths.extend(split_kv_length(length, width))
    return ForwardPassMetrics(
        num_decode_requests=batch * width,
        sum_decode_kv_tokens=metrics.sum_decode_kv_tokens,
        past_kv_lengths=lengths,
    )


def widen_ranks(
    ranks: list[ForwardPassMetrics], draft_length: int, path: str = "metrics"
) -> list[ForwardPassMetrics]:
    """``widen_rank`` over every rank (paths ``metrics[i]`` when there are several ranks)."""
    if len(ranks) == 1:
        return [widen_rank(ranks[0], draft_length, path)]
    return [widen_rank(rank, draft_length, f"{path}[{i}]") for i, rank in enumerate(ranks)]
