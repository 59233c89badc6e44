"""Probes: the SD methods and modes the engines ship (docs/speculation.md, "Engine methods and
modes") across generated configs.

Guarantees: every generated block of a new method resolves deterministically; acceptance inputs
(profiles, synthetic settings) never enter the cost identity; geometry bounds (w = K + 1 for
chains, accepted <= w - 1, the acceptance depth is the accepted maximum, table lengths <= K,
adaptive candidates <= the depth); near-misses are resolved or an aisim error; a parallel
drafting round costs at least the plain step and at most the sequential round, with one draft
pass; the adaptive policy's steps stay among its candidates; a suffix pass priced at the
width it drafted is never below the plain pass widened to that width."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from strategies import mapping_with_mutation

from aisim.config import resolve_speculation
from aisim.config._estimator import best_available
from aisim.errors import AisimError
from aisim.fpm import ForwardPassMetrics
from aisim.replay._sd_policy import AdaptivePolicy, AdaptiveTier
from aisim.speculation._profiles import PROFILES

MEDUSA = {"num_heads": 4, "num_hidden_layers": 1, "hidden_size": 4096, "vocab_size": 32000}
MLP = {"n_predict": 2, "emb_dim": 4096, "inner_dim": 3072, "vocab_size": 128256}
EAGLE_DRAFT = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 1,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
}


@st.composite
def method_blocks(draw: st.DrawFn) -> dict[str, Any]:
    """A valid block of a new method or mode (acceptance optional)."""
    depth = draw(st.integers(1, 6))
    choice = draw(
        st.sampled_from(
            ["suffix", "medusa", "mlp", "parallel", "sglang_tree", "dynamic", "adaptive"]
        )
    )
    block: dict[str, Any]
    if choice == "suffix":
        block = {"kind": "suffix", "params": {"num_speculative_tokens": depth}}
    elif choice == "medusa":
        block = {"kind": "medusa", "draft_config": {**MEDUSA, "num_heads": depth}}
    elif choice == "mlp":
        predicted = draw(st.integers(1, 3))
        count = draw(st.sampled_from([predicted, predicted * 2, max(1, predicted - 1)]))
        block = {
            "kind": "mlp_speculator",
            "params": {"num_speculative_tokens": count},
            "draft_config": {**MLP, "n_predict": predicted},
        }
        depth = count
    elif choice == "parallel":
        block = {
            "kind": "draft_model",
            "params": {"num_speculative_tokens": depth, "parallel_drafting": True},
            "draft_model_path": "Qwen/Qwen3-0.6B",
        }
    elif choice == "sglang_tree":
        topk = draw(st.integers(1, 4))
        candidates = topk + (depth - 1) * topk * topk
        params: dict[str, Any] = {"speculative_num_steps": depth, "speculative_eagle_topk": topk}
        if topk > 1:
            params["speculative_num_draft_tokens"] = draw(st.integers(2, candidates + 1))
        block = {"kind": "eagle3", "params": params, "draft_config": EAGLE_DRAFT}
    elif choice == "dynamic":
        cuts = sorted(draw(st.sets(st.integers(2, 200), max_size=4)))
        starts = [1, *cuts]
        ends = [start - 1 for start in cuts] + [draw(st.integers(starts[-1], 400))]
        table = [[lo, hi, draw(st.integers(0, 8))] for lo, hi in zip(starts, ends, strict=True)]
        block = {
            "kind": "mtp",
            "params": {"depth": depth},
            "num_speculative_tokens_per_batch_size": table,
        }
    else:
        steps = draw(st.lists(st.integers(0, depth), min_size=1, max_size=4))
        block = {
            "kind": "mtp",
            "params": {"depth": depth},
            "speculative_adaptive": True,
            "speculative_adaptive_config": {"1": {"candidate_steps": steps}},
        }
    return block


def _acceptance(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    rates = st.lists(st.floats(0, 1), min_size=depth, max_size=depth).map(
        lambda values: sorted(values, reverse=True)
    )
    return st.one_of(
        st.just({}),
        rates.map(
            lambda values: {
                "rejection_sample_method": "synthetic",
                "synthetic_acceptance_rates": values,
            }
        ),
        st.floats(1.0, depth + 1.0).map(
            lambda length: {
                "rejection_sample_method": "synthetic",
                "synthetic_acceptance_length": length,
            }
        ),
        st.tuples(st.floats(0.01, 12.0), st.sampled_from(["match-expected", "multinomial"])).map(
            lambda pair: {"simulate_acc_len": pair[0], "simulate_acc_method": pair[1]}
        ),
    )


@given(method_blocks(), st.data())
def test_probe_new_methods_resolve_with_bounds_and_identity(
    block: dict[str, Any], data: st.DataObject
) -> None:
    plain = resolve_speculation(block)
    depth = plain.max_accepted_draft_tokens
    extra = data.draw(_acceptance(depth))
    resolved = resolve_speculation({**block, **extra})
    again = resolve_speculation({**block, **extra})
    assert resolved.to_dict() == again.to_dict()
    assert resolved.cost_identity == plain.cost_identity
    if not resolved.is_tree:
        assert resolved.verify_width == resolved.num_draft_tokens + 1
    assert resolved.max_accepted_draft_tokens <= resolved.verify_width - 1
    if resolved.acceptance is not None:
        rates = resolved.acceptance.unconditional_rates
        assert len(rates) == depth
        assert all(0.0 <= rate <= 1.0 for rate in rates)
        assert all(later <= earlier for earlier, later in zip(rates, rates[1:], strict=False))
        assert 1.0 <= resolved.acceptance.acceptance_length <= depth + 1
    schedule = resolved.draft_length_schedule
    if schedule is not None:
        assert schedule[0][0] == 1
        assert all(0 <= entry[2] <= resolved.num_draft_tokens for entry in schedule)
    adaptive = resolved.adaptive
    if adaptive is not None:
        assert all(max(tier["candidate_steps"]) <= depth for tier in adaptive["tiers"])


@given(method_blocks().flatmap(mapping_with_mutation))
def test_probe_new_method_near_misses_are_resolved_or_an_aisim_error(
    block: dict[str, Any],
) -> None:
    try:
        resolved = resolve_speculation(block)
    except AisimError:
        return
    assert len(resolved.cost_identity) == 64


@given(st.sampled_from([entry["name"] for entry in PROFILES]), st.integers(1, 8))
def test_probe_profiles_resolve_or_refuse_with_one_line(name: str, depth: int) -> None:
    entry = next(item for item in PROFILES if item["name"] == name)
    kind = entry["method"]
    block: dict[str, Any] = {"kind": kind, "acceptance_profile": name}
    if kind == "mtp":
        block["params"] = {"depth": depth}
    elif kind in ("ngram", "draft_model"):
        block["params"] = {"num_speculative_tokens": depth}
        if kind == "draft_model":
            block["draft_model_path"] = "d"
    elif kind == "medusa":
        block["draft_config"] = {**MEDUSA, "num_heads": depth}
    elif kind == "eagle3":
        block["params"] = {"num_speculative_tokens": depth}
        block["draft_config"] = EAGLE_DRAFT
    else:
        block["params"] = {"num_draft_tokens": depth}
        block["draft_config"] = {**EAGLE_DRAFT, "model_type": "qwen3"}
    try:
        resolved = resolve_speculation(block)
    except AisimError as exc:
        assert "\n" not in str(exc)
        return
    assert resolved.acceptance is not None and resolved.acceptance.depth == depth


@given(st.integers(1, 5), st.integers(1, 64), st.integers(0, 2**18))
def test_probe_parallel_drafting_is_one_pass_between_plain_and_sequential(
    drafts: int, batch: int, kv: int
) -> None:
    base = {"model": "Qwen/Qwen3-8B", "hardware": "h100_sxm", "estimator": "roofline"}
    scheme = {
        "kind": "draft_model",
        "params": {"num_speculative_tokens": drafts},
        "draft_model_path": "Qwen/Qwen3-0.6B",
    }
    parallel_scheme = {**scheme, "params": {**scheme["params"], "parallel_drafting": True}}
    metrics = [ForwardPassMetrics(batch, kv)]
    plain = best_available(base).estimate_forward_pass_time_ms(metrics)
    sequential = best_available({**base, "speculation": scheme})
    parallel = best_available({**base, "speculation": parallel_scheme})
    detailed = parallel.estimate_forward_pass_detailed(metrics).to_dict()
    assert detailed["diagnostics"]["details"]["draft_steps"] == 1.0
    # The verify pass is the widened plain pass, the same with either drafting.
    sequential_details = sequential.estimate_forward_pass_detailed(metrics).to_dict()
    assert (
        detailed["diagnostics"]["details"]["target_ms"]
        == sequential_details["diagnostics"]["details"]["target_ms"]
    )
    round_ms = parallel.estimate_forward_pass_time_ms(metrics)
    assert plain <= round_ms <= sequential.estimate_forward_pass_time_ms(metrics)


@given(
    st.lists(st.integers(0, 6), min_size=1, max_size=4),
    st.integers(0, 6),
    st.lists(st.lists(st.integers(0, 6), min_size=1, max_size=8), max_size=60),
)
def test_probe_adaptive_steps_stay_among_candidates(
    candidates: list[int], initial: int, verifies: list[list[int]]
) -> None:
    tier = AdaptiveTier(1, candidates, 0.3, 2, 3, -0.25, 0.0, 0.5)
    policy = AdaptivePolicy(initial, [tier])
    allowed = set(candidates)
    assert policy.steps_for_batch(1) in allowed
    for accepted in verifies:
        policy.on_verify_complete(accepted, len(accepted))
        assert policy.steps_for_batch(len(accepted)) in allowed


@given(
    st.sampled_from(["medusa", "mlp"]),
    st.integers(1, 6),
    st.integers(1, 256),
    st.integers(0, 2**18),
)
def test_probe_heads_round_is_the_widened_pass_plus_one_heads_pass(
    choice: str, drafts: int, batch: int, kv: int
) -> None:
    base = {"model": "Qwen/Qwen3-8B", "hardware": "h100_sxm", "estimator": "roofline"}
    if choice == "medusa":
        scheme: dict[str, Any] = {"kind": "medusa", "draft_config": {**MEDUSA, "num_heads": drafts}}
    else:
        scheme = {"kind": "mlp_speculator", "draft_config": {**MLP, "n_predict": drafts}}
    widened = {"kind": "ngram", "params": {"num_speculative_tokens": drafts}}
    metrics = [ForwardPassMetrics(batch, kv)]
    heads = best_available({**base, "speculation": scheme})
    detailed = heads.estimate_forward_pass_detailed(metrics).to_dict()
    details = detailed["diagnostics"]["details"]
    plain = best_available({**base, "speculation": widened}).estimate_forward_pass_detailed(metrics)
    # vLLM verifies in one pass: the verify part is the widened plain pass, and the round
    # never costs less than it; the heads run as one draft pass.
    assert details["target_ms"] == plain.to_dict()["diagnostics"]["details"]["target_ms"]
    assert details["draft_steps"] == 1.0
    assert details["draft_ms"] > 0.0
    assert detailed["latency_ms"] >= details["target_ms"] + details["sampling_ms"]


@given(
    st.integers(1, 8),
    st.data(),
    st.integers(1, 256),
    st.integers(0, 2**18),
    st.floats(0.0, 1000.0),
)
def test_probe_suffix_pass_at_its_drafted_width_is_never_below_the_widened_pass(
    k: int, data: st.DataObject, batch: int, kv: int, lookup: float
) -> None:
    # Replay prices a suffix pass at its widest round (drafts 0..K, RooflineModel.
    # at_draft_count): the verify part is the plain pass widened to drafts + 1 tokens per
    # request (an n-gram round of that many drafts verifies the same), the draft part the
    # lookup of every request, and the pass never costs less than the widened plain pass.
    drafts = data.draw(st.integers(0, k))
    base = {"model": "Qwen/Qwen3-8B", "hardware": "h100_sxm", "estimator": "roofline"}
    scheme = {
        "kind": "suffix",
        "params": {"num_speculative_tokens": k},
        "suffix_lookup_us_per_request": lookup,
    }
    metrics = [ForwardPassMetrics(batch, kv)]
    narrowed = best_available({**base, "speculation": scheme}).at_draft_count(drafts)
    assert narrowed is not None
    detailed = narrowed.estimate_forward_pass_detailed(metrics).to_dict()
    details = detailed["diagnostics"]["details"]
    assert details["verify_width"] == float(drafts + 1)
    assert math.isclose(details["draft_ms"], batch * lookup / 1000.0, rel_tol=1e-12, abs_tol=1e-15)
    if drafts == 0:
        plain = best_available(base).estimate_forward_pass_time_ms(metrics)
        widened_ms = float(plain)
    else:
        ngram = {"kind": "ngram", "params": {"num_speculative_tokens": drafts}}
        widened = best_available({**base, "speculation": ngram}).estimate_forward_pass_detailed(
            metrics
        )
        widened_details = widened.to_dict()["diagnostics"]["details"]
        assert details["target_ms"] == widened_details["target_ms"]
        widened_ms = float(widened_details["target_ms"]) + float(widened_details["sampling_ms"])
    # The pass is the widened pass plus the lookups (1e-12: the parts are summed in seconds,
    # then scaled to ms).
    total = widened_ms + float(details["draft_ms"])
    assert math.isclose(detailed["latency_ms"], total, rel_tol=1e-12)
    assert detailed["latency_ms"] >= widened_ms * (1.0 - 1e-12)
