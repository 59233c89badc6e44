"""One iteration's work on one attention-DP rank, validated once at construction.

``ForwardPassMetrics`` is what every estimator prices. A list of them is one iteration over several
attention-data-parallel ranks: the iteration's latency is the max over ranks, an idle rank costs 0.
Counts are plain Python integers in ``0..MAX_COUNT``; numpy integers are converted at the edge.
"""

from __future__ import annotations

from typing import Final, cast

from aisim._text import describe
from aisim.errors import ConfigError

#: Largest count or token total accepted anywhere in ``aisim.fpm`` (keeps integers under 63 bits).
MAX_COUNT: Final = 2**62 - 1


def as_count(value: object, path: str) -> int:
    """A non-negative integer count (numpy integers and integral floats accepted, bools rejected).

    A plain ``int`` is checked here; anything else goes to the interpreted edge
    (``aisim.fpm._coerce.count_value``), which converts it or names what is wrong.
    """
    result: int
    if isinstance(value, int) and not isinstance(value, bool):
        result = int(value)
    else:
        from aisim.fpm._coerce import count_value

        result = count_value(value, path, MAX_COUNT)
    if result < 0 or result > MAX_COUNT:
        raise ConfigError(f"{path}: expected an integer in 0..{MAX_COUNT}, got {result}")
    return result


def as_count_list(value: object, path: str) -> list[int] | None:
    """``None`` or a list of counts (a list, tuple or numpy array of integers).

    A list or tuple of plain in-range ``int`` is copied without building a path per entry (the
    replay passes those once per pass); anything else is converted or refused entry by entry
    (a non-list made a list first by the interpreted edge, ``aisim.fpm._coerce.plain_list``).
    """
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        items: list[object] = list(value)
        for item in items:
            if type(item) is not int or not 0 <= item <= MAX_COUNT:
                return [as_count(entry, f"{path}[{index}]") for index, entry in enumerate(items)]
        return cast("list[int]", items)
    from aisim.fpm._coerce import plain_list

    return [
        as_count(entry, f"{path}[{index}]") for index, entry in enumerate(plain_list(value, path))
    ]


class ForwardPassMetrics:
    """The work of one forward pass on one rank.

    * ``num_decode_requests`` / ``sum_decode_kv_tokens``: decode requests (one query token each
      in STP; the *logical* requests of an SD round) and the past KV tokens they read in total.
    * ``num_prefill_requests`` / ``sum_prefill_tokens``: prefill (or prefill-chunk) requests and
      the new prompt tokens they process in total.
    * ``past_kv_lengths`` (optional): one entry per decode request; must sum to
      ``sum_decode_kv_tokens``.
    * ``extend_lengths`` (optional): one entry per prefill request; must sum to
      ``sum_prefill_tokens``.
    * ``prefill_past_kv_lengths`` (optional): per prefill request, the context already cached
      before this chunk (chunked prefill / prefix hits); attention reads it. Default: none.

    Raises ``ConfigError`` (naming ``metrics.<field>``) for negative or non-integer counts, list
    lengths that disagree with the counts, sums that disagree with the totals, tokens without
    requests, or requests without tokens.
    """

    def __init__(
        self,
        num_decode_requests: object = 0,
        sum_decode_kv_tokens: object = 0,
        num_prefill_requests: object = 0,
        sum_prefill_tokens: object = 0,
        past_kv_lengths: object = None,
        extend_lengths: object = None,
        prefill_past_kv_lengths: object = None,
    ) -> None:
        self.num_decode_requests: int = as_count(num_decode_requests, "metrics.num_decode_requests")
        self.sum_decode_kv_tokens: int = as_count(
            sum_decode_kv_tokens, "metrics.sum_decode_kv_tokens"
        )
        self.num_prefill_requests: int = as_count(
            num_prefill_requests, "metrics.num_prefill_requests"
        )
        self.sum_prefill_tokens: int = as_count(sum_prefill_tokens, "metrics.sum_prefill_tokens")
        self.past_kv_lengths: list[int] | None = as_count_list(
            past_kv_lengths, "metrics.past_kv_lengths"
        )
        self.extend_lengths: list[int] | None = as_count_list(
            extend_lengths, "metrics.extend_lengths"
        )
        self.prefill_past_kv_lengths: list[int] | None = as_count_list(
            prefill_past_kv_lengths, "metrics.prefill_past_kv_lengths"
        )
        self._check()

    def _check(self) -> None:
        if self.num_decode_requests == 0 and self.sum_decode_kv_tokens != 0:
            raise ConfigError(
                f"metrics.sum_decode_kv_tokens: {self.sum_decode_kv_tokens} past KV tokens "
                "given with num_decode_requests = 0; allowed: 0 when there are no decode requests"
            )
        if self.num_prefill_requests == 0 and self.sum_prefill_tokens != 0:
            raise ConfigError(
                f"metrics.sum_prefill_tokens: {self.sum_prefill_tokens} tokens given with "
                "num_prefill_requests = 0; allowed: 0 when there are no prefill requests"
            )
        if self.sum_prefill_tokens < self.num_prefill_requests:
            raise ConfigError(
                f"metrics.sum_prefill_tokens: {self.sum_prefill_tokens} is less than "
                f"num_prefill_requests = {self.num_prefill_requests}; every prefill request "
                "processes at least one token"
            )
        _check_list(
            self.past_kv_lengths,
            "past_kv_lengths",
            self.num_decode_requests,
            "num_decode_requests",
            self.sum_decode_kv_tokens,
            "sum_decode_kv_tokens",
        )
        _check_list(
            self.extend_lengths,
            "extend_lengths",
            self.num_prefill_requests,
            "num_prefill_requests",
            self.sum_prefill_tokens,
            "sum_prefill_tokens",
        )
        if self.extend_lengths is not None and 0 in self.extend_lengths:
            raise ConfigError("metrics.extend_lengths: every prefill request needs >= 1 token")
        prefill_past = self.prefill_past_kv_lengths
        if prefill_past is not None and len(prefill_past) != self.num_prefill_requests:
            raise ConfigError(
                f"metrics.prefill_past_kv_lengths: {len(prefill_past)} entries given; expected "
                f"one per prefill request (num_prefill_requests = {self.num_prefill_requests})"
            )

    @property
    def has_prefill(self) -> bool:
        return self.num_prefill_requests > 0

    @property
    def has_decode(self) -> bool:
        return self.num_decode_requests > 0

    @property
    def is_idle(self) -> bool:
        """No work at all: such a rank costs 0 ms."""
        return self.num_prefill_requests == 0 and self.num_decode_requests == 0

    @property
    def is_mixed(self) -> bool:
        """Prefill and decode work in one pass."""
        return self.num_prefill_requests > 0 and self.num_decode_requests > 0

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready mapping (lists copied; optional lists omitted when absent)."""
        result: dict[str, object] = {
            "num_decode_requests": self.num_decode_requests,
            "sum_decode_kv_tokens": self.sum_decode_kv_tokens,
            "num_prefill_requests": self.num_prefill_requests,
            "sum_prefill_tokens": self.sum_prefill_tokens,
        }
        if self.past_kv_lengths is not None:
            result["past_kv_lengths"] = list(self.past_kv_lengths)
        if self.extend_lengths is not None:
            result["extend_lengths"] = list(self.extend_lengths)
        if self.prefill_past_kv_lengths is not None:
            result["prefill_past_kv_lengths"] = list(self.prefill_past_kv_lengths)
        return result

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ForwardPassMetrics):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.num_decode_requests, self.sum_decode_kv_tokens))

    def __repr__(self) -> str:
        return (
            f"ForwardPassMetrics(decode={self.num_decode_requests} req / "
            f"{self.sum_decode_kv_tokens} kv, prefill={self.num_prefill_requests} req / "
            f"{self.sum_prefill_tokens} tok)"
        )


def _check_list(
    items: list[int] | None,
    name: str,
    count: int,
    count_name: str,
    total: int,
    total_name: str,
) -> None:
    if items is None:
        return
    if len(items) != count:
        raise ConfigError(
            f"metrics.{name}: {len(items)} entries given; expected one per request "
            f"({count_name} = {count})"
        )
    listed = sum(items)
    if listed != total:
        raise ConfigError(
            f"metrics.{name}: entries sum to {listed} but {total_name} = {total}; they must agree"
        )


def as_rank_list(metrics: object, path: str = "metrics") -> list[ForwardPassMetrics]:
    """One ``ForwardPassMetrics`` or a non-empty list of them (one per attention-DP rank)."""
    if isinstance(metrics, ForwardPassMetrics):
        return [metrics]
    if isinstance(metrics, list) and metrics:
        # The pricer's form (once or twice per priced pass): checked in a native loop.
        ranks: list[ForwardPassMetrics] = []
        for item in metrics:
            if not isinstance(item, ForwardPassMetrics):
                break
            ranks.append(item)
        else:
            return ranks
    if isinstance(metrics, (list, tuple)):
        if not metrics:
            raise ConfigError(f"{path}: expected at least one rank's ForwardPassMetrics, got []")
        ranks = []
        for index, item in enumerate(metrics):
            if not isinstance(item, ForwardPassMetrics):
                raise ConfigError(
                    f"{path}[{index}]: expected ForwardPassMetrics, got {describe(item)}"
                )
            ranks.append(item)
        return ranks
    raise ConfigError(
        f"{path}: expected ForwardPassMetrics or a list of them (one per rank), "
        f"got {describe(metrics)}"
    )


def decode_metrics(batch_size: int, total_kv_tokens: int) -> ForwardPassMetrics:
    """Shorthand for a decode-only rank: ``batch_size`` requests reading ``total_kv_tokens``."""
    return ForwardPassMetrics(num_decode_requests=batch_size, sum_decode_kv_tokens=total_kv_tokens)
