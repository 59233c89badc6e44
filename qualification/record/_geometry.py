"""Model geometries and named presets for the recorder (no PyTorch needed to read them)."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from aisim.errors import ConfigError
from aisim.files import canonical_json

DRAFTER_KINDS: Final = ("mtp", "eagle3", "draft_model")


@dataclass(frozen=True)
class DecoderGeometry:
    """A Qwen3/Llama-shaped decoder: RMSNorm, q/k-norm, RoPE, GQA attention, SwiGLU MLP."""

    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool = True
    rope_theta: float = 1_000_000.0
    rms_norm_eps: float = 1e-6

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def identity_hash(self) -> str:
        """SHA-256 of the canonical JSON of the geometry: equal shapes share one identity."""
        return hashlib.sha256(canonical_json(self.as_dict()).encode()).hexdigest()


@dataclass(frozen=True)
class DrafterGeometry:
    """A drafter: ``mtp`` (one block over [embedding; target hidden], the target's head),
    ``eagle3`` (one block over [embedding; fused 3 target layers], its own reduced vocabulary)
    or ``draft_model`` (an independent small decoder with the target's vocabulary)."""

    kind: str
    decoder: DecoderGeometry
    draft_vocab_size: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "decoder": self.decoder.as_dict(),
            "draft_vocab_size": self.draft_vocab_size,
        }

    def identity_hash(self) -> str:
        return hashlib.sha256(canonical_json(self.as_dict()).encode()).hexdigest()


@dataclass(frozen=True)
class Grid:
    """The measured configurations: every (d, B, K_total) combination."""

    draft_lengths: tuple[int, ...]
    batch_sizes: tuple[int, ...]
    kv_totals: tuple[int, ...]
    repetitions: int = 5

    def configurations(self) -> list[tuple[int, int, int]]:
        """(d, B, K) in recording order: K, then B, then d (references measured beside rounds)."""
        return [
            (d, b, k) for k in self.kv_totals for b in self.batch_sizes for d in self.draft_lengths
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "draft_lengths": list(self.draft_lengths),
            "batch_sizes": list(self.batch_sizes),
            "kv_totals": list(self.kv_totals),
            "repetitions": self.repetitions,
        }


@dataclass(frozen=True)
class Preset:
    """A named target shape, its drafters and a default grid."""

    name: str
    target: DecoderGeometry
    drafters: dict[str, DrafterGeometry] = field(default_factory=dict)
    grid: Grid = Grid((1, 2, 3, 4), (1, 4, 8), (256, 1024))


_QWEN3_06B: Final = DecoderGeometry(
    num_layers=28,
    hidden_size=1024,
    num_attention_heads=16,
    num_kv_heads=8,
    head_dim=128,
    intermediate_size=3072,
    vocab_size=151936,
)
_TINY: Final = DecoderGeometry(
    num_layers=4,
    hidden_size=256,
    num_attention_heads=4,
    num_kv_heads=2,
    head_dim=64,
    intermediate_size=768,
    vocab_size=16384,
)


def _one_block(target: DecoderGeometry, vocab_size: int) -> DecoderGeometry:
    """A single decoder layer with the target's widths (what MTP and EAGLE-3 heads use)."""
    return DecoderGeometry(
        num_layers=1,
        hidden_size=target.hidden_size,
        num_attention_heads=target.num_attention_heads,
        num_kv_heads=target.num_kv_heads,
        head_dim=target.head_dim,
        intermediate_size=target.intermediate_size,
        vocab_size=vocab_size,
    )


def _drafters(target: DecoderGeometry, eagle_vocab: int, small: DecoderGeometry) -> dict[str, Any]:
    return {
        "mtp": DrafterGeometry("mtp", _one_block(target, target.vocab_size)),
        "eagle3": DrafterGeometry("eagle3", _one_block(target, target.vocab_size), eagle_vocab),
        "draft_model": DrafterGeometry("draft_model", small),
    }


PRESETS: Final = {
    "qwen3-0.6b": Preset(
        "qwen3-0.6b",
        _QWEN3_06B,
        _drafters(
            _QWEN3_06B,
            32000,
            DecoderGeometry(4, 512, 8, 4, 64, 1536, _QWEN3_06B.vocab_size),
        ),
    ),
    "tiny": Preset(
        "tiny",
        _TINY,
        _drafters(_TINY, 4096, DecoderGeometry(1, 128, 2, 1, 64, 384, _TINY.vocab_size)),
        Grid((1, 2, 3, 4), (1, 4, 8), (256, 1024), repetitions=3),
    ),
}


def get_preset(name: str) -> Preset:
    """The preset called ``name``; an unknown name is a ConfigError listing the presets."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(
            f"record.preset: unknown preset {name!r}; allowed: {', '.join(sorted(PRESETS))}"
        ) from None


def get_drafter(preset: Preset, kind: str) -> DrafterGeometry:
    if kind not in preset.drafters:
        raise ConfigError(
            f"record.drafter: unknown drafter {kind!r}; allowed: {', '.join(DRAFTER_KINDS)}"
        )
    return preset.drafters[kind]
