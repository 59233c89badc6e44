"""``aisim.replay.run``: a validated plan in, ``ReplayResult`` out (not compiled: the summary
uses numpy, the result builds a pandas DataFrame on demand). Configs are the edge's job
(``aisim.run_replay``)."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aisim.errors import ConfigError
from aisim.replay._engine import Simulation, SimulationResult
from aisim.replay._outcome import REQUEST_COLUMNS, RequestRecord
from aisim.replay._plan import ReplayPlan
from aisim.replay._run_summary import RunSummary
from aisim.replay._sketch import Distribution
from aisim.replay._summary import distributions, request_column, request_columns, summarize

if TYPE_CHECKING:
    import pandas as pd

#: Takes finished requests' records in chunks, in traffic order.
RequestSink = Callable[[list[RequestRecord]], None]
#: Takes ``(request ids, times in ms, tokens)`` of emission events, in simulation order.
TokenRows = Callable[[list[str], list[float], list[int]], None]


class ReplayResult:
    """The outcome of one replay (read-only).

    ``run_summary``: the typed summary (``RunSummary``: counts, duration, throughput, latency
    statistics, SD statistics, the workers as they ran, the resolved configuration);
    ``summary`` / ``to_dict()``: its JSON form (``run_summary.to_dict()``), exactly what
    ``summary.json`` holds.
    ``columns``: one list per request field; ``column(name)``: one of them (a caller that
    needs a few columns does not pay for every one); ``requests``: the same as a pandas
    DataFrame (built on first access, ``aisim[qualify]``); all empty when the rows were
    streamed to a ``request_sink``. The columns are built from the request records on first
    access; each access hands out a copy, so changing it changes nothing here.
    ``tokens``: with ``per_token`` and no ``token_sink``, one list per column of the emission
    events (``request_id``, ``time_ms``, ``tokens``), else None. ``distributions``: the
    run-wide latency samples by statistic (``ttft``, ``time_to_second_token``, ``tpot``,
    ``e2e_latency``, ``itl``); ``distributions[name].to_sketch()`` is a mergeable
    ``QuantileSketch`` (to combine runs, e.g. the points of a sweep).
    """

    def __init__(
        self,
        summary: RunSummary,
        columns: dict[str, list[Any]] | None,
        tokens: dict[str, list[Any]] | None = None,
        distributions: dict[str, Distribution] | None = None,
        records: list[RequestRecord] | None = None,
    ) -> None:
        """``columns``: the request columns, or None to build them from ``records`` when first
        asked for."""
        self._summary = summary
        self._columns = columns
        self._records = records if records is not None else []
        self._tokens = tokens
        self._distributions = distributions if distributions is not None else {}
        self._frame: pd.DataFrame | None = None

    @property
    def tokens(self) -> dict[str, list[Any]] | None:
        if self._tokens is None:
            return None
        return {name: list(values) for name, values in self._tokens.items()}

    @property
    def distributions(self) -> dict[str, Distribution]:
        return dict(self._distributions)

    @property
    def run_summary(self) -> RunSummary:
        return self._summary

    @property
    def summary(self) -> dict[str, Any]:
        return self._summary.to_dict()

    @property
    def columns(self) -> dict[str, list[Any]]:
        return {name: list(values) for name, values in self._all_columns().items()}

    def column(self, name: str) -> list[Any]:
        """The request column ``name`` (one of ``REQUEST_COLUMNS``), a copy."""
        if name not in REQUEST_COLUMNS:
            raise KeyError(f"{name!r}: expected a request column ({', '.join(REQUEST_COLUMNS)})")
        if self._columns is not None:
            return list(self._columns[name])
        return request_column(self._records, name)

    def _all_columns(self) -> dict[str, list[Any]]:
        if self._columns is None:
            self._columns = request_columns(self._records)
        return self._columns

    def to_dict(self) -> dict[str, Any]:
        """The summary, JSON-ready (``canonical_json(result.to_dict())`` is ``summary.json``)."""
        return self._summary.to_dict()

    @property
    def requests(self) -> pd.DataFrame:
        if self._frame is None:
            from aisim._extras import import_optional

            pandas = import_optional("pandas", "ReplayResult.requests (a DataFrame)")
            self._frame = pandas.DataFrame(self._all_columns())
        return self._frame.copy()

    def __repr__(self) -> str:
        return (
            f"ReplayResult(completed={self._summary.completed_requests}/"
            f"{self._summary.total_requests}, duration_ms={self._summary.duration_ms:.3f})"
        )


def run(
    plan: ReplayPlan,
    description: dict[str, Any] | None = None,
    *,
    progress: Callable[[int, int, float], None] | None = None,
    progress_every: int = 50000,
    per_token: bool | None = None,
    request_sink: RequestSink | None = None,
    token_sink: TokenRows | None = None,
) -> ReplayResult:
    """Simulate a validated ``ReplayPlan``; ``description`` (the resolved configuration) goes
    into the summary as it is.

    ``per_token`` (default: the plan's, ``simulation.per_token``) keeps every emission event.
    ``request_sink`` / ``token_sink`` take the rows in chunks while the run goes (finished
    requests in traffic order / emission events in simulation order) instead of keeping them,
    so memory stays bounded; ``aisim replay`` writes them to parquet this way.

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
    keep_tokens = plan.per_token if per_token is None else per_token
    kept: dict[str, list[Any]] | None = None
    if keep_tokens and token_sink is None:
        kept = {"request_id": [], "time_ms": [], "tokens": []}

    def tokens(ids: list[str], times_ms: list[float], counts: list[int]) -> None:
        if token_sink is not None:
            token_sink(ids, times_ms, counts)
        elif kept is not None:
            kept["request_id"].extend(ids)
            kept["time_ms"].extend(times_ms)
            kept["tokens"].extend(counts)

    simulation = Simulation(
        plan, progress, progress_every, request_sink, tokens if keep_tokens else None, keep_tokens
    )
    result = _without_cyclic_gc(simulation)
    summary = summarize(result, description or {})
    return ReplayResult(summary, None, kept, distributions(result), result.log.records)


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
