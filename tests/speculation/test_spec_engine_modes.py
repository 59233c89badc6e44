"""The SD methods and modes the engines ship (docs/speculation.md, "Engine methods and modes"):
resolution, config names as the engines spell them, and the one-line errors. Every expected
value is derived by hand from the engine rule cited in the docs."""

from __future__ import annotations

from typing import Any

import pytest

from aisim import ConfigError, resolve_speculation
from aisim.config._speculation_modes import draft_length_lookup

MEDUSA = {"num_heads": 4, "num_hidden_layers": 1, "hidden_size": 4096, "vocab_size": 32000}
MLP = {"n_predict": 3, "emb_dim": 4096, "inner_dim": 3072, "vocab_size": 128256}


def test_suffix_defaults_follow_vllm() -> None:
    # _validate_suffix_decoding: num_speculative_tokens defaults to max_tree_depth (24).
    resolved = resolve_speculation({"kind": "suffix"}, backend="vllm")
    assert resolved.params["num_speculative_tokens"] == 24
    assert (resolved.num_draft_tokens, resolved.verify_width) == (24, 25)
    assert resolved.draft_model is None and resolved.draft_identity is None


def test_suffix_is_vllm_only_and_takes_no_draft() -> None:
    with pytest.raises(ConfigError, match="suffix is supported on vllm only"):
        resolve_speculation({"kind": "suffix"}, backend="sglang")
    with pytest.raises(ConfigError, match="suffix-tree lookups"):
        resolve_speculation({"kind": "suffix", "draft_model_path": "x"})


def test_medusa_drafts_one_token_per_head() -> None:
    resolved = resolve_speculation({"kind": "medusa", "draft_config": MEDUSA})
    assert resolved.num_draft_tokens == 4 and resolved.verify_width == 5
    assert resolved.draft_identity is not None and resolved.draft_identity.startswith("geometry:")
    with pytest.raises(ConfigError, match="one token per head"):
        resolve_speculation(
            {"kind": "medusa", "params": {"num_speculative_tokens": 2}, "draft_config": MEDUSA}
        )
    with pytest.raises(ConfigError, match=r"draft_config: kind medusa needs the heads'"):
        resolve_speculation({"kind": "medusa"})


def test_mlp_speculator_n_predict_rule() -> None:
    assert resolve_speculation({"kind": "mlp_speculator", "draft_config": MLP}).verify_width == 4
    six = {"kind": "mlp_speculator", "params": {"num_speculative_tokens": 6}, "draft_config": MLP}
    assert resolve_speculation(six).num_draft_tokens == 6
    two = {"kind": "mlp_speculator", "params": {"num_speculative_tokens": 2}, "draft_config": MLP}
    assert resolve_speculation(two).num_draft_tokens == 2
    with pytest.raises(ConfigError, match="multiple of the draft's n_predict"):
        resolve_speculation({**six, "params": {"num_speculative_tokens": 5}})


def test_parallel_drafting_enters_identity_only_when_set() -> None:
    plain = {
        "kind": "draft_model",
        "params": {"num_speculative_tokens": 4},
        "draft_model_path": "Qwen/Qwen3-0.6B",
    }
    parallel = {**plain, "params": {"num_speculative_tokens": 4, "parallel_drafting": True}}
    off = {**plain, "params": {"num_speculative_tokens": 4, "parallel_drafting": False}}
    assert resolve_speculation(off).cost_identity == resolve_speculation(plain).cost_identity
    assert resolve_speculation(parallel).cost_identity != resolve_speculation(plain).cost_identity
    assert resolve_speculation(parallel).params["parallel_drafting"] is True
    # draft_model runs on vLLM only; the eagle3 gate is in the goldens (eagle3/parallel-sglang).
    with pytest.raises(ConfigError, match="supported on vllm only"):
        resolve_speculation(parallel, backend="sglang")


def test_sglang_eagle_spelling(eagle3_draft: dict[str, Any]) -> None:
    chain = resolve_speculation(
        {"kind": "eagle3", "params": {"speculative_num_steps": 3}, "draft_config": eagle3_draft}
    )
    same = resolve_speculation(
        {"kind": "eagle3", "params": {"num_speculative_tokens": 3}, "draft_config": eagle3_draft}
    )
    assert chain.cost_identity == same.cost_identity
    tree = resolve_speculation(
        {
            "kind": "eagle3",
            "params": {
                "speculative_num_steps": 5,
                "speculative_eagle_topk": 8,
                "speculative_num_draft_tokens": 64,
            },
            "draft_config": eagle3_draft,
        }
    )
    # 5 forwards of 8 tokens; 64 verified; at most 5 accepted.
    assert tree.tree_shape == (8, 8, 8, 8, 8)
    assert (tree.num_draft_tokens, tree.verify_width, tree.max_accepted_draft_tokens) == (40, 64, 5)
    # The candidates: 8 + 4 * 64 = 264, so 266 is one too many.
    with pytest.raises(ConfigError, match=r"2\.\.265"):
        resolve_speculation(
            {
                "kind": "eagle3",
                "params": {
                    "speculative_num_steps": 5,
                    "speculative_eagle_topk": 8,
                    "speculative_num_draft_tokens": 266,
                },
                "draft_config": eagle3_draft,
            }
        )
    with pytest.raises(ConfigError, match="topk 1 SGLang verifies the chain"):
        resolve_speculation(
            {
                "kind": "eagle3",
                "params": {"speculative_num_steps": 3, "speculative_num_draft_tokens": 6},
                "draft_config": eagle3_draft,
            }
        )


def test_fr_spec_token_map_sets_the_draft_vocabulary(small_draft: dict[str, Any]) -> None:
    draft = {**small_draft, "model_type": "llama", "hidden_size": 4096}
    block = {
        "kind": "eagle3",
        "params": {"speculative_num_steps": 2, "speculative_token_map_size": 32768},
        "draft_config": draft,
    }
    resolved = resolve_speculation(block, backend="sglang")
    assert resolved.draft_vocab_size == 32768
    without = {**block, "params": {"speculative_num_steps": 2}}
    assert resolve_speculation(without).cost_identity != resolved.cost_identity
    with pytest.raises(ConfigError, match="FR-Spec token maps are SGLang's"):
        resolve_speculation(block, backend="vllm")


def test_dynamic_length_table_normalized_and_expanded() -> None:
    resolved = resolve_speculation(
        {
            "kind": "mtp",
            "params": {"depth": 3},
            "num_speculative_tokens_per_batch_size": [[17, 64, 0], [1, 4, 5], [9, 16, 1]],
        },
        backend="vllm",
    )
    # Sorted; K = 5 capped at num_speculative_tokens 3.
    assert resolved.draft_length_schedule == [[1, 4, 3], [9, 16, 1], [17, 64, 0]]
    lookup = draft_length_lookup([[1, 4, 3], [9, 16, 1], [17, 64, 0]], 80, 3)
    # 5..8 carry the previous range's K forward; past 64 the last K holds.
    assert lookup[1:] == [3] * 8 + [1] * 8 + [0] * 48 + [0] * 16
    assert draft_length_lookup([[1, 2, 2], [5, 6, 1]], 8, 3)[1:] == [2, 2, 2, 2, 1, 1, 1, 1]


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        ([[1, 8, 3], [8, 16, 1]], "overlap at 8"),
        ([[2, 8, 3]], "must start at 1"),
        ([[1, 8, 1, 4096, 3]], "does not model"),
        ([[4, 2, 3]], "above its end"),
        ([], "non-empty list"),
        ([[1, 8, -1]], r"\[0\]\[2\]"),
    ],
)
def test_dynamic_length_errors(table: object, fragment: str) -> None:
    block = {"kind": "mtp", "params": {"depth": 3}, "num_speculative_tokens_per_batch_size": table}
    with pytest.raises(ConfigError, match=fragment) as caught:
        resolve_speculation(block)
    assert "num_speculative_tokens_per_batch_size" in str(caught.value)


def test_adaptive_default_config_is_sglangs() -> None:
    resolved = resolve_speculation(
        {"kind": "mtp", "params": {"depth": 7}, "speculative_adaptive": True}, backend="sglang"
    )
    adaptive = resolved.adaptive
    assert adaptive is not None and adaptive["initial_steps"] == 7
    assert [tier["batch_size"] for tier in adaptive["tiers"]] == [1, 8, 32, 64]
    assert adaptive["tiers"][0]["candidate_steps"] == [1, 3, 5, 7]
    assert adaptive["tiers"][0]["down_hysteresis"] == -0.25
    assert adaptive["tiers"][1]["down_hysteresis"] == 0.0
    # AdaptiveStepSlot.__init__ defaults.
    assert (adaptive["tiers"][0]["ema_alpha"], adaptive["tiers"][0]["update_interval"]) == (0.2, 5)
    assert adaptive["tiers"][0]["warmup_batches"] == 10
    # The typed policy replay reads is the same policy, field for field.
    policy = resolved.adaptive_policy
    assert policy is not None and policy.to_dict() == adaptive
    assert [tier.batch_size for tier in policy.tiers] == [1, 8, 32, 64]
    assert policy.tiers[0].candidate_steps == [1, 3, 5, 7]
    assert (policy.tiers[1].down_hysteresis, policy.cuda_graph_bs) == (0.0, None)


def test_adaptive_policy_sorts_its_tiers_and_graph_sizes() -> None:
    # SGLang keys tiers by batch size (the router takes the largest key <= the padded batch)
    # and set_cuda_graph_bs keeps the captured sizes sorted: given out of order, both are sorted.
    resolved = resolve_speculation(
        {
            "kind": "mtp",
            "params": {"depth": 3},
            "speculative_adaptive": True,
            "speculative_adaptive_config": {
                "16": {"candidate_steps": [0, 1]},
                "1": {"candidate_steps": [3, 1]},
            },
            "cuda_graph_bs": [16, 1, 8, 8],
        },
        backend="sglang",
    )
    policy = resolved.adaptive_policy
    assert policy is not None
    assert [(tier.batch_size, tier.candidate_steps) for tier in policy.tiers] == [
        (1, [1, 3]),
        (16, [0, 1]),
    ]
    assert policy.cuda_graph_bs == [1, 8, 16]
    assert resolved.to_dict()["adaptive"]["cuda_graph_bs"] == [1, 8, 16]


def test_adaptive_top_level_keys_apply_to_every_tier() -> None:
    resolved = resolve_speculation(
        {
            "kind": "mtp",
            "params": {"depth": 3},
            "speculative_adaptive": True,
            "speculative_adaptive_config": {
                "ema_alpha": 0.5,
                "1": {"candidate_steps": [3, 1, 3]},
                "16": {"candidate_steps": [0, 1], "ema_alpha": 0.1},
            },
        }
    )
    tiers = resolved.adaptive["tiers"]  # type: ignore[index]
    assert tiers[0]["candidate_steps"] == [1, 3] and tiers[0]["ema_alpha"] == 0.5
    assert tiers[1]["ema_alpha"] == 0.1


@pytest.mark.parametrize(
    ("extra", "backend", "fragment"),
    [
        ({}, "vllm", "adaptive speculation is SGLang's"),
        ({"speculative_adaptive_config": {"strategy": "throughput_aware"}}, None, "not modelled"),
        ({"speculative_adaptive_config": {"ema": 1}}, None, "unknown key"),
        ({"speculative_adaptive_config": {"1": {"candidate_steps": []}}}, None, "non-empty"),
        ({"speculative_adaptive_config": {"1": {"candidate_steps": [9]}}}, None, "deeper"),
    ],
)
def test_adaptive_errors(extra: dict[str, Any], backend: str | None, fragment: str) -> None:
    block = {"kind": "mtp", "params": {"depth": 3}, "speculative_adaptive": True, **extra}
    with pytest.raises(ConfigError, match=fragment):
        resolve_speculation(block, backend=backend)


def test_unmodelled_engine_options_say_so() -> None:
    with pytest.raises(ConfigError, match="not modelled by aisim") as caught:
        resolve_speculation(
            {"kind": "mtp", "params": {"depth": 1}, "rejection_sample_method": "block"}
        )
    assert "\n" not in str(caught.value)
    with pytest.raises(ConfigError, match="adaptive verification .* is not modelled"):
        resolve_speculation(
            {"kind": "mtp", "params": {"depth": 1}, "enable_adaptive_verification": True}
        )
    # An option aisim does not know at all is the usual unknown-field error.
    with pytest.raises(ConfigError, match="unknown field"):
        resolve_speculation({"kind": "mtp", "params": {"depth": 1}, "speculative_algorithm": "x"})


def test_fr_spec_map_shrinks_the_draft_lm_head_in_the_roofline(
    eagle3_draft: dict[str, Any],
) -> None:
    from aisim.config._estimator import best_available
    from aisim.fpm import ForwardPassMetrics

    base = {
        "model": "meta-llama/Meta-Llama-3.1-8B",
        "hardware": "h100_sxm",
        "estimator": "roofline",
    }
    draft = {**eagle3_draft, "draft_vocab_size": 128256}
    full = {"kind": "eagle3", "params": {"speculative_num_steps": 3}, "draft_config": draft}
    mapped = {**full, "params": {"speculative_num_steps": 3, "speculative_token_map_size": 32768}}
    metrics = [ForwardPassMetrics(16, 16 * 2048)]

    def draft_ms(scheme: dict[str, Any]) -> float:
        model = best_available({**base, "backend": "sglang", "speculation": scheme})
        details = model.estimate_forward_pass_detailed(metrics).to_dict()["diagnostics"]["details"]
        return float(details["draft_ms"])

    # Same draft passes, a 4x smaller draft LM head: cheaper drafting, same verify pass.
    assert draft_ms(mapped) < draft_ms(full)


def test_profiles_json_lists_every_entry(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from aisim.cli import main
    from aisim.speculation._profiles import PROFILES

    assert main(["speculation", "profiles", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [entry["name"] for entry in listed] == [entry["name"] for entry in PROFILES]


def _round_details(scheme: dict[str, Any], batch: int, kv: int) -> dict[str, float]:
    from aisim.config._estimator import best_available
    from aisim.fpm import ForwardPassMetrics

    base = {
        "model": "meta-llama/Meta-Llama-3.1-8B",
        "hardware": "h100_sxm",
        "estimator": "roofline",
    }
    model = best_available({**base, "speculation": scheme})
    detailed = model.estimate_forward_pass_detailed([ForwardPassMetrics(batch, kv)]).to_dict()
    details = {key: float(value) for key, value in detailed["diagnostics"]["details"].items()}
    details["latency_ms"] = float(detailed["latency_ms"])
    return details


def _memory_bound_ms(moved_bytes: float, kernels: int) -> float:
    """A pass of one request that only reads weights: bytes at the weight bandwidth, plus the
    per-kernel and per-step overheads (the roofline's terms; inputs, not the code's result)."""
    from aisim.catalogue._costs import MEASURED_TERMS as terms
    from aisim.config._catalogue import get_gpu

    bandwidth = get_gpu("h100_sxm").hbm_bytes_per_s * terms.weight_bandwidth_efficiency
    seconds = moved_bytes / bandwidth + kernels * terms.kernel_overhead_s + terms.step_overhead_s
    return 1000.0 * seconds


def test_roofline_prices_medusa_heads_by_hand() -> None:
    # vLLM (models/medusa.py, v1/spec_decode/medusa.py): one pass of 2 heads on the target's
    # hidden state of each request: per head one 4096 x 4096 residual linear (+ SiLU, add)
    # and a 4096 x 32000 LM head; then stack and argmax. One request, BF16: memory bound.
    medusa = {"num_heads": 2, "num_hidden_layers": 1, "hidden_size": 4096, "vocab_size": 32000}
    details = _round_details({"kind": "medusa", "draft_config": medusa}, 1, 1000)
    weights = 2 * (4096 * 4096 + 4096 * 32000) * 2
    activations = 2 * ((4096 + 4096) + (4096 + 32000)) * 2  # each linear's input and output
    elementwise = 2 * 5 * 4096 * 2 + 2 * 32000 * (2 + 4 + 4)  # SiLU + add; fp32 logits, argmax
    kernels = 2 * (3 + 1) + 2
    expected = _memory_bound_ms(weights + activations + elementwise, kernels)
    assert details["draft_ms"] == pytest.approx(expected, rel=1e-12)
    assert details["draft_steps"] == 1.0
    # The verify pass is the widened plain pass (width 3), as an n-gram round of 2 verifies it.
    ngram = _round_details({"kind": "ngram", "params": {"num_speculative_tokens": 2}}, 1, 1000)
    assert details["target_ms"] == ngram["target_ms"]
    assert details["latency_ms"] >= details["target_ms"] + details["sampling_ms"]


def test_roofline_prices_mlp_speculator_stages_by_hand() -> None:
    # vLLM (models/mlp_speculator.py, MLPSpeculator.generate_proposals): 3 sequential stages,
    # projections 4096 -> 3072 then 3072 -> 3072, an LM head 3072 -> 128256 each.
    mlp = {"n_predict": 3, "emb_dim": 4096, "inner_dim": 3072, "vocab_size": 128256}
    details = _round_details({"kind": "mlp_speculator", "draft_config": mlp}, 1, 1000)
    weights = (4096 * 3072 + 2 * 3072 * 3072 + 3 * 3072 * 128256) * 2
    activations = ((4096 + 3072) + 2 * (3072 + 3072) + 3 * (3072 + 128256)) * 2
    # Per stage: embedding row 2, add 3, L2 norm 12, GELU 2 passes of 3072; logits as fp32.
    elementwise = 3 * ((2 + 3 + 12 + 2) * 3072 * 2 + 128256 * (2 + 4))
    expected = _memory_bound_ms(weights + activations + elementwise, 3 * 12)
    assert details["draft_ms"] == pytest.approx(expected, rel=1e-12)
    ngram = _round_details({"kind": "ngram", "params": {"num_speculative_tokens": 3}}, 1, 1000)
    assert details["target_ms"] == ngram["target_ms"]
    assert details["latency_ms"] >= details["target_ms"] + details["sampling_ms"]


def test_roofline_prices_suffix_with_the_users_lookup_time() -> None:
    # No published per-request figure exists for the host's suffix-tree lookup, so the
    # roofline refuses the kind until the user gives it, in one line naming the field.
    suffix: dict[str, Any] = {"kind": "suffix", "params": {"num_speculative_tokens": 4}}
    with pytest.raises(ConfigError) as caught:
        _round_details(suffix, 8, 8 * 1000)
    message = str(caught.value)
    assert "speculation.suffix_lookup_us_per_request: kind suffix:" in message
    assert "no published per-request figure" in message and "\n" not in message
    # 50 us per request and round on the host, 8 requests: 0.4 ms of drafting; the verify pass
    # is the widened plain pass of width 5 (an n-gram round of 4 verifies the same).
    details = _round_details({**suffix, "suffix_lookup_us_per_request": 50}, 8, 8 * 1000)
    assert details["draft_ms"] == pytest.approx(8 * 0.050, rel=1e-12)
    assert details["draft_steps"] == 0.0
    ngram = _round_details({"kind": "ngram", "params": {"num_speculative_tokens": 4}}, 8, 8000)
    assert details["target_ms"] == ngram["target_ms"]
    assert details["latency_ms"] >= details["target_ms"] + details["sampling_ms"]
    # A host cost, not the scheme: the identity is unchanged.
    from aisim import resolve_speculation

    plain = resolve_speculation(suffix)
    timed = resolve_speculation({**suffix, "suffix_lookup_us_per_request": 50})
    assert timed.cost_identity == plain.cost_identity
    assert timed.to_dict()["suffix_lookup_us_per_request"] == 50.0
    with pytest.raises(ConfigError, match="only kind suffix looks drafts up"):
        resolve_speculation(
            {"kind": "mtp", "params": {"depth": 1}, "suffix_lookup_us_per_request": 5}
        )
