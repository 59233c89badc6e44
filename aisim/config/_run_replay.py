"""``run_replay(config)``: a replay config (mapping or YAML/JSON file) validated at the edge,
simulated by the core (``aisim.replay.run``), returned as a ``ReplayResult``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from aisim.config._replay import build_plan
from aisim.replay import ReplayResult, run
from aisim.replay._run import RequestSink, TokenRows


def run_replay(
    config: object,
    *,
    progress: Callable[[int, int, float], None] | None = None,
    progress_every: int = 50000,
    base_dir: Path | None = None,
    per_token: bool | None = None,
    request_sink: RequestSink | None = None,
    token_sink: TokenRows | None = None,
) -> ReplayResult:
    """Replay ``config`` (a mapping of the docs/design.md#replay shape, or a YAML/JSON file path;
    relative trace paths in a file resolve against the file's folder, in a mapping against
    ``base_dir``, default the working directory).

    ``progress(events, completed_requests, now_ms)`` is called every ``progress_every`` events;
    ``per_token``, ``request_sink`` and ``token_sink`` stream the outputs (``aisim.replay.run``).
    Raises ``ConfigError`` for invalid configs (before the first event) and ``SimulationError``
    if a run makes no progress.
    """
    if isinstance(config, (str, os.PathLike)):
        from aisim._io import load_config_file

        source = config
        config = load_config_file(source, "config")
        base_dir = Path(source).resolve().parent
    plan, description = build_plan(config, base_dir)
    return run(
        plan,
        description,
        progress=progress,
        progress_every=progress_every,
        per_token=per_token,
        request_sink=request_sink,
        token_sink=token_sink,
    )
