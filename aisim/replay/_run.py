"""``aisim.replay.run``: a validated plan in, ``ReplayResult`` out (not compiled: the summary
uses numpy, the result builds a pandas DataFrame on demand). Configs are the edge's job
(``aisim.run_replay``)."""

from __future__ import annotations

import copy
import gc
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aisim.errors import ConfigError
from aisim.replay._engine import Simulation, SimulationResult
from aisim.replay._plan import ReplayPlan
from aisim.replay._summary import request_columns, summarize

if TYPE_CHECKING:
    import pandas as pd


class ReplayResult:
    """The outcome of one replay (read-only).

    ``summary`` / ``to_dict()``: a JSON-ready dict (counts, duration, throughput, latency
    statistics, SD statistics, the resolved configuration), exactly what ``summary.json`` holds.
    ``columns``: one list per request field; ``requests``: the same as a pandas DataFrame (built
    on first access, ``aisim[qualify]``). Each access hands out a copy, so changing it changes
    nothing here.
    """

    def __init__(self, summary: dict[str, Any], columns: dict[str, list[Any]]) -> None:
        self._summary = summary
        self._columns = columns
        self._frame: pd.DataFrame | None = None

    @property
    def summary(self) -> dict[str, Any]:
        return copy.deepcopy(self._summary)

    @property
    def columns(self) -> dict[str, list[Any]]:
        return {name: list(values) for name, values in self._columns.items()}

    def to_dict(self) -> dict[str, Any]:
        """The summary, JSON-ready (``canonical_json(result.to_dict())`` is ``summary.json``)."""
        return copy.deepcopy(self._summary)

    @property
    def requests(self) -> pd.DataFrame:
        if self._frame is None:
            from aisim._extras import import_optional

            pandas = import_optional("pandas", "ReplayResult.requests (a DataFrame)")
            self._frame = pandas.DataFrame(self._columns)
        return self._frame.copy()

    def __repr__(self) -> str:
        return (
            f"ReplayResult(completed={self._summary['completed_requests']}/"
            f"{self._summary['total_requests']}, duration_ms={self._summary['duration_ms']:.3f})"
        )


def run(
    plan: ReplayPlan,
    description: dict[str, Any] | None = None,
    *,
    progress: Callable[[int, int, float], None] | None = None,
    progress_every: int = 50000,
) -> ReplayResult:
    """Simulate a validated ``ReplayPlan``; ``description`` (the resolved configuration) goes
    into the summary as it is.

    A config (mapping or YAML/JSON file) is replayed by ``aisim.run_replay(config)``, which
    validates it at the config edge and builds the plan; this core entry point never reads
    files or parses user input. ``progress(events, completed_requests, now_ms)`` is called every
    ``progress_every`` events; ``SimulationError`` if a run makes no progress.
    """
    if not isinstance(plan, ReplayPlan):
        raise ConfigError(
            f"aisim.replay.run takes a ReplayPlan, got {type(plan).__name__}; replay a config "
            "(a mapping or a YAML/JSON file) with aisim.run_replay(config)"
        )
    result = _without_cyclic_gc(Simulation(plan, progress, progress_every))
    columns = request_columns(result)
    return ReplayResult(summarize(result, columns, description or {}), columns)


def _without_cyclic_gc(simulation: Simulation) -> SimulationResult:
    """Run with Python's cyclic garbage collector paused (restored afterwards).

    The simulation allocates hundreds of thousands of short-lived containers (heap entries, pass
    records, cache keys) and keeps thousands of long-lived ones (requests, cache entries), so the
    collector kept rescanning the live heap: 25-30% of a compiled replay's CPU time (measured on
    the bench trace). Its objects form no reference cycles (requests, holdings and cache entries
    point one way), so reference counting frees what the collector would; outputs are unchanged.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return simulation.run()
    finally:
        if enabled:
            gc.enable()
