"""Replay (docs/design.md#replay): a deterministic discrete-event simulation of vLLM-like and SGLang-like
serving with speculative decoding.

``run(plan) -> ReplayResult`` simulates a validated ``ReplayPlan``; a config (mapping or file)
is replayed by ``aisim.run_replay(config)``, which validates it at the config edge. The
simulation core is compiled by mypyc; ``run`` and the result (numpy summary, pandas) are not.
"""

from __future__ import annotations

from aisim.replay._run import ReplayResult, run
from aisim.replay._sketch import QuantileSketch

__all__ = ["QuantileSketch", "ReplayResult", "run"]
