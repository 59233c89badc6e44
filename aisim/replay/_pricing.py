"""What one forward pass costs: fixed per-phase prices, or a forward-pass model (``aisim.fpm``).

A pass is described per attention-DP rank (``RankWork``); the pass ends at its slowest rank.
The replay never imports ``aisim.fpm``: a model is anything with the ``PassModel`` method, and
its per-rank metrics are built by the ``MetricsFactory`` the config edge hands in
(``aisim.fpm.ForwardPassMetrics``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol

PRICING_FIXED: Final = "fixed"
PRICING_MODEL: Final = "model"
#: Step kinds a ``PriceScale`` has a factor for, in its lists' order.
KIND_PREFILL: Final = 0
KIND_MIXED: Final = 1
KIND_DECODE: Final = 2
KIND_SD_ROUND: Final = 3
SCALE_KINDS: Final = ("prefill", "mixed", "decode", "sd_round")
#: Most answers a ``PassPricer`` remembers per model (then it forgets them all and starts over).
MEMO_LIMIT: Final = 1 << 16

#: Builds one rank's metrics from (num_decode_requests, sum_decode_kv_tokens,
#: num_prefill_requests, sum_prefill_tokens, past_kv_lengths, extend_lengths), positionally.
MetricsFactory = Callable[[int, int, int, int, "list[int] | None", "list[int] | None"], object]


class PassModel(Protocol):
    """What prices a pass: every ``aisim.fpm`` estimator, or any object with this method
    (``run_replay(forward_pass_model=...)``). ``metrics`` holds one metrics object per rank;
    ``draft_length`` is given only to a model that applies the STP->SD scaling rule. A model
    whose attribute ``pure_prices`` is ``True`` promises that its answer depends on the query
    alone (no state carried from one query to the next): the pricer then asks it once per
    distinct single-rank query and remembers the answer (``PassPricer._ask``)."""

    def estimate_forward_pass_time_ms(
        self, metrics: Sequence[Any], *, draft_length: int | None = None
    ) -> float: ...


class RankWork:
    """The work one rank carries in one pass (the logical batch, docs/design.md#metrics)."""

    def __init__(self) -> None:
        self.num_prefill_requests = 0
        self.sum_prefill_tokens = 0
        self.num_decode_requests = 0
        self.sum_decode_kv_tokens = 0
        self.prefill_past_kv: list[int] = []
        self.prefill_extend: list[int] = []
        self.decode_past_kv: list[int] = []
        # Decode requests in a round that drafted nothing (``SpeculationPlan.undrafted_rounds``).
        self.num_undrafted_decode_requests = 0

    @property
    def is_idle(self) -> bool:
        return self.num_prefill_requests == 0 and self.num_decode_requests == 0


class PriceScale:
    """Multiplicative factors on a model pricer's answers, one per step kind (a Monte Carlo
    replica's cost draw, ``aisim.uncertainty``): ``factors[k]`` for kind ``k`` (``SCALE_KINDS``
    order) and, where ``quantiles[k]`` is not empty, a per-pass draw from those evenly spaced
    quantiles (linear between them, ``interpolate``), drawn from ``stream`` (anything with
    ``random()`` in [0, 1): a ``random.Random``) in simulation order.

    A pass's kind: ``mixed`` (prefill beside decode), ``prefill``, ``sd_round`` (decode work of a
    speculating worker, asked with a draft length or of a model that prices SD natively) or
    ``decode`` (plain decode steps, of the model that prices a speculating worker's undrafted
    rounds too). ``speculating``: the worker speculates.

    With ``correlation_share`` s > 0 the per-pass draws are not independent: they follow the
    run's step-price drift in time (``correlated_u``: two draws dt busy milliseconds apart have
    correlation s exp(-dt / ``correlation_ms``) on the normal scale), each still distributed as
    its quantiles; the draws then come from ``stream.gauss``.
    """

    def __init__(
        self,
        factors: list[float],
        quantiles: list[tuple[float, ...]],
        stream: Any,
        speculating: bool,
        correlation_share: float = 0.0,
        correlation_ms: float = 0.0,
    ) -> None:
        self.factors = factors
        self.quantiles = quantiles
        self.stream = stream
        self.speculating = speculating
        #: The per-pass draws correlated in time when > 0 (``correlated_u``).
        self.correlation_share = correlation_share
        self.correlation_ms = correlation_ms
        self.state = 0.0
        self.started = False
        self.elapsed_ms = 0.0

    def apply(self, price: float, kind: int) -> float:
        factor = self.factors[kind]
        quantiles = self.quantiles[kind]
        if self.correlation_share > 0.0:
            scaled = price * factor
            if len(quantiles) > 0:
                scaled *= interpolate(quantiles, self.correlated_u())
            self.elapsed_ms += scaled
            return scaled
        if len(quantiles) == 0:
            return price * factor
        return price * factor * interpolate(quantiles, float(self.stream.random()))

    def correlated_u(self) -> float:
        """The next pass's probability under a Gaussian copula correlated in busy time: a
        unit-variance state ``x`` (a stationary Ornstein-Uhlenbeck process, advanced at each
        draw: x' = phi x + sqrt(1 - phi^2) g1, phi = exp(-dt / correlation_ms), dt the scaled
        milliseconds of the passes priced since the last draw; the first draw takes x from
        N(0, 1)), mixed with a fresh normal: z = sqrt(s) x + sqrt(1 - s) g2 (s = ``correlation_share``), so two passes
        dt apart have correlation s exp(-dt / correlation_ms) and each pass's marginal is N(0,
        1): u = Phi(z), the quantiles' own distribution. Both normals come from ``stream``
        (``gauss``), in simulation order."""
        stream = self.stream
        if not self.started:
            self.state = float(stream.gauss(0.0, 1.0))
            self.started = True
        else:
            phi = math.exp(-self.elapsed_ms / self.correlation_ms)
            self.state = phi * self.state + math.sqrt(1.0 - phi * phi) * float(
                stream.gauss(0.0, 1.0)
            )
        self.elapsed_ms = 0.0
        share = self.correlation_share
        z = math.sqrt(share) * self.state
        if share < 1.0:
            z += math.sqrt(1.0 - share) * float(stream.gauss(0.0, 1.0))
        return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def interpolate(quantiles: tuple[float, ...], u: float) -> float:
    """The value at probability ``u`` of evenly spaced ``quantiles`` (0 .. 100 %), linear
    between them: an inverse-CDF draw."""
    position = u * (len(quantiles) - 1)
    index = int(position)
    if index > len(quantiles) - 2:
        index = len(quantiles) - 2
    fraction = position - index
    return quantiles[index] + (quantiles[index + 1] - quantiles[index]) * fraction


def _decode_key(decodes: int, kv: int, draft_length: int) -> int:
    """One integer for a decode-only query (a native one: below 2**61), or -1 when a count is
    too large to pack: KV tokens below 2**43, requests below 2**12, draft length below 2**6."""
    if 0 <= draft_length < 64 and 0 <= decodes < 4096 and 0 <= kv < (1 << 43):
        return (kv << 18) | (decodes << 6) | draft_length
    return -1


class PassPricer:
    """Prices a pass from its per-rank work and the configured draft length (0: no SD).

    ``metrics_factory`` is called positionally in ``ForwardPassMetrics``' parameter order.
    ``fixed(prefill_ms, decode_ms)``: a rank costs ``prefill_ms`` if it carries any prefill work
    plus ``decode_ms`` if it carries any decode work (an SD round is decode work). ``model(...)``
    asks a forward-pass model: one call per pass with one metrics object per rank. When the model
    prices SD natively (roofline, measured rounds) the whole pass goes to it; otherwise an SD pass
    is priced as its prefill part (STP) plus its decode part under the STP->SD scaling rule
    (``draft_length=d``), because that rule rejects mixed work. ``scale`` multiplies each answer
    of the model by its step kind's factor (``PriceScale``).
    """

    def __init__(
        self,
        kind: str,
        prefill_ms: float,
        decode_ms: float,
        model: PassModel | None,
        metrics_factory: MetricsFactory | None,
        prices_speculation_natively: bool,
        wants_request_lists: bool,
        plain_model: PassModel | None = None,
        length_models: list[PassModel] | None = None,
        scale: PriceScale | None = None,
    ) -> None:
        self.kind = kind
        #: ``length_models[k]`` prices a pass whose widest decode round drafted ``k`` tokens
        #: (vLLM suffix decoding under the roofline, k = 0..K), when ``model`` prices the
        #: configured length natively; None: ``model`` prices every pass.
        self.length_models = length_models
        #: Prices a pass whose decode requests all drafted nothing (``price_plain``) when
        #: ``model`` prices only whole SD rounds; None: ``model`` itself without a draft length.
        self.plain_model = plain_model
        self.prefill_ms = prefill_ms
        self.decode_ms = decode_ms
        self.model = model
        self.metrics_factory = metrics_factory
        self.prices_speculation_natively = prices_speculation_natively
        self.wants_request_lists = wants_request_lists
        self.scale = scale
        #: Whether the main model prices SD rounds natively (a scaled answer's kind).
        self.model_native = bool(getattr(model, "prices_speculation_natively", False))
        #: When ``model`` has ``pure_prices``: its answers so far, by single-rank query. A replay
        #: at low load repeats 15-60 % of its passes exactly; those are not priced again. A
        #: decode-only query is keyed by one integer (``_decode_key``), any other by a tuple
        #: (decode requests, their KV, prefill requests, their tokens, draft length).
        self._memo: dict[int, float] | None = None
        self._wide_memo: dict[tuple[int, int, int, int, int], float] = {}
        if not wants_request_lists and getattr(model, "pure_prices", False) is True:
            self._memo = {}

    @staticmethod
    def fixed(prefill_ms: float, decode_ms: float) -> PassPricer:
        return PassPricer(PRICING_FIXED, prefill_ms, decode_ms, None, None, False, False)

    @staticmethod
    def from_model(
        model: PassModel,
        metrics_factory: MetricsFactory,
        prices_speculation_natively: bool,
        wants_request_lists: bool = False,
        plain_model: PassModel | None = None,
        length_models: list[PassModel] | None = None,
        scale: PriceScale | None = None,
    ) -> PassPricer:
        return PassPricer(
            PRICING_MODEL,
            0.0,
            0.0,
            model,
            metrics_factory,
            prices_speculation_natively,
            wants_request_lists,
            plain_model,
            length_models,
            scale,
        )

    def describe(self) -> str:
        if self.kind == PRICING_FIXED:
            return f"fixed(prefill_ms={self.prefill_ms!r}, decode_ms={self.decode_ms!r})"
        name = getattr(self.model, "name", None)
        return f"estimator({name if isinstance(name, str) else type(self.model).__name__})"

    def price(self, ranks: list[RankWork], draft_length: int) -> float:
        """Milliseconds for the pass: the maximum over ranks (an idle rank costs 0)."""
        if self.kind == PRICING_FIXED:
            worst = 0.0
            for work in ranks:
                cost = 0.0
                if work.num_prefill_requests > 0:
                    cost += self.prefill_ms
                if work.num_decode_requests > 0:
                    cost += self.decode_ms
                if cost > worst:
                    worst = cost
            return worst
        return self._price_model(ranks, draft_length)

    def price_plain(self, ranks: list[RankWork]) -> float:
        """A pass with SD configured whose decode requests all drafted nothing (their
        ``undrafted_rounds``): a plain decode step. Priced by ``plain_model`` when the main
        model prices only SD rounds, else as ``price(ranks, 0)``."""
        if self.kind == PRICING_MODEL and self.prices_speculation_natively:
            model = self.plain_model
            if model is None:
                return self.price(ranks, 0)
            return self._ask(model, ranks, True, True, 0, False)
        return self.price(ranks, 0)

    def _price_model(self, ranks: list[RankWork], draft_length: int) -> float:
        has_decode = False
        has_prefill = False
        for work in ranks:
            has_decode = has_decode or work.num_decode_requests > 0
            has_prefill = has_prefill or work.num_prefill_requests > 0
        model = self.model
        assert model is not None
        lengths = self.length_models
        if lengths is not None and has_decode:
            # The pass verifies its widest round: every decode request at that width.
            index = draft_length if draft_length > 0 else 0
            if index >= len(lengths):
                index = len(lengths) - 1
            model = lengths[index]
        native = self.model_native
        if draft_length <= 0 or not has_decode or self.prices_speculation_natively:
            return self._ask(model, ranks, True, True, 0, native)
        total = 0.0
        if has_prefill:
            total += self._ask(model, ranks, True, False, 0, native)
        total += self._ask(model, ranks, False, True, draft_length, True)
        return total

    def _ask(
        self,
        model: PassModel,
        ranks: list[RankWork],
        prefill: bool,
        decode: bool,
        draft_length: int,
        sd_round: bool,
    ) -> float:
        """``model``'s price of the ranks' prefill and/or decode work (``draft_length`` > 0:
        asked with it), scaled by ``self.scale`` if any: ``sd_round`` says whether decode-only
        work of a speculating worker is an SD round (asked with a draft length, or of a model
        that prices SD natively) rather than a plain decode step. A model with ``pure_prices``
        is asked once per distinct single-rank query (its answer is remembered, unscaled: the
        scale's per-step draws are made for every pass as before)."""
        memo = self._memo
        if memo is None or model is not self.model or len(ranks) != 1:
            price = self._model_price(model, ranks, prefill, decode, draft_length)
        else:
            work = ranks[0]
            decodes = work.num_decode_requests if decode else 0
            kv = work.sum_decode_kv_tokens if decode else 0
            prefills = work.num_prefill_requests if prefill else 0
            tokens = work.sum_prefill_tokens if prefill else 0
            key = _decode_key(decodes, kv, draft_length) if prefills == 0 and tokens == 0 else -1
            if key >= 0:
                known = memo.get(key)
                if known is None:
                    price = self._model_price(model, ranks, prefill, decode, draft_length)
                    if len(memo) >= MEMO_LIMIT:
                        memo.clear()
                    memo[key] = price
                else:
                    price = known
            else:
                wide = (decodes, kv, prefills, tokens, draft_length)
                remembered = self._wide_memo.get(wide)
                if remembered is None:
                    price = self._model_price(model, ranks, prefill, decode, draft_length)
                    if len(self._wide_memo) >= MEMO_LIMIT:
                        self._wide_memo.clear()
                    self._wide_memo[wide] = price
                else:
                    price = remembered
        scale = self.scale
        if scale is None:
            return price
        has_prefill = False
        has_decode = False
        for work in ranks:
            if prefill and work.num_prefill_requests > 0:
                has_prefill = True
            if decode and work.num_decode_requests > 0:
                has_decode = True
        if has_prefill and has_decode:
            kind = KIND_MIXED
        elif has_prefill:
            kind = KIND_PREFILL
        elif scale.speculating and sd_round:
            kind = KIND_SD_ROUND
        else:
            kind = KIND_DECODE
        return scale.apply(price, kind)

    def _model_price(
        self,
        model: PassModel,
        ranks: list[RankWork],
        prefill: bool,
        decode: bool,
        draft_length: int,
    ) -> float:
        metrics = self._metrics(ranks, prefill, decode)
        if draft_length > 0:
            return float(model.estimate_forward_pass_time_ms(metrics, draft_length=draft_length))
        return float(model.estimate_forward_pass_time_ms(metrics))

    def _metrics(self, ranks: list[RankWork], prefill: bool, decode: bool) -> list[object]:
        factory = self.metrics_factory
        assert factory is not None
        result: list[object] = []
        for work in ranks:
            past: list[int] | None = None
            extend: list[int] | None = None
            if self.wants_request_lists:
                past = []
                extend = []
                if prefill:
                    past.extend(work.prefill_past_kv)
                    extend.extend(work.prefill_extend)
                if decode:
                    past.extend(work.decode_past_kv)
                    extend.extend([1] * work.num_decode_requests)
            # Positional, in ForwardPassMetrics' order (num_decode_requests,
            # sum_decode_kv_tokens, num_prefill_requests, sum_prefill_tokens, past_kv_lengths,
            # extend_lengths): once per pass, and keyword matching was ~6 % of a compiled replay.
            result.append(
                factory(
                    work.num_decode_requests if decode else 0,
                    work.sum_decode_kv_tokens if decode else 0,
                    work.num_prefill_requests if prefill else 0,
                    work.sum_prefill_tokens if prefill else 0,
                    past,
                    extend,
                )
            )
        return result
