"""Sweeps (docs/sweep.md): many replays over axes of a base config, on a local process pool or
a Ray cluster, reduced to one row per point, the best point under SLOs, SD gains, and latency
percentiles pooled over groups of points (their sketches merged).

Not compiled: it validates with pydantic, runs processes and builds pandas frames.
"""

from __future__ import annotations

from aisim.sweep._merge import merge
from aisim.sweep._report import summarize, write_plots
from aisim.sweep._run import run

__all__ = ["merge", "run", "summarize", "write_plots"]
