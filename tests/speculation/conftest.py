"""Draft configs shared by the speculation tests (fresh copies per test, from the one home of
draft geometries: qualification/cases/drafts/)."""

from __future__ import annotations

from typing import Any

import pytest

from qualification.cases._drafts import draft_config


@pytest.fixture
def eagle3_draft() -> dict[str, Any]:
    """The published EAGLE-3 head for Llama-3.1-8B: 1 layer, hidden 4096, draft vocab 32000."""
    return draft_config("eagle3_llama_3.1_8b")


@pytest.fixture
def block_draft() -> dict[str, Any]:
    """A block drafter for a Qwen3-8B target: 5 layers, hidden 4096, block_size 16."""
    return draft_config("dflash_qwen3_8b")


@pytest.fixture
def small_draft() -> dict[str, Any]:
    """Qwen3-0.6B geometry, as a separate draft model."""
    return draft_config("qwen3_0.6b")
