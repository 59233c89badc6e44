"""Replay (docs/design.md#replay): a deterministic discrete-event simulation of vLLM-like and SGLang-like
serving with speculative decoding.

``run(config) -> ReplayResult`` is the entry point; the simulation core is compiled by mypyc,
``run`` and the result (file reading, pandas) are not.
"""

from __future__ import annotations

from aisim.replay._run import ReplayResult, run

__all__ = ["ReplayResult", "run"]
