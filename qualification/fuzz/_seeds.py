"""The valid documents the fuzz campaign mutates: one small, fast, accepted case per input kind
(replay configs with each traffic source and backend, trace files in both formats, speculation
blocks with draft configs, estimate flags with model/hardware files).

A seed is a command line plus the files it reads. File contents are trees (mappings, lists and
scalars) written as YAML, JSON, JSONL or CSV when a case is built, so mutations act on structure
rather than bytes. Every seed must run clean (exit 0) unmutated: ``tests/qualification/
test_fuzz.py`` checks that, so a mutation's rejection is always the mutation's doing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: File formats a seed file is written in.
YAML, JSON, JSONL, CSV = "yaml", "json", "jsonl", "csv"


@dataclass(frozen=True)
class SeedFile:
    """One input file: its name, format and content tree (CSV: a list of rows of cells)."""

    name: str
    fmt: str
    tree: Any


@dataclass(frozen=True)
class Seed:
    """A valid case: ``argv`` for ``aisim`` (``{out}`` is the output folder) and its files."""

    name: str
    argv: tuple[str, ...]
    files: tuple[SeedFile, ...] = field(default_factory=tuple)


_FIXED_TIMING = {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0}


def _aggregated(blocks: int = 200, **extra: Any) -> dict[str, Any]:
    worker: dict[str, Any] = {
        "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": blocks}},
        "timing": dict(_FIXED_TIMING),
    }
    worker.update(extra)
    return {"aggregated": worker}


_CSV_TRACE = SeedFile(
    "trace.csv",
    CSV,
    [
        ["arrival_s", "prompt_tokens", "output_tokens"],
        ["0.0", "100", "16"],
        ["0.05", "64", "8"],
        ["0.2", "300", "4"],
    ],
)

_MOONCAKE_TRACE = SeedFile(
    "trace.jsonl",
    JSONL,
    [
        {"timestamp": 0, "input_length": 40, "output_length": 6, "hash_ids": [1, 2, 3]},
        {"timestamp": 20, "input_length": 40, "output_length": 4, "hash_ids": [1, 2, 4]},
        {"timestamp": 55.5, "input_length": 20, "output_length": 9},
    ],
)

_QWEN_CONFIG = {
    "model_type": "qwen3",
    "hidden_size": 1024,
    "intermediate_size": 3072,
    "num_hidden_layers": 4,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
}

_GPU_FILE = {
    "bf16_dense_flops": 989e12,
    "hbm_bytes_per_s": 3.35e12,
    "hbm_capacity_bytes": 85899345920,
    "nvlink_bytes_per_s_per_gpu": 450e9,
}

_BLOCK_DRAFT = {
    "model_type": "qwen3",
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "num_hidden_layers": 5,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 151936,
    "block_size": 16,
}

_EAGLE_DRAFT = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 1,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "draft_vocab_size": 32000,
}

SEEDS: tuple[Seed, ...] = (
    Seed(
        "replay-csv-trace",
        ("replay", "replay.yaml", "--out", "{out}"),
        (
            SeedFile(
                "replay.yaml",
                YAML,
                {
                    "traffic": {
                        "source": {"type": "trace", "path": "trace.csv"},
                        "load": {"type": "trace_timestamps", "time_scale": 1.0},
                    },
                    "engine": {"workers": _aggregated()},
                },
            ),
            _CSV_TRACE,
        ),
    ),
    Seed(
        "replay-mooncake-mtp",
        ("replay", "replay.json", "--out", "{out}", "--json"),
        (
            SeedFile(
                "replay.json",
                JSON,
                {
                    "traffic": {
                        "source": {
                            "type": "trace",
                            "path": "trace.jsonl",
                            "format": "mooncake",
                            "hash_block_tokens": 16,
                        },
                        "max_requests": 3,
                    },
                    "engine": {
                        "backend": "vllm",
                        "speculation": {
                            "kind": "mtp",
                            "params": {"depth": 2},
                            "acceptance_rates": [0.8, 0.6],
                            "seed": 7,
                        },
                        "workers": _aggregated(
                            scheduler={"max_batched_tokens": 256, "max_sequences": 8}
                        ),
                    },
                    "simulation": {"horizon_ms": 100000},
                },
            ),
            _MOONCAKE_TRACE,
        ),
    ),
    Seed(
        "replay-agentic-sglang-pd",
        ("replay", "replay.yaml", "--out", "{out}"),
        (
            SeedFile(
                "replay.yaml",
                YAML,
                {
                    "traffic": {
                        "source": {
                            "type": "agentic",
                            "requests": [
                                {"request_id": "a", "input_length": 30, "output_length": 5},
                                {
                                    "request_id": "b",
                                    "input_length": 20,
                                    "output_length": 3,
                                    "wait_for": ["a"],
                                    "delay_ms": 2.5,
                                },
                            ],
                        }
                    },
                    "engine": {
                        "backend": "sglang",
                        "kv_transfer": {
                            "bandwidth_bytes_per_s": 1e9,
                            "kv_bytes_per_token": 1000,
                            "latency_ms": 1.0,
                        },
                        "workers": {
                            "prefill": {
                                "kv_cache": {"capacity": {"type": "fixed", "blocks": 400}},
                                "timing": dict(_FIXED_TIMING),
                            },
                            "decode": {
                                "scheduler": {"chunked_prefill_size": 512},
                                "kv_cache": {"capacity": {"type": "fixed", "blocks": 400}},
                                "timing": dict(_FIXED_TIMING),
                            },
                        },
                    },
                },
            ),
        ),
    ),
    Seed(
        "replay-synthetic-poisson-roofline",
        ("replay", "replay.yaml", "--out", "{out}"),
        (
            SeedFile(
                "replay.yaml",
                YAML,
                {
                    "traffic": {
                        "seed": 3,
                        "source": {
                            "type": "synthetic",
                            "num_requests": 4,
                            "prompt_tokens": {"type": "uniform", "min": 8, "max": 64},
                            "output_tokens": {
                                "type": "lognormal",
                                "mean": 6,
                                "std": 2,
                                "min": 1,
                                "max": 12,
                            },
                        },
                        "load": {"type": "poisson", "rate_rps": 20.0},
                    },
                    "engine": {
                        "model": "Qwen/Qwen3-0.6B",
                        "hardware": "h100",
                        "workers": {
                            "aggregated": {
                                "parallelism": {"tensor": 1},
                                "kv_cache": {"capacity": {"type": "default"}},
                                "timing": {"type": "estimator", "estimator": "roofline"},
                            }
                        },
                    },
                },
            ),
        ),
    ),
    Seed(
        "replay-concurrency-csv",
        ("replay", "replay.yaml", "--out", "{out}"),
        (
            SeedFile(
                "replay.yaml",
                YAML,
                {
                    "traffic": {
                        "source": {"type": "trace", "path": "trace.csv", "format": "csv"},
                        "load": {"type": "concurrency", "users": 2, "think_ms": 3.0},
                    },
                    "engine": {"workers": _aggregated(blocks=100)},
                },
            ),
            _CSV_TRACE,
        ),
    ),
    Seed(
        "explain-dflash",
        ("speculation", "explain", "spec.yaml", "--model", "Qwen/Qwen3-8B"),
        (
            SeedFile(
                "spec.yaml",
                YAML,
                {
                    "speculation": {
                        "kind": "dflash",
                        "params": {"num_draft_tokens": 7},
                        "draft_config": dict(_BLOCK_DRAFT),
                        "acceptance_rate": 0.7,
                        "seed": 3,
                    }
                },
            ),
        ),
    ),
    Seed(
        "explain-eagle3-json",
        ("speculation", "explain", "spec.json", "--json", "--backend", "vllm"),
        (
            SeedFile(
                "spec.json",
                JSON,
                {
                    "kind": "eagle3",
                    "params": {"num_speculative_tokens": 3},
                    "draft_config": dict(_EAGLE_DRAFT),
                    "acceptance_rates": [0.7, 0.5, 0.3],
                },
            ),
        ),
    ),
    Seed(
        "estimate-flags",
        (
            "estimate",
            "--model",
            "Qwen3-8B",
            "--hardware",
            "h100",
            "--batch",
            "8",
            "--kv",
            "1024",
            "--scheme",
            "mtp",
            "--depth",
            "3",
        ),
    ),
    Seed(
        "estimate-files",
        (
            "estimate",
            "--model",
            "config.json",
            "--hardware",
            "gpu.yaml",
            "--tp",
            "2",
            "--kv-total",
            "4096",
            "--batch",
            "4",
            "--prefill-tokens",
            "128",
            "--json",
        ),
        (SeedFile("config.json", JSON, dict(_QWEN_CONFIG)), SeedFile("gpu.yaml", YAML, _GPU_FILE)),
    ),
    Seed(
        "estimate-speculation-file",
        (
            "estimate",
            "--model",
            "Qwen/Qwen3-8B",
            "--hardware",
            "h200_sxm",
            "--speculation",
            "spec.yaml",
            "--batch",
            "2",
            "--kv",
            "512",
        ),
        (
            SeedFile(
                "spec.yaml",
                YAML,
                {
                    "speculation": {
                        "kind": "dflash",
                        "params": {"num_draft_tokens": 5},
                        "draft_config": dict(_BLOCK_DRAFT),
                    }
                },
            ),
        ),
    ),
    Seed(
        "estimate-draft-config",
        (
            "estimate",
            "--model",
            "Qwen/Qwen3-8B",
            "--hardware",
            "h100",
            "--scheme",
            "eagle3",
            "--depth",
            "2",
            "--draft-config",
            "draft.json",
        ),
        (SeedFile("draft.json", JSON, dict(_EAGLE_DRAFT)),),
    ),
)

SEEDS_BY_NAME: dict[str, Seed] = {seed.name: seed for seed in SEEDS}
