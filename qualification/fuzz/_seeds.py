"""The valid documents the fuzz campaign mutates: one small, fast, accepted case per input kind
(replay configs with each traffic source and backend, trace files in both formats, speculation
blocks with draft configs, estimate flags with model/hardware files).

A seed is a command line plus the files it reads. File contents are trees (mappings, lists and
scalars) written as YAML, JSON, JSONL, CSV or text lines when a case is built, so mutations act on
structure rather than bytes (a recorded table is bytes, changed only by the raw mutations). Every
seed must run clean unmutated (exit 0, or its ``expect``: ``record`` without PyTorch is a clean
refusal): ``tests/qualification/test_fuzz.py`` checks that, so a mutation's rejection is always
the mutation's doing.

Each seed belongs to a campaign (the command it runs, ``Seed.campaign``); the report counts
outcomes per campaign. ``strict`` names the files in which every mapping refuses an unknown key
(outside ``open_keys``, the free-form parts such as a drafter's ``config.json``): a case that
adds one and is accepted is *accepted nonsense*, a failure, as is one that passes ``--bogus``.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any

#: File formats a seed file is written in (LINES: a list of text lines; BYTES: bytes as is).
YAML, JSON, JSONL, CSV, LINES, BYTES = "yaml", "json", "jsonl", "csv", "lines", "bytes"


@dataclass(frozen=True)
class SeedFile:
    """One input file: its name, format and content tree (CSV: a list of rows of cells)."""

    name: str
    fmt: str
    tree: Any


#: Commands whose campaign is named by their first two words (``speculation explain``).
_TWO_WORD = ("speculation", "qualify")


@dataclass(frozen=True)
class Seed:
    """A valid case: ``argv`` for ``aisim`` (``{out}`` is the output folder) and its files;
    ``expect`` the exit status it gives unmutated; ``strict``/``open_keys`` as in the module
    docstring; ``judged``: exit 1 is an answer, not a failure (``compare``: a prediction
    moved); ``flagged``: text on stdout by which an exit 0 says the input was refused in part
    (``snapshot`` records a scenario that cannot be evaluated as an error prediction, by
    design, and says so)."""

    name: str
    argv: tuple[str, ...]
    files: tuple[SeedFile, ...] = field(default_factory=tuple)
    expect: int = 0
    strict: tuple[str, ...] = ()
    open_keys: tuple[str, ...] = ("draft_config",)
    judged: bool = False
    flagged: str = ""
    #: The case's time bound is the profile's times this: a sweep draws two plots (about 1
    #: CPU-s, several s of wall time on a loaded machine) besides its points.
    slow: float = 1.0
    #: Text on stdout by which an exit 0 is accepted nonsense (a sweep that ran no point).
    nonsense_text: str = ""

    @property
    def campaign(self) -> str:
        words = 2 if self.argv[0] in _TWO_WORD else 1
        return " ".join(self.argv[:words])


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


def _data(*parts: str) -> bytes:
    return resources.files(__package__).joinpath("data", *parts).read_bytes()


def _json_data(*parts: str) -> Any:
    import json

    return json.loads(_data(*parts))


def _dataset(folder: str) -> tuple[SeedFile, ...]:
    """A recorded dataset (``qualification/fuzz/data/mtp``, a copy of the committed evidence
    ``cpu-qwen3-0.6b-mtp``): its tables as bytes, their sidecars as trees."""
    files = []
    for table in ("sd_rounds.parquet", "stp_points.parquet"):
        files.append(SeedFile(f"{folder}/{table}", BYTES, _data("mtp", table)))
        files.append(SeedFile(f"{folder}/{table}.json", JSON, _json_data("mtp", table + ".json")))
    return tuple(files)


_SWEEP = {
    "name": "fuzz",
    "base": {
        "traffic": {
            "source": {"type": "trace", "path": "trace.csv"},
            "load": {"type": "trace_timestamps"},
        },
        "engine": {"workers": _aggregated()},
    },
    "axes": {
        "engine.workers.aggregated.kv_cache.block_size": [16, 32],
        "engine.speculation": [
            None,
            {"kind": "mtp", "params": {"depth": 2}, "acceptance_rates": [0.8, 0.6]},
        ],
    },
    "slos": {"tpot_ms": {"p90": 50}},
    "merge_over": ["engine.workers.aggregated.kv_cache.block_size"],
}

_SCENARIOS = {
    "format": 1,
    "scenarios": [
        {
            "id": "roofline/qwen3-8b/h100/decode-B8-K8k",
            "kind": "estimate",
            "config": {"model": "Qwen/Qwen3-8B", "hardware": "h100_sxm", "estimator": "roofline"},
            "metrics": {"num_decode_requests": 8, "sum_decode_kv_tokens": 65536},
        },
        {
            "id": "replay/fixed",
            "kind": "replay",
            "config": {
                "traffic": {
                    "source": {
                        "type": "agentic",
                        "requests": [
                            {"request_id": "a", "input_length": 10, "output_length": 4},
                            {"request_id": "b", "input_length": 20, "output_length": 3},
                        ],
                    }
                },
                "engine": {"workers": _aggregated()},
            },
            "outputs": ["mean_ttft_ms", "mean_tpot_ms"],
        },
    ],
}


def _snapshot(latency_ms: float) -> dict[str, Any]:
    return {
        "aisim_version": "0.1.0",
        "build": "pure",
        "format": 1,
        "scenarios_sha256": "0" * 64,
        "predictions": {
            "roofline/a": {"latency_ms": latency_ms, "scaling_factor": 1.49},
            "replay/b": {"mean_ttft_ms": 10.0, "mean_tpot_ms": 5.0},
        },
    }


def _prometheus(drafts: int, tokens: int, accepted: int, per_position: list[int]) -> list[str]:
    labels = 'engine="0",model_name="Qwen/Qwen3-8B"'
    lines = [
        "# TYPE vllm:spec_decode_num_drafts counter",
        f"vllm:spec_decode_num_drafts_total{{{labels}}} {drafts}.0",
        "# TYPE vllm:spec_decode_num_draft_tokens counter",
        f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {tokens}.0",
        "# TYPE vllm:spec_decode_num_accepted_tokens counter",
        f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {accepted}.0",
        "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter",
    ]
    lines += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{index}"}} '
        f"{count}.0"
        for index, count in enumerate(per_position)
    ]
    return lines


#: Seeds of the commands added to the campaign by issue 28 (sweep, qualify, record, schema,
#: acceptance, compare, snapshot).
MORE_SEEDS: tuple[Seed, ...] = (
    Seed(
        "sweep-merge",
        ("sweep", "sweep.yaml", "--out", "{out}", "--workers", "1", "--no-progress"),
        (SeedFile("sweep.yaml", YAML, _SWEEP), _CSV_TRACE),
        slow=3.0,
        nonsense_text=" points, 0 ran,",
        # Axis values are checked per point by design (docs/sweep.md): an invalid one is a
        # listed error row and the other points run.
        flagged="\ninvalid point ",
    ),
    Seed("schema-replay", ("schema", "replay")),
    Seed("schema-plan", ("schema", "plan")),
    Seed(
        "acceptance-window",
        ("speculation", "acceptance", "before.prom", "after.prom", "--json"),
        (
            SeedFile("before.prom", LINES, _prometheus(400, 1200, 610, [300, 200, 110])),
            SeedFile("after.prom", LINES, _prometheus(1400, 4200, 2110, [1100, 700, 310])),
        ),
    ),
    Seed(
        "acceptance-depth",
        ("speculation", "acceptance", "after.prom", "--depth", "3", "--label", "engine=0"),
        (SeedFile("after.prom", LINES, _prometheus(1400, 4200, 2110, [1100, 700, 310])),),
    ),
    Seed(
        "compare-snapshots",
        ("compare", "old.json", "new.json", "--rtol", "1e-6"),
        (SeedFile("old.json", JSON, _snapshot(8.0)), SeedFile("new.json", JSON, _snapshot(8.0))),
        judged=True,
    ),
    Seed(
        "snapshot-scenarios",
        ("snapshot", "--scenarios", "scenarios.yaml", "--out", "{out}/snapshot.json"),
        (SeedFile("scenarios.yaml", YAML, _SCENARIOS),),
        flagged="answered with an error",
    ),
    Seed(
        "qualify-mape",
        ("qualify", "mape", "ds", "--tests"),
        _dataset("ds"),
    ),
    Seed(
        "qualify-calibrate",
        ("qualify", "calibrate", "ds", "--validation", "kfold:3", "--out", "{out}/fit.json"),
        _dataset("ds"),
    ),
)

#: Without PyTorch (the fuzz environment), ``record`` refuses every valid command line after
#: checking its flags and --out: every mutation must be refused cleanly, at once.
RECORD_SEEDS: tuple[Seed, ...] = (
    Seed(
        "record-grid",
        (
            "record",
            "--preset",
            "tiny",
            "--drafter",
            "mtp",
            "--out",
            "{out}",
            "--d",
            "1,2",
            "--batch",
            "1,4",
            "--kv",
            "256",
            "--reps",
            "2",
        ),
        expect=2,
    ),
)

#: Files in which every mapping (outside ``open_keys``) refuses an unknown key, by seed.
_STRICT = {
    "replay-csv-trace": ("replay.yaml",),
    "replay-mooncake-mtp": ("replay.json", "trace.jsonl"),
    "replay-agentic-sglang-pd": ("replay.yaml",),
    "replay-synthetic-poisson-roofline": ("replay.yaml",),
    "replay-concurrency-csv": ("replay.yaml",),
    "explain-dflash": ("spec.yaml",),
    "explain-eagle3-json": ("spec.json",),
    "estimate-files": ("gpu.yaml",),
    "estimate-speculation-file": ("spec.yaml",),
    "sweep-merge": ("sweep.yaml",),
    "snapshot-scenarios": ("scenarios.yaml",),
}

SEEDS = tuple(
    replace(seed, strict=_STRICT.get(seed.name, ()))
    for seed in (
        *SEEDS,
        *MORE_SEEDS,
        *(RECORD_SEEDS if importlib.util.find_spec("torch") is None else ()),
    )
)
SEEDS_BY_NAME: dict[str, Seed] = {seed.name: seed for seed in SEEDS}
