"""``aisim.replay.run``: config in, ``ReplayResult`` out (not compiled: reads files, builds a
pandas DataFrame on demand)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aisim.replay._engine import Simulation
from aisim.replay._summary import request_columns, summarize

if TYPE_CHECKING:
    import pandas as pd


class ReplayResult:
    """``summary``: a JSON-ready dict (counts, duration, throughput, latency statistics, SD
    statistics, the resolved configuration). ``requests``: a pandas DataFrame with one row per
    request (built on first access). ``columns``: the same data as plain lists."""

    def __init__(self, summary: dict[str, Any], columns: dict[str, list[Any]]) -> None:
        self.summary = summary
        self.columns = columns
        self._frame: pd.DataFrame | None = None

    @property
    def requests(self) -> pd.DataFrame:
        if self._frame is None:
            from aisim._extras import import_optional

            pandas = import_optional("pandas", "ReplayResult.requests (a DataFrame)")
            self._frame = pandas.DataFrame(self.columns)
        return self._frame

    def __repr__(self) -> str:
        return (
            f"ReplayResult(completed={self.summary['completed_requests']}/"
            f"{self.summary['total_requests']}, duration_ms={self.summary['duration_ms']:.3f})"
        )


def run(
    config: object,
    *,
    progress: Callable[[int, int, float], None] | None = None,
    progress_every: int = 50000,
    base_dir: Path | None = None,
) -> ReplayResult:
    """Replay ``config`` (a mapping of the docs/design.md#replay shape, or a YAML/JSON file path; relative
    trace paths in a file resolve against the file's folder, in a mapping against ``base_dir``,
    default the working directory).

    ``progress(events, completed_requests, now_ms)`` is called every ``progress_every`` events.
    Raises ``ConfigError`` for invalid configs (before the first event) and ``SimulationError``
    if a run makes no progress.
    """
    from aisim.config._replay import build_plan

    if isinstance(config, (str, os.PathLike)):
        from aisim._io import load_config_file

        source = config
        config = load_config_file(source, "config")
        base_dir = Path(source).resolve().parent
    plan, description = build_plan(config, base_dir)
    result = Simulation(plan, progress, progress_every).run()
    columns = request_columns(result)
    return ReplayResult(summarize(result, columns, description), columns)
