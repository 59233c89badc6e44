"""Price replay's passes as an engine runs its served steps, from a step table recorded apart
(an engine's grid of timed decode, prefill and SD-round steps) and a model of the engine
(docs/replay.md, "Served steps"; the engine behaviours and their sources: ``_engine_steps``).

A pass is priced as (on vLLM's CPU platform each "surface" is a line fitted to every timed step
of its kind, ``LinearStepCost``; elsewhere the table's per-point medians, interpolated,
``StepSurface``):

* decode only: the decode surface (SD rounds when SD is on) at (requests, past KV);
* prefill only: the prefill surface at (requests, prompt tokens);
* mixed (chunked prefill beside decodes, one engine step): decode part + prefill part - the
  per-step overhead (the decode line's intercept on CPU, else the table's cheapest decode
  step), which one engine step pays once
  (``vllm/v1/engine/core.py``, ``EngineCore.step``);
* vLLM CPU, with the primitive-cache model on: the step's token count M (every scheduled query
  token) goes through the oneDNN cache model; prefill is priced from the table's *cached*
  prefill steps and a step whose M is not cached adds the table's creation cost (its prefill
  steps at a new token count minus the same steps cached: the grid is the only input). Without
  cached prefill steps the creation cost is the table's first decode step at each new token
  count over the next step, less the same at a count run before (``creation_source``; the
  prefill price is then its new-token-count steps less it); without either, prefill keeps the
  new-token-count price and decode steps are never charged (the creation cost is unknown;
  ``describe`` says so). An M that vLLM's LRU
  evicted but the process created before is re-created from oneDNN's global primitive cache
  and not charged (``_engine_steps``: ``PrimitiveCache.lookup``); the cache persists over the
  steps one engine process runs (pass the same ``cache`` to the models of consecutive runs);
* SD on, a step whose decode requests drafted fewer than d tokens each (``ngram``: a request
  whose context has no match yet drafts nothing, one whose match is followed by fewer than d
  tokens drafts those), when the caller knows its drafts (``price_step(draft_tokens=...)``)
  and the table has plain decode steps: the plain decode price plus the drafted share
  (drafts / (d x requests)) of the SD round's excess over it; its token count M is requests +
  drafts (vLLM schedules each request's own drafts, ``Scheduler.schedule``);
* vLLM GPU, CUDA graphs on: the step is priced at the token count it is padded to (a decode
  batch of B requests at d+1 query tokens each at the captured size above B (d+1), as that many
  requests over the same past KV; a mixed or prefill step with its prompt tokens padded), and
  eagerly (unpadded) above the largest captured size.

* vLLM CPU, when the caller knows each prompt's chunk and the tokens of its prompt computed
  before it (``price_step(prefill_chunks=...)``; ``step_diff`` reconstructs them from the
  recorded steps, replay's passes carry only the totals): the prefill line's attention term
  (``c x tokens^2 / requests``, the causal work of requests of equal length) is replaced by
  ``c x sum(chunk^2 + 2 x chunk x earlier)`` (twice the query x visible-key pairs: vLLM's CPU
  attention reads each query tile's visible KV, the earlier chunks included:
  ``csrc/cpu/cpu_attn_impl.hpp``, ``AttentionScheduler::schedule``), which prices a chunk
  that continues a prompt and prompts of unequal length in one step;
* vLLM CPU, a wake model on (``WakeCost``, measured by a probe apart from the runs it
  prices): a step with prompt work and no decode request (nothing was running when it began:
  the engine sat idle, or every running request finished in the step before) adds the wake
  cost, what the first step after an idle spell of the engine's process costs over the same
  step run right after another (docs/replay.md, "Served steps");
* vLLM CPU, an admission model on (``WakeCost`` read from ``admit_model.json``, probed apart):
  replay's pass adds, per prefill request, what adding a request costs the engine's thread
  between steps (``LLMEngine.add_request``); ``price_step`` (a recorded step, whose time
  excludes it) does not;
* a served engine's front end (vLLM's OpenAI server: ``vllm serve``), when the recording carries
  a front-end model measured through the server (``FrontEndCost``): every step adds
  ``step_ms`` plus ``token_ms`` per request that streams output from it (decode requests and
  prefill requests; a prefill chunk that does not end its prompt streams nothing and is
  over-charged), the work the API server process and the engine core's I/O do per engine step
  on the engine's core (docs/replay.md, "vLLM's OpenAI server").

Outside the recorded box the interpolated surfaces clamp and the lines go on, counted per answer
in ``coverage``.
"""

from __future__ import annotations

from typing import Any

from aisim.fpm._engine_steps import (
    CREATED,
    RECREATED,
    LinearStepCost,
    PrimitiveCache,
    StepPrice,
    padded_graph_size,
)


class FrontEndCost:
    """A serving front end's cost on the engine's core, measured through the server apart
    from the runs it prices (plain typed values; read and checked by
    ``aisim.fpm._engine_step_files.load_frontend_cost``): ``step_ms`` per engine step,
    ``token_ms`` per request streaming output from a step, ``request_ms`` per request before the
    engine sees it (the client's clock to the engine's; applied by the caller to arrivals and
    latencies, not to steps)."""

    def __init__(self, step_ms: float, token_ms: float, request_ms: float, source: str) -> None:
        self.step_ms = step_ms
        self.token_ms = token_ms
        self.request_ms = request_ms
        self.source = source

    def step_cost_ms(self, streaming_requests: int) -> float:
        """What one engine step pays for the front end when ``streaming_requests`` requests
        stream output from it."""
        return self.step_ms + self.token_ms * streaming_requests

    def describe(self) -> dict[str, object]:
        return {
            "step_ms": self.step_ms,
            "token_ms": self.token_ms,
            "request_ms": self.request_ms,
            "source": self.source,
        }


class WakeCost:
    """The first engine step after the engine's process sat idle, measured apart from the runs
    it prices (plain typed values; read and checked by
    ``aisim.fpm._engine_step_files.load_wake_cost``): ``probe_ms``, the median of (the step
    after an idle spell - the same step right after other steps) over paired repetitions, and
    ``reference``, (requests, prompt tokens, ms) of the probe's prefill steps run right after
    others: the host's speed at the probe, which a step table prices to carry ``probe_ms``
    over to the table's minutes (``scaled``)."""

    def __init__(
        self, probe_ms: float, reference: list[tuple[int, int, float]], source: str
    ) -> None:
        self.probe_ms = probe_ms
        self.reference = reference
        self.source = source

    def scaled(self, prefill: StepPrice, coverage: dict[str, int]) -> tuple[float, float]:
        """(the wake cost at the step table's speed, the speed ratio): ``probe_ms`` times the
        median over the reference steps of the table's price / the probe's ms."""
        ratios: list[float] = []
        for count, tokens, latency in self.reference:
            if latency > 0.0:
                ratios.append(prefill.price(count, float(tokens), coverage) / latency)
        if not ratios:
            return self.probe_ms, 1.0
        ratios.sort()
        middle = len(ratios) // 2
        ratio = ratios[middle] if len(ratios) % 2 else 0.5 * (ratios[middle - 1] + ratios[middle])
        return self.probe_ms * ratio, ratio

    def describe(self) -> dict[str, object]:
        return {
            "probe_ms": self.probe_ms,
            "reference_prefill": [list(row) for row in self.reference],
            "source": self.source,
        }


class ServedStepModel:
    """A forward-pass model over an engine step table (``estimate_forward_pass_time_ms``); it
    prices SD rounds natively. Stateful: the primitive cache follows the passes in the order
    replay prices them, so build one model per replay."""

    name = "engine-step-table"
    prices_speculation_natively = True
    supports_draft_length = False

    def __init__(
        self,
        decode: StepPrice,
        prefill: StepPrice,
        *,
        draft_length: int,
        step_overhead_ms: float,
        creation_ms: float | None = None,
        creation_source: str | None = None,
        cache: PrimitiveCache | None = None,
        capture_sizes: list[int] | None = None,
        coverage: dict[str, int] | None = None,
    ) -> None:
        """``creation_ms``: the table's primitive-creation cost per step (None: unknown; then
        ``prefill`` must be the table's new-token-count prefill steps, else its cached ones).
        ``cache``: the oneDNN cache model (None: off). ``capture_sizes``: CUDA-graph sizes,
        ascending (None or empty: eager)."""
        self.decode = decode
        self.prefill = prefill
        self.draft_length = draft_length
        self.step_overhead_ms = step_overhead_ms
        self.creation_ms = creation_ms
        #: How the table gave ``creation_ms`` (None: unknown).
        self.creation_source = creation_source
        self.cache = cache
        self.capture_sizes: list[int] = list(capture_sizes or [])
        self.coverage: dict[str, int] = {} if coverage is None else coverage
        #: With SD: the table's plain decode steps (rounds that drafted nothing), or None.
        self.plain_decode_model: ServedStepModel | None = None
        #: What the model was built from (``describe``): the table's points and platform.
        self.decode_points: list[tuple[int, float, float]] = []
        self.prefill_points: list[tuple[int, float, float]] = []
        self.platform: str | None = None
        #: The serving front end's cost per step (None: priced as the table's in-process steps).
        self.frontend: FrontEndCost | None = None
        #: The first step after an idle spell (None: not modelled) and its cost at the table's
        #: speed (``WakeCost.scaled``; ms) with the speed ratio it used.
        self.wake: WakeCost | None = None
        self.wake_ms = 0.0
        self.wake_scale = 1.0
        #: What admitting a request costs the engine's thread between steps (None: not
        #: modelled), its ms at the table's speed and the speed ratio: replay's passes pay it
        #: per prefill request (``estimate_forward_pass_time_ms``), ``price_step`` does not.
        self.admit: WakeCost | None = None
        self.admit_ms = 0.0
        self.admit_scale = 1.0

    def _count(self, key: str) -> None:
        self.coverage[key] = self.coverage.get(key, 0) + 1

    def price_step(
        self,
        num_decode_requests: int,
        decode_kv_tokens: int,
        num_prefill_requests: int,
        prefill_tokens: int,
        draft_tokens: int | None = None,
        prefill_chunks: list[tuple[int, int]] | None = None,
    ) -> float:
        """One engine step's price (ms) from its composition; ``draft_tokens``: the drafts the
        step's decode requests carry in all (None: d each); ``prefill_chunks``: per prefill
        request (its tokens in this step, its prompt's tokens computed before), or None (every
        prompt starts here, all of one length)."""
        query = self.draft_length + 1
        step_tokens = num_decode_requests * query + prefill_tokens
        plain = self.plain_decode_model
        drafts = -1 if draft_tokens is None else draft_tokens
        partial = (
            plain is not None
            and self.draft_length > 0
            and 0 <= drafts < self.draft_length * num_decode_requests
        )
        if partial:
            step_tokens = num_decode_requests + drafts + prefill_tokens
        decode_count = num_decode_requests
        if self.capture_sizes:
            padded = padded_graph_size(step_tokens, self.capture_sizes)
            if padded == 0:
                self._count("graph:eager")
            elif num_prefill_requests == 0:
                decode_count = max(num_decode_requests, padded // query)
                self._count("graph:full")
            else:
                prefill_tokens += padded - step_tokens
                self._count("graph:piecewise")
        decode_ms = prefill_ms = 0.0
        if num_decode_requests > 0:
            decode_ms = self.decode.price(decode_count, decode_kv_tokens, self.coverage)
            if partial and plain is not None:
                # Linear in the drafts between a plain decode step and a whole SD round.
                plain_ms = plain.decode.price(decode_count, decode_kv_tokens, self.coverage)
                share = drafts / (self.draft_length * num_decode_requests)
                decode_ms = plain_ms + share * (decode_ms - plain_ms)
                self._count("decode:partial")
        if num_prefill_requests > 0:
            prefill_ms = self.prefill.price(num_prefill_requests, prefill_tokens, self.coverage)
            if prefill_chunks is not None and not self.capture_sizes:
                prefill_ms += self._attention_excess_ms(prefill_chunks)
        price = decode_ms + prefill_ms
        if decode_ms and prefill_ms:
            self._count("mixed")
            price -= self.step_overhead_ms
        if self.cache is not None:
            found = self.cache.lookup(step_tokens)
            if found == RECREATED:
                self._count("primitives:recreated")
            elif found == CREATED and self.creation_ms is not None:
                self._count("primitives:created")
                price += self.creation_ms
            elif found == CREATED:
                self._count("primitives:created-unpriced")
        if self.wake is not None and num_prefill_requests > 0 and num_decode_requests == 0:
            self._count("wake")
            price += self.wake_ms
        if self.frontend is not None:
            self._count("frontend")
            price += self.frontend.step_cost_ms(num_decode_requests + num_prefill_requests)
        return price

    def _attention_excess_ms(self, chunks: list[tuple[int, int]]) -> float:
        """What the prompts' attention costs beyond the line's equal-length, fresh-prompt
        term: ``c x (sum(chunk^2 + 2 x chunk x earlier) - tokens^2 / requests)`` with the
        prefill line's own ``c`` (0 when the prefill price is not a line)."""
        line = self.prefill
        if not isinstance(line, LinearStepCost) or line.kind != "prefill" or not chunks:
            return 0.0
        total = 0
        pairs = 0.0
        for chunk, earlier in chunks:
            total += chunk
            pairs += float(chunk) * chunk + 2.0 * chunk * earlier
        equal = float(total) * total / len(chunks)
        if pairs != equal:
            self._count("prefill:per-request")
        return line.coefficients[2] * (pairs - equal)

    def estimate_forward_pass_time_ms(self, metrics: Any, draft_length: int | None = None) -> float:
        if isinstance(metrics, list):
            worst = 0.0
            for rank in metrics:
                worst = max(worst, self.estimate_forward_pass_time_ms(rank))
            return worst
        prefill_requests = int(metrics.num_prefill_requests)
        price = self.price_step(
            int(metrics.num_decode_requests),
            int(metrics.sum_decode_kv_tokens),
            prefill_requests,
            int(metrics.sum_prefill_tokens),
        )
        if self.admit is not None and prefill_requests > 0:
            # Replay's pass is the step and the engine's work before it: a prompt in the pass
            # was admitted just before it (a chunk continuing a prompt is charged too).
            self._count("admit")
            price += self.admit_ms * prefill_requests
        return price

    def describe(self) -> dict[str, object]:
        """What priced the passes: points, platform, the engine behaviours modelled, and per
        answer kind how many passes (``coverage``)."""
        plain = self.plain_decode_model
        return {
            "decode_points": len(self.decode_points),
            "plain_decode_points": 0 if plain is None else len(plain.decode_points),
            "prefill_points": len(self.prefill_points),
            "platform": self.platform,
            "primitive_cache": self.cache is not None,
            "creation_ms": self.creation_ms,
            "creation_source": self.creation_source,
            "cudagraph_capture_sizes": list(self.capture_sizes) or None,
            "frontend": None if self.frontend is None else self.frontend.describe(),
            "admit": None
            if self.admit is None
            else {
                **self.admit.describe(),
                "admit_ms": self.admit_ms,
                "speed_ratio": self.admit_scale,
            },
            "wake": None
            if self.wake is None
            else {**self.wake.describe(), "wake_ms": self.wake_ms, "speed_ratio": self.wake_scale},
            "coverage": dict(sorted(self.coverage.items())),
        }
