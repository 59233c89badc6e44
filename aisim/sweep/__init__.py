"""Sweeps (docs/sweep.md): many replays over axes of a base config, on a local process pool or
a Ray cluster, reduced to one row per point, the best point under SLOs, SD gains, and latency
percentiles pooled over groups of points (their sketches merged).

Not compiled: it validates with pydantic, runs processes and builds pandas frames.
"""

from __future__ import annotations

from aisim.sweep._backends import Task, run_tasks, start_method
from aisim.sweep._evaluate import evaluate_point, point_metrics
from aisim.sweep._merge import merge, render_merged, summarize_merged
from aisim.sweep._report import plot_images, render_text, summarize, write_plots
from aisim.sweep._run import expand, run

__all__ = [
    "merge",
    "render_merged",
    "render_text",
    "run",
    "summarize",
    "summarize_merged",
    "write_plots",
    "plot_images",
    "Task",
    "expand",
    "point_metrics",
    "run_tasks",
    "evaluate_point",
    "start_method",
]
