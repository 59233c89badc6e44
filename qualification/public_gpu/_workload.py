"""The replay config of a public point: the workload as it was run, or a one-line refusal.

InferenceX (SemiAnalysisAI/InferenceX at 843c6254, ``benchmarks/benchmark_lib.sh`` and
``benchmarks/single_node/fixed_seq_len/dsr1_*.sh``; settings from the scripts at that commit,
not from each run, except ``dsr1_fp4_b200_mtp.sh``, changed after the runs, at the version
they ran, ``FP4_B200_MTP_SCRIPT``): ``benchmark_serving.py --dataset-name random --random-range-ratio 0.8
--num-prompts 10 x conc --max-concurrency conc --ignore-eos`` (lengths uniform in [0.8 L, L],
``sample_uniform``: ``randint(int(L x 0.8), L + 1)``), i.e. ``conc`` slots over 10 x conc
prompts (``queue: shared``); the engine flags below per script; weights fp8 (DeepSeek-R1-0528)
or NVFP4 (nvidia/DeepSeek-R1-0528-FP4); SGLang MTP ``--speculative-num-steps 2
--speculative-num-draft-tokens 3 --speculative-eagle-topk 1`` (a chain of 2 drafts), TRT MTP
``num_nextn_predict_layers: 3`` (1 with attention DP); SGLang's ``--scheduler-recv-interval``
(B200 scripts) and TensorRT-LLM's attention-DP balance (``attention_dp_config``) are replayed.

The speculators sweep (vllm-project/speculators, ``examples/evaluate/results/qwen3_8_27b_dspark``):
GuideLLM ``concurrent`` with N streams (``queue: shared``), real prompts without ignore-eos, so
lengths are drawn around the point's mean prompt and output length (``LENGTH_CV``); vLLM 0.30.1
with its limits
(``max_num_seqs``, ``max_num_batched_tokens`` from the serve commands / README).
"""

from __future__ import annotations

import json
from typing import Any, Final

from aisim.catalogue import Deployment, builtin_gpu, builtin_model, deployed_weight_bytes

SCRIPTS: Final = "SemiAnalysisAI/InferenceX@843c6254:benchmarks/single_node/fixed_seq_len/"
#: ``dsr1_fp4_b200_mtp.sh`` as the B200 fp4 SGLang MTP runs ran it: the recipe was added on
#: 2026-05-20 (292726bb, ``benchmarks/single_node/``) and moved unchanged in its settings by
#: 1b234994 (2026-06-02); every such run in the fixtures is dated 2026-05-20 and the fixtures are
#: of 2026-06-14, before 53973500 (2026-07-02, "low-latency search space") cut it to
#: ``--max-running-requests 256 --cuda-graph-max-bs 256 --mem-fraction-static 0.85``. The runs'
#: version: ``--max-running-requests 512 --cuda-graph-max-bs 512 --mem-fraction-static 0.82
#: --chunked-prefill-size 16384 --max-prefill-tokens 16384``, and ``export
#: SGLANG_ENABLE_SPEC_V2=1`` (the overlap scheduler on; every version exports it).
FP4_B200_MTP_SCRIPT: Final = (
    "SemiAnalysisAI/InferenceX@1b234994:benchmarks/single_node/fixed_seq_len/"
)
ENGINES: Final = ("sglang", "trt", "vllm")
#: DeepSeek-V3 technical report (arXiv 2412.19437, section 5.4.3): "the acceptance rate of the
#: second token prediction ranges between 85% and 90%" (natural text; the first draft only).
DEEPSEEK_MTP_ACCEPTANCE: Final = 0.875
#: InferenceX records no acceptance, and its prompts are random token ids (under the chat
#: template for MTP runs; InferenceX's own guide: "Raw random tokens tank spec-decode
#: acceptance", .claude/commands/add-model-hardware.md @843c6254). The per-position rate each
#: engine's runs behaved as if they had, per engine and ISL/OSL, is **fitted** on the H200
#: history pairs only (``qualification/public_gpu/_fit.py``: ``fit_mtp_acceptance``;
#: ``fitted_terms.json``: ``mtp_acceptance``); B200 and every latest row are judged on it. The
#: H200 SGLang runs have no 1024/8192 MTP pair: that rate is transferred from TensorRT-LLM's
#: (``transferred_rate``: SGLang's 1024/1024 rejection 1 - a scaled by TensorRT-LLM's 1024/8192
#: over 1024/1024 rejection ratio). The rates rise with ISL/OSL on both engines' H200 pairs and
#: the held-out B200 pairs' residual showed the same before the split (1024/8192 pairs priced
#: +17 % too dear, 1024/1024 -8 %, median signed): a random prompt's 8k-token greedy answer is
#: more predictable than its 1k-token one. It is an effective rate: what differs between the
#: engines' MTP rounds beyond the modelled cost (both decode greedily: the client sends
#: temperature 0) lands in it too. Values: those the committed scored run replayed (a refit
#: on that run agrees within 0.01, a test checks it).
MTP_ACCEPTANCE: Final[dict[str, dict[str, float]]] = {
    "sglang": {"1024/1024": 0.511, "8192/1024": 0.582, "1024/8192": 0.753},
    "trt": {"1024/1024": 0.703, "8192/1024": 0.758, "1024/8192": 0.850},
}
#: SGLang's host time per request per pass without the overlap scheduler, **fitted** on the
#: B200 SGLang MTP history rows at 1024/1024 and 512 streams (``_fit_host.fit_serial_host``;
#: ``fitted_terms.json``: ``sglang_serial_host_us_per_request``): the rounded value the committed
#: scored run replayed (142 before the refit with the all-reduce's NCCL curves and B200's
#: FlashAttention-4 efficiency, 143 before the prompt's draft extend was priced, 146 before the
#: refit with the activation quantization priced and the MTP acceptance per ISL/OSL, 148 before
#: the norms were priced as fused add-RMSNorms). Applied where ``serial_host`` says the overlap
#: scheduler was off.
SGLANG_SERIAL_HOST_US_PER_REQUEST: Final = 134.0
GIB: Final = 1024.0**3
#: Memory left for activations and CUDA graphs beside the engine's own fraction (replay's
#: documented default reserve, aisim/config kv_cache capacity ``default``).
ACTIVATION_RESERVE_BYTES: Final = 2.0 * GIB
#: The geometry used for Qwen3.8-27B, whose own config.json is not in the public sources reached
#: here (the speculators README names none): the public Qwen3.5 / Qwen3.6-27B dense text decoder
#: (``qwen3_5_text``: 64 layers, hidden 5120, MLP 17408, vocabulary 248,320, untied head, one
#: MTP layer), which third-party public code written for Qwen3.8-27B also validates its text
#: config against: every 4th layer gated full attention (24 query / 4 KV heads of 256, the
#: query projection doubled by the output gate), the other 48 Gated DeltaNet linear attention
#: (16 key / 48 value heads of 128; no KV cache, an fp32 recurrent state per request:
#: ``mamba_ssm_dtype: float32``, which vLLM adopts as ``mamba_ssm_cache_dtype``:
#: ``vllm/model_executor/models/config.py`` ``Qwen3_5ForConditionalGenerationConfig``).
#: Absolute figures are shown, not judged: the checkpoint's own config is not public.
QWEN_PROXY: Final[dict[str, Any]] = {
    "model_type": "qwen3_5_text",
    "num_hidden_layers": 64,
    "hidden_size": 5120,
    "intermediate_size": 17408,
    "num_attention_heads": 24,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "vocab_size": 248320,
    "tie_word_embeddings": False,
    "num_nextn_predict_layers": 1,
    "max_position_embeddings": 262144,
    "torch_dtype": "bfloat16",
    "full_attention_interval": 4,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 48,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "mamba_ssm_dtype": "float32",
    "attn_output_gate": True,
}


#: The DSpark drafter RedHatAI/Qwen3.8-27B-speculator.dspark: its config.json is not in a public
#: source. vllm-project/speculators@c05b95b3 gives the drafter's shape: DSpark subclasses DFlash
#: (``src/speculators/models/dspark/config.py``: ``DSparkSpeculatorConfig(DFlashSpeculatorConfig)``),
#: whose draft layers take the target's decoder-layer config (``transformer_layer_config``) and
#: whose draft vocabulary defaults to 32,000 (``src/speculators/models/dflash/config.py``); the
#: repository's DSpark training example uses 3 draft layers
#: (``examples/train/dspark_qwen3_0_6b_sharegpt_online.sh``: ``NUM_LAYERS=3``). An assumption,
#: named in the report: 3 layers of the proxy's geometry with a 32,000-token draft head.
DSPARK_DRAFT_LAYERS: Final = 3
DSPARK_DRAFT_VOCAB: Final = 32000
#: README (speculators, commit c1cde587): with the drafter loaded vLLM's KV cache held 544k token
#: slots instead of 1.36M.
DSPARK_KV_SLOTS: Final = 544_000


def dspark_draft_config() -> dict[str, Any]:
    """The assumed DSpark drafter's config.json (see ``DSPARK_DRAFT_LAYERS``)."""
    keys = (
        "hidden_size",
        "intermediate_size",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "max_position_embeddings",
        "torch_dtype",
    )
    return {
        "model_type": "qwen3",
        **{key: QWEN_PROXY[key] for key in keys},
        "num_hidden_layers": DSPARK_DRAFT_LAYERS,
        "vocab_size": QWEN_PROXY["vocab_size"],
        "draft_vocab_size": DSPARK_DRAFT_VOCAB,
    }


class Refusal(Exception):
    """A point the builder cannot reproduce; the message is the one-line reason."""


def _require_count(point: dict[str, Any], name: str) -> None:
    """Refuse a point whose ``name`` (a parallelism, a length or the concurrency) is not a
    positive integer: the workload cannot be rebuilt without it."""
    value = point.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Refusal(f"{name}: expected a positive integer as run, got {value!r}")


def _gpu_name(hardware: str) -> str:
    return f"{hardware}_sxm"


def _uniform(length: int) -> dict[str, Any]:
    return {"type": "uniform", "min": int(length * 0.8), "max": length}


def mtp_acceptance(engine: str, isl: int, osl: int) -> float:
    """The fitted MTP acceptance rate per draft position of an InferenceX run (``MTP_ACCEPTANCE``);
    a Refusal for an engine or ISL/OSL no rate was fitted for."""
    rates = MTP_ACCEPTANCE.get(engine)
    if rates is None:
        raise Refusal(f"no fitted MTP acceptance for engine {engine!r} (have: sglang, trt)")
    key = f"{isl}/{osl}"
    if key not in rates:
        allowed = ", ".join(sorted(rates))
        raise Refusal(f"no fitted MTP acceptance for ISL/OSL {key} (have: {allowed})")
    return rates[key]


def sglang_settings(point: dict[str, Any]) -> dict[str, Any]:
    """SGLang flags of the InferenceX script for this point (script name in ``script``)."""
    hw, precision, mtp = point["hardware"], point["precision"], point["sd"] == "mtp"
    isl, osl, tp = point["isl"], point["osl"], point["tp"]
    script = f"dsr1_{precision}_{hw}{'_mtp' if mtp else ''}.sh"
    # --scheduler-recv-interval (B200 scripts: 10, or 30 from concurrency 16; 1 with attention
    # DP; TP 4 fp8: 10; the H200 scripts leave SGLang's default 1).
    recv = 10 if point["conc"] < 16 else 30
    if point["dp_attention"]:
        recv = 1
    if hw == "h200" and precision == "fp8":
        running = 512 if (isl, osl) == (1024, 1024) else 256
        return _s(script, running, 32768, 0.82, "bf16", 1)
    if hw == "b200" and precision == "fp8":
        if mtp:
            return _s(script, 512, 16384, 0.82, "fp8", recv)
        if tp == 4:
            return _s(script, 32, 8192, 0.95, "fp8", 10)
        return _s(script, 128, 32768, 0.82, "fp8", recv)
    if hw == "b200" and precision == "fp4":
        if mtp:
            # The version the runs used (``FP4_B200_MTP_SCRIPT``), not 843c6254's.
            return _s(script, 512, 16384, 0.82, "fp8", recv, FP4_B200_MTP_SCRIPT)
        return _s(script, 256, 16384, 0.85, "fp8", recv)
    raise Refusal(f"no InferenceX SGLang script for {precision} on {hw}")


def serial_host(point: dict[str, Any]) -> bool:
    """Whether the point's SGLang server ran without the overlap scheduler: the B200 fp8 MTP
    script (``dsr1_fp8_b200_mtp.sh``) writes ``SGLANG_ENABLE_SPEC_V2=1`` without ``export``
    (from its first version to 843c6254), so the server never sees it and SGLang disables the
    overlap scheduler for EAGLE / MTP (``python/sglang/srt/server_args.py``,
    ``ServerArgs._handle_speculative_decoding``); the H200 MTP script and the B200 fp4 one (every
    version, ``FP4_B200_MTP_SCRIPT``) export it. Without SD the overlap scheduler is SGLang's
    default."""
    return bool(
        point["engine"] == "sglang"
        and point["sd"] == "mtp"
        and point["hardware"] == "b200"
        and point["precision"] == "fp8"
    )


def _s(
    script: str,
    running: int,
    chunk: int,
    memory: float,
    kv: str,
    recv: int,
    scripts: str = SCRIPTS,
) -> dict[str, Any]:
    return {
        "script": scripts + script,
        "max_running_requests": running,
        "chunked_prefill_size": chunk,
        "memory_fraction": memory,
        "kv_cache": kv,
        "scheduler_recv_interval": recv,
    }


def trt_settings(point: dict[str, Any]) -> dict[str, Any]:
    """TensorRT-LLM options of the InferenceX script (``max_num_tokens`` formula, KV fp8, the
    free-memory fraction, ``max_batch_size``, MTP layers)."""
    hw, precision, mtp = point["hardware"], point["precision"], point["sd"] == "mtp"
    isl, conc, tp, dpa = point["isl"], point["conc"], point["tp"], point["dp_attention"]
    script = f"dsr1_{precision}_{hw}_trt{'_mtp' if mtp else ''}.sh"
    depth = (1 if dpa else 3) if mtp else 0
    if hw == "h200":
        fraction = 0.75
        batch = max(1, conc // tp) if (dpa and mtp) else (128 if not mtp else conc)
    elif precision == "fp8":
        fraction = 0.7 if (mtp and dpa) else (0.75 if (not mtp and tp == 4) else 0.8)
        batch = (conc if conc < 8 else conc // 8) if dpa else conc
    else:
        fraction = 0.8
        batch = (conc if conc < 4 else conc // 4) if dpa else conc
    tokens = ((depth + 1) * batch + isl + 64 + 63) // 64 * 64
    if not mtp:
        tokens = max(8192, (conc + isl + 64 + 63) // 64 * 64)
    return {
        "script": SCRIPTS + script,
        "max_batch_size": batch,
        "max_num_tokens": tokens,
        "free_gpu_memory_fraction": fraction,
        "kv_cache": "fp8",
        "mtp_layers": depth,
    }


def _blocks(
    point: dict[str, Any], deployment: Deployment, memory: float, ranks: int, block: int
) -> int:
    """KV blocks per attention rank: the engine's memory share minus the weights one GPU holds
    (and the activation reserve), over the KV bytes one token takes on it (MLA's latent KV is
    whole on every GPU of a rank)."""
    spec = builtin_model(point["model"])
    gpu = builtin_gpu(_gpu_name(point["hardware"]))
    assert spec is not None and gpu is not None
    tp = point["tp"]
    weights = deployed_weight_bytes(spec, deployment) / tp
    if ranks > 1:
        # Attention weights are whole on every rank (data-parallel attention).
        attention = spec.attention_parameters_per_layer * spec.num_layers
        weights += attention * deployment.weight_bytes_per_parameter(spec) * (1.0 - 1.0 / tp)
    free = gpu.hbm_capacity_bytes * memory - weights - ACTIVATION_RESERVE_BYTES
    per_token = spec.kv_bytes_per_token / spec.dtype_bytes * deployment.kv_bytes_per_element(spec)
    if not spec.uses_mla:
        per_token /= tp
    blocks = int(free / (per_token * block))
    if blocks < 1:
        raise Refusal(f"the weights do not fit: {weights / GIB:.0f} GiB per GPU")
    return blocks


def inferencex_config(point: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The replay config of an InferenceX point and the settings it used (with their script)."""
    engine = point["engine"]
    if point["disaggregated"] or point["multinode"]:
        raise Refusal(
            f"{engine}: disaggregated multi-node serving (prefill and decode pools across "
            "nodes); replay's P/D model of this deployment is not built"
        )
    if engine not in ("sglang", "trt"):
        raise Refusal(f"unknown engine {engine!r}: replay models sglang and trt (vLLM-like)")
    if point["tp"] is None or point["ep"] is None:
        raise Refusal("parallelism not recorded (decode_tp / decode_ep missing)")
    for name in ("tp", "ep", "isl", "osl", "conc"):
        _require_count(point, name)
    if point["hardware"] not in ("h100", "h200", "b200"):
        raise Refusal(f"hardware {point['hardware']!r} is not in the catalogue")
    if builtin_model(point["model"]) is None:
        raise Refusal(f"model {point['model']!r} is not in the catalogue")
    tp, ep, dpa = point["tp"], point["ep"], point["dp_attention"]
    ranks = tp if dpa else 1
    tensor = 1 if dpa else tp
    settings = sglang_settings(point) if engine == "sglang" else trt_settings(point)
    deployment = Deployment(
        weights=point["precision"],
        kv_cache=settings["kv_cache"],
        expert_parallel=ep,
        attention_data_parallel=ranks,
    )
    if engine == "sglang":
        block = 1
        memory = settings["memory_fraction"]
        scheduler: dict[str, Any] = {
            "chunked_prefill_size": settings["chunked_prefill_size"],
            "max_running_requests": max(1, settings["max_running_requests"] // ranks),
            "scheduler_recv_interval": settings["scheduler_recv_interval"],
        }
        if serial_host(point):
            scheduler["host_us_per_request"] = SGLANG_SERIAL_HOST_US_PER_REQUEST
            settings["overlap_scheduler"] = (
                "off (SGLANG_ENABLE_SPEC_V2 not exported): fitted host time "
                f"{SGLANG_SERIAL_HOST_US_PER_REQUEST} us per request per pass"
            )
        elif point["sd"] == "mtp":
            # The overlap scheduler runs the same MTP round's host work beside the GPU's pass
            # (``Scheduler.event_loop_overlap``): it shows only where it outlasts the pass.
            scheduler["host_us_per_request"] = SGLANG_SERIAL_HOST_US_PER_REQUEST
            scheduler["host_overlapped"] = True
            settings["overlap_scheduler"] = (
                "on (SGLANG_ENABLE_SPEC_V2 exported): the fitted host time "
                f"{SGLANG_SERIAL_HOST_US_PER_REQUEST} us per request per pass, beside the GPU"
            )
        backend = "sglang"
    else:
        block = 32  # TensorRT-LLM's default tokens_per_block
        spec = builtin_model(point["model"])
        gpu = builtin_gpu(_gpu_name(point["hardware"]))
        assert spec is not None and gpu is not None
        # free_gpu_memory_fraction is of the memory left after the weights.
        weights = deployed_weight_bytes(spec, deployment) / tp
        left = gpu.hbm_capacity_bytes - weights
        memory = (weights + left * settings["free_gpu_memory_fraction"]) / gpu.hbm_capacity_bytes
        scheduler = {
            "max_batched_tokens": settings["max_num_tokens"],
            "max_sequences": settings["max_batch_size"],
        }
        if dpa:
            # Every dsr1_*_trt*.sh: attention_dp_config {enable_balance: true, timeout_iters:
            # 60, batching_wait_iters: 0}.
            scheduler["attention_dp_enable_balance"] = True
            scheduler["attention_dp_time_out_iters"] = 60
            scheduler["attention_dp_batching_wait_iters"] = 0
        backend = "vllm"
    blocks = _blocks(point, deployment, memory, ranks, block)
    worker: dict[str, Any] = {
        "parallelism": {"tensor": tensor, "attention_data": ranks},
        "scheduler": scheduler,
        "kv_cache": {
            "block_size": block,
            "prefix_caching": False,
            "capacity": {"type": "fixed", "blocks": blocks},
        },
        "timing": {
            "estimator": "roofline",
            "deployment": {
                "weights": deployment.weights,
                "kv_cache": deployment.kv_cache,
                "expert_parallel": ep,
                "attention_data_parallel": ranks,
            },
        },
    }
    engine_block: dict[str, Any] = {
        "model": point["model"],
        "hardware": _gpu_name(point["hardware"]),
        "backend": backend,
        "workers": {"aggregated": worker},
    }
    if point["sd"] == "mtp":
        depth = 2 if engine == "sglang" else settings["mtp_layers"]
        rate = mtp_acceptance(engine, point["isl"], point["osl"])
        engine_block["speculation"] = {
            "kind": "mtp",
            "params": {"depth": depth},
            "acceptance_rate": rate,
            "seed": 7,
        }
        settings["acceptance_rate"] = rate
        settings["acceptance"] = (
            f"fitted: {rate} per draft position ({engine}, {point['isl']}/{point['osl']}, on "
            "the H200 history pairs; not recorded by InferenceX)"
        )
    elif point["sd"] != "none":
        raise Refusal(f"unknown SD method {point['sd']!r}")
    conc = point["conc"]
    config = {
        "traffic": {
            "seed": 0,
            "source": {
                "type": "synthetic",
                "num_requests": 10 * conc,
                "prompt_tokens": _uniform(point["isl"]),
                "output_tokens": _uniform(point["osl"]),
            },
            "load": {"type": "concurrency", "users": conc, "queue": "shared"},
        },
        "engine": engine_block,
    }
    settings["kv_blocks_per_rank"] = blocks
    settings["gpus"] = tp
    return config, settings


def speculators_config(point: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The replay config of a Qwen3.8-27B point (geometry: ``QWEN_PROXY``)."""
    if point.get("diagnostic"):
        raise Refusal("diagnostic rerun (dspark pinned limits, gauges sampled): not a sweep point")
    if point["sd"] not in ("none", "mtp", "dspark"):
        raise Refusal(f"unknown SD method {point['sd']!r}")
    _require_count(point, "conc")
    conc = point["conc"]
    # README: vLLM's KV cache held 1.36M token slots without a drafter and 544k with the DSpark
    # drafter loaded (16-token blocks).
    slots = DSPARK_KV_SLOTS if point["sd"] == "dspark" else 1_360_000
    blocks = slots // 16
    worker: dict[str, Any] = {
        "parallelism": {"tensor": 1},
        "scheduler": {
            "max_batched_tokens": point["max_num_batched_tokens"],
            "max_sequences": point["max_num_seqs"],
        },
        "kv_cache": {
            "block_size": 16,
            "prefix_caching": False,
            "capacity": {"type": "fixed", "blocks": blocks},
        },
        "timing": {"estimator": "roofline"},
    }
    engine: dict[str, Any] = {
        "model": {**QWEN_PROXY, "name": "Qwen3.8-27B (Qwen3.5/3.6-27B hybrid geometry)"},
        "hardware": "b200_sxm",
        "backend": "vllm",
        "workers": {"aggregated": worker},
    }
    settings: dict[str, Any] = {
        "script": "vllm-project/speculators: serve_*_command.txt, README (limits)",
        "max_num_seqs": point["max_num_seqs"],
        "max_num_batched_tokens": point["max_num_batched_tokens"],
        "kv_blocks_per_rank": blocks,
        "gpus": 1,
        "geometry": (
            "Qwen3.5/3.6-27B hybrid (48 Gated DeltaNet + 16 gated attention layers); Qwen3.8-27B's "
            "own config.json not found"
        ),
        "lengths": f"lognormal around the measured means, coefficient of variation {LENGTH_CV}",
    }
    if point["sd"] == "mtp":
        accepted = float(point["acceptance_length"]) - 1.0
        engine["speculation"] = {
            "kind": "mtp",
            "params": {"depth": point["num_speculative_tokens"]},
            "expected_accepted_tokens": accepted,
            "seed": 7,
        }
        settings["acceptance"] = f"measured: acceptance length {accepted + 1.0:.4f}"
    elif point["sd"] == "dspark":
        accepted = float(point["acceptance_length"]) - 1.0
        drafts = int(point["num_speculative_tokens"])
        engine["speculation"] = {
            "kind": "dspark",
            "params": {"num_draft_tokens": drafts, "num_draft_layers": DSPARK_DRAFT_LAYERS},
            "draft_config": dspark_draft_config(),
            "expected_accepted_tokens": accepted,
            "seed": 7,
        }
        settings["acceptance"] = f"measured: acceptance length {accepted + 1.0:.4f}"
        settings["drafter"] = (
            f"assumed: {DSPARK_DRAFT_LAYERS} draft layers of the target's layer geometry, draft "
            f"vocabulary {DSPARK_DRAFT_VOCAB} (speculators defaults; the drafter's config.json "
            "is not public); KV cache 544k token slots (README)"
        )
    prompt = _lognormal(point["isl"], 16384 - 1024)
    output = _lognormal(point["osl"], 1024)
    config = {
        "traffic": {
            "seed": 0,
            "source": {
                "type": "synthetic",
                "num_requests": steady_requests(conc),
                "prompt_tokens": prompt,
                "output_tokens": output,
            },
            "load": {"type": "concurrency", "users": conc, "queue": "shared"},
        },
        "engine": engine,
    }
    return config, settings


#: The sweep records only mean lengths; real prompts and answers vary (no ignore-eos), so each
#: length is drawn from a lognormal with that mean and a coefficient of variation of 0.5 (an
#: assumption, named in the report), capped at max_tokens 1024 for outputs and at
#: max-model-len minus that for prompts. Identical lengths would finish every stream together.
LENGTH_CV: Final = 0.5


def _lognormal(mean: float, cap: int) -> dict[str, Any]:
    return {
        "type": "lognormal",
        "mean": float(mean),
        "std": LENGTH_CV * float(mean),
        "min": 1,
        "max": cap,
    }


def steady_requests(conc: int) -> int:
    """Requests simulated for a windowed closed loop: the first wave (``conc``) warms it up,
    then at least 8 more per stream (steady-state figures come from those)."""
    return conc + max(8 * conc, 32)


def replay_config(point: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The point's replay config and settings, or ``Refusal`` with the reason."""
    if point["source"] == "speculators":
        return speculators_config(point)
    return inferencex_config(point)


def workload_key(config: dict[str, Any]) -> str:
    """Identical configs (repeated InferenceX runs of one setting) are replayed once."""
    return json.dumps(config, sort_keys=True)
