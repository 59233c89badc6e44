"""Served steps as the engine runs them: vLLM CPU's oneDNN primitive cache (which steps pay
creation), vLLM GPU's CUDA-graph padding (which size a batch runs at), and the served-step
model's prices, every expected number derived by hand."""

from __future__ import annotations

import pytest

from aisim.fpm import ForwardPassMetrics
from aisim.fpm._engine_steps import (
    CREATED,
    HIT,
    RECREATED,
    LinearStepCost,
    PrimitiveCache,
    StepSurface,
    capture_sizes,
    creation_steps,
    fit_non_negative,
    onednn_primitive_cache,
    padded_graph_size,
)
from aisim.fpm._served_steps import ServedStepModel


def test_lru_of_three_token_counts_by_hand() -> None:
    # capacity 3: 5 new; 7 new; 5 cached (front: 5, 7); 9 new (9, 5, 7); 11 new, evicts 7
    # (11, 9, 5); 7 new, evicts 5 (7, 11, 9); 5 new again.
    assert creation_steps([5, 7, 5, 9, 11, 7, 5], capacity=3) == [
        True,
        True,
        False,
        True,
        True,
        True,
        True,
    ]


def test_a_decode_batch_is_evicted_by_32_new_token_counts_not_31() -> None:
    # vLLM keeps 32 token counts per weight shape: decode at 4 tokens, then n distinct prefill
    # step sizes, then decode at 4 again. With 31 others 4 is still the 32nd most recent.
    kept = creation_steps([4, *range(100, 131), 4])
    evicted = creation_steps([4, *range(100, 132), 4])
    assert (kept[-1], evicted[-1]) == (False, True)
    assert sum(kept) == 32 and sum(evicted) == 34


def test_a_hit_moves_the_count_to_the_front() -> None:
    cache = PrimitiveCache(2)
    assert [cache.touch(n) for n in (1, 2, 1, 3)] == [True, True, False, True]
    assert 1 in cache and 2 not in cache  # 2 was least recently used when 3 came


def test_an_evicted_count_is_re_created_from_onednn_s_cache_not_created() -> None:
    # vLLM's LRU of 2 backed by oneDNN's cache of 3 (touched only on a miss of the first):
    # 5 created (front 5 | 5); 7 created (7, 5 | 7, 5); 9 created, evicts 5 from vLLM's
    # (9, 7 | 9, 7, 5); 5 misses vLLM's but oneDNN holds it: re-created (5, 9 | 5, 9, 7);
    # 9 hit (9, 5 | oneDNN untouched); 11 created (11, 9 | 11, 5, 9: 7 evicted); 7 created.
    cache = PrimitiveCache(2, PrimitiveCache(3))
    assert [cache.lookup(n) for n in (5, 7, 9, 5, 9, 11, 7)] == [
        CREATED,
        CREATED,
        CREATED,
        RECREATED,
        HIT,
        CREATED,
        CREATED,
    ]


def test_onednn_s_cache_holds_1024_primitives_of_four_shapes() -> None:
    # 1024 / 4 = 256 token counts; vLLM's LRU 32. Count 1, then 32 others (1 evicted from
    # vLLM's, kept by oneDNN's): re-created. Count 1000, then 256 others: evicted from both.
    cache = onednn_primitive_cache()
    assert cache.capacity == 32 and cache.backing is not None
    assert cache.backing.capacity == 256
    assert [cache.lookup(n) for n in (1, *range(2, 34))].count(CREATED) == 33
    assert cache.lookup(1) == RECREATED
    for n in (1000, *range(2000, 2256)):
        cache.lookup(n)
    assert cache.lookup(1000) == CREATED
    with pytest.raises(ValueError, match="gemm_shapes"):
        onednn_primitive_cache(0)


def test_a_re_created_count_is_not_charged_and_the_caches_carry_over() -> None:
    # vLLM's LRU of 1 backed by oneDNN's of 4, creation 3 ms; prefill 150 tokens: 25 ms.
    cache = PrimitiveCache(1, PrimitiveCache(4))
    first = ServedStepModel(
        _decode_surface(),
        _prefill_surface(),
        draft_length=0,
        step_overhead_ms=10.0,
        creation_ms=3.0,
        cache=cache,
    )
    prices = [
        first.estimate_forward_pass_time_ms(metrics)
        for metrics in (
            ForwardPassMetrics(0, 0, 1, 150),  # created: 25 + 3
            ForwardPassMetrics(1, 100),  # 1 created (evicts 150 from vLLM's): 10 + 3
            ForwardPassMetrics(0, 0, 1, 150),  # re-created from oneDNN's: 25
        )
    ]
    assert prices == pytest.approx([28.0, 13.0, 25.0])
    assert first.coverage["primitives:created"] == 2
    assert first.coverage["primitives:recreated"] == 1
    # The next served run of the same engine process starts with those caches: 1 re-created.
    second = ServedStepModel(
        _decode_surface(),
        _prefill_surface(),
        draft_length=0,
        step_overhead_ms=10.0,
        creation_ms=3.0,
        cache=cache,
    )
    assert second.estimate_forward_pass_time_ms(ForwardPassMetrics(1, 100)) == pytest.approx(10.0)
    assert second.coverage == {"decode:table": 1, "primitives:recreated": 1}


def test_a_partially_drafted_step_is_priced_by_its_drafts() -> None:
    # d = 3; SD rounds: B = 1: 16 ms, 4: 28 ms (every context); plain decode 10 / 16 ms.
    sd = StepSurface([(1, 50.0, 16.0), (1, 500.0, 16.0), (4, 50.0, 28.0), (4, 500.0, 28.0)], "sd")
    model = ServedStepModel(
        sd, _prefill_surface(), draft_length=3, step_overhead_ms=10.0, cache=PrimitiveCache()
    )
    model.plain_decode_model = ServedStepModel(
        _decode_surface(), _prefill_surface(), draft_length=0, step_overhead_ms=10.0
    )
    # 4 requests, 6 drafts of 12: 16 + 6 / 12 x (28 - 16) = 22; M = 4 + 6 = 10.
    assert model.price_step(4, 400, 0, 0, draft_tokens=6) == pytest.approx(22.0)
    assert 10 in model.cache and 16 not in model.cache  # type: ignore[operator]
    # Every request drafted d: the SD round (28); no drafts given: the same.
    assert model.price_step(4, 400, 0, 0, draft_tokens=12) == pytest.approx(28.0)
    assert model.price_step(4, 400, 0, 0) == pytest.approx(28.0)
    # 1 request, 2 drafts of 3 beside a 150-token prompt chunk (mixed, one step overhead):
    # 10 + 2 / 3 x (16 - 10) = 14; + 25 - 10 = 29.
    assert model.price_step(1, 100, 1, 150, draft_tokens=2) == pytest.approx(29.0)
    assert model.coverage["decode:partial"] == 2
    # Without plain decode steps in the table (draft_model) a step is an SD round.
    model.plain_decode_model = None
    assert model.price_step(4, 400, 0, 0, draft_tokens=6) == pytest.approx(28.0)


def test_default_capture_sizes_as_vllm_computes_them() -> None:
    # max_num_seqs 8: the largest is min(8 x 1 x 2, 512, 512) = 16 -> 1, 2, 4, 8, 16.
    assert capture_sizes(8, 512) == [1, 2, 4, 8, 16]
    # d = 3 (4 query tokens per request): min(8 x 4 x 2, 512, 512) = 64.
    assert capture_sizes(8, 512, 4) == [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]
    # 256 sequences: 512; 1, 2, 4, 8..248 by 8 (31 sizes), 256..512 by 16 (17 sizes).
    sizes = capture_sizes(256, 8192)
    assert len(sizes) == 3 + 31 + 17 and sizes[-1] == 512 and sizes[34] == 256
    # The token budget caps it: 6 tokens -> 1, 2, 4.
    assert capture_sizes(8, 6) == [1, 2, 4]


def test_padding_to_the_captured_size_above() -> None:
    sizes = [1, 2, 4, 8, 16]
    assert [padded_graph_size(n, sizes) for n in (1, 3, 5, 8, 9, 16)] == [1, 4, 8, 8, 16, 16]
    assert padded_graph_size(17, sizes) == 0  # above the largest: eager


def _decode_surface() -> StepSurface:
    # Decode steps cost the same at every context here: B = 1: 10 ms, 4: 16 ms, 8: 28 ms.
    points = [
        (b, context, ms) for b, ms in ((1, 10.0), (4, 16.0), (8, 28.0)) for context in (50.0, 500.0)
    ]
    return StepSurface(points, "decode")


def _prefill_surface() -> StepSurface:
    return StepSurface([(1, 100.0, 20.0), (1, 200.0, 30.0)], "prefill")


def test_a_batch_of_five_is_priced_as_the_captured_size_above_it() -> None:
    eager = ServedStepModel(
        _decode_surface(), _prefill_surface(), draft_length=0, step_overhead_ms=10.0
    )
    graphs = ServedStepModel(
        _decode_surface(),
        _prefill_surface(),
        draft_length=0,
        step_overhead_ms=10.0,
        capture_sizes=[1, 2, 4, 8, 16],
    )
    five = ForwardPassMetrics(5, 5 * 100)
    # Eager: a quarter of the way from B = 4 (16) to B = 8 (28) -> 19. Graphs: B = 8 -> 28.
    assert eager.estimate_forward_pass_time_ms(five) == pytest.approx(19.0)
    assert graphs.estimate_forward_pass_time_ms(five) == pytest.approx(28.0)
    assert graphs.coverage["graph:full"] == 1
    # SD at d = 1 (2 query tokens per request), sizes 1, 2, 4, 8: 2 requests = 4 tokens, a
    # captured size: priced at B = 2, a third of the way from 10 to 16 -> 12.
    sd = ServedStepModel(
        _decode_surface(),
        _prefill_surface(),
        draft_length=1,
        step_overhead_ms=10.0,
        capture_sizes=[1, 2, 4, 8],
    )
    assert sd.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 200)) == pytest.approx(12.0)
    # 3 requests = 6 tokens -> captured 8 = 4 requests: 16 (eager: 10 + 2/3 x 6 = 14).
    assert sd.estimate_forward_pass_time_ms(ForwardPassMetrics(3, 300)) == pytest.approx(16.0)


def test_above_the_largest_capture_the_step_runs_eagerly() -> None:
    model = ServedStepModel(
        _decode_surface(),
        _prefill_surface(),
        draft_length=0,
        step_overhead_ms=10.0,
        capture_sizes=[1, 2, 4],
    )
    assert model.estimate_forward_pass_time_ms(ForwardPassMetrics(5, 500)) == pytest.approx(19.0)
    assert model.coverage["graph:eager"] == 1


def test_a_mixed_step_pads_its_prompt_tokens() -> None:
    model = ServedStepModel(
        _decode_surface(),
        _prefill_surface(),
        draft_length=0,
        step_overhead_ms=10.0,
        capture_sizes=[1, 2, 4, 8, 128, 256],
    )
    # 1 decode + 119 prompt tokens = 120 -> 128: the prompt part is priced at 127 tokens:
    # 20 + 27/100 x 10 = 22.7; + decode 10 - overhead 10 = 22.7.
    mixed = ForwardPassMetrics(1, 100, 1, 119)
    assert model.estimate_forward_pass_time_ms(mixed) == pytest.approx(22.7)


def test_primitive_creation_is_charged_to_the_steps_whose_token_count_is_new() -> None:
    model = ServedStepModel(
        _decode_surface(),
        _prefill_surface(),  # the table's cached prefill steps
        draft_length=0,
        step_overhead_ms=10.0,
        creation_ms=3.0,
        cache=PrimitiveCache(),
    )
    prices = [
        model.estimate_forward_pass_time_ms(metrics)
        for metrics in (
            ForwardPassMetrics(0, 0, 1, 150),  # new 150: 25 + 3
            ForwardPassMetrics(0, 0, 1, 150),  # cached: 25
            ForwardPassMetrics(1, 100),  # new 1: 10 + 3
            ForwardPassMetrics(1, 120),  # cached: 10
            ForwardPassMetrics(1, 100, 1, 149),  # 1 + 149 = 150, cached: 10 + 24.9 - 10
        )
    ]
    assert prices == pytest.approx([28.0, 25.0, 13.0, 10.0, 24.9])
    assert model.coverage["primitives:created"] == 2


def test_without_a_creation_cost_nothing_is_charged_but_the_misses_are_counted() -> None:
    model = ServedStepModel(
        _decode_surface(),
        _prefill_surface(),
        draft_length=0,
        step_overhead_ms=10.0,
        cache=PrimitiveCache(),
    )
    assert model.estimate_forward_pass_time_ms(ForwardPassMetrics(0, 0, 1, 150)) == pytest.approx(
        25.0
    )
    assert model.coverage["primitives:created-unpriced"] == 1


def test_a_line_through_exact_samples_is_recovered() -> None:
    # Prefill 5 + 0.5 x tokens + 0.001 x tokens^2 / requests, by hand at four points.
    samples = [(1, 100.0, 65.0), (1, 300.0, 245.0), (2, 200.0, 125.0), (4, 400.0, 245.0)]
    line = LinearStepCost(samples, "prefill", "prefill")
    assert line.coefficients == pytest.approx([5.0, 0.5, 0.001])
    assert line.intercept_ms == pytest.approx(5.0)
    coverage: dict[str, int] = {}
    # 2 requests x 150 tokens: 5 + 150 + 0.001 x 300^2 / 2 = 200.
    assert line.price(2, 300.0, coverage) == pytest.approx(200.0)
    assert coverage == {"prefill:fit": 1}


def test_the_fit_is_the_expected_step_not_the_typical_one() -> None:
    # Three steps of one shape, 10, 10 and 13 ms: the price is their mean, 11 (replay adds
    # steps up), not the median 10 nor the target-weighted 10.69 of a first pass.
    line = LinearStepCost([(1, 100.0, 10.0), (1, 100.0, 10.0), (1, 100.0, 13.0)], "d", "decode")
    assert line.price(1, 100.0, {}) == pytest.approx(11.0)
    assert line.coefficients == pytest.approx([11.0, 0.0, 0.0])


def test_no_coefficient_of_the_fit_is_negative() -> None:
    # One request at growing context, slower at short context: the unconstrained line would
    # have a negative past-KV term; the fit keeps the best line with every term >= 0, here the
    # constant 20 (their mean; B = 1 everywhere, so the B term would tie and comes second).
    samples = [(1, 100.0, 21.0), (1, 200.0, 20.0), (1, 300.0, 19.0)]
    assert fit_non_negative(
        [[1.0, 1.0, tokens] for _, tokens, _ in samples], [ms for *_, ms in samples]
    ) == pytest.approx([20.0, 0.0, 0.0])


def test_a_linear_step_cost_needs_samples_and_a_kind() -> None:
    with pytest.raises(ValueError, match="no samples"):
        LinearStepCost([], "decode", "decode")
    with pytest.raises(ValueError, match="kind"):
        LinearStepCost([(1, 1.0, 1.0)], "x", "mixed")


def _attention_line() -> LinearStepCost:
    """5 + 0.01 x tokens + 0.001 x tokens^2 / requests, fitted to four steps exactly on it."""
    return LinearStepCost(
        [(1, 100.0, 16.0), (1, 200.0, 47.0), (2, 200.0, 27.0), (1, 300.0, 98.0)],
        "prefill",
        "prefill",
    )


def test_a_continued_chunk_and_unequal_prompts_pay_their_attention_by_hand() -> None:
    model = ServedStepModel(
        _attention_line(), _attention_line(), draft_length=0, step_overhead_ms=0
    )
    # 188 tokens after 512 of the same prompt: the line at (1, 188) = 5 + 1.88 + 35.344, plus
    # 0.001 x 2 x 188 x 512 = 192.512 (the query x visible-key pairs of the earlier chunk).
    assert model.price_step(0, 0, 1, 188) == pytest.approx(42.224)
    assert model.price_step(0, 0, 1, 188, prefill_chunks=[(188, 512)]) == pytest.approx(234.736)
    # Prompts of 32 and 224: the line at (2, 256) = 5 + 2.56 + 32.768 assumes 2 x 128^2 / 2;
    # the step holds 0.001 x (32^2 + 224^2 - 256^2 / 2) = 18.432 more.
    assert model.price_step(0, 0, 2, 256) == pytest.approx(40.328)
    unequal = model.price_step(0, 0, 2, 256, prefill_chunks=[(32, 0), (224, 0)])
    assert unequal == pytest.approx(58.76)
    # Fresh prompts of equal length: the line's own term, nothing added or counted.
    assert model.price_step(0, 0, 2, 256, prefill_chunks=[(128, 0), (128, 0)]) == pytest.approx(
        40.328
    )
    assert model.coverage["prefill:per-request"] == 2
