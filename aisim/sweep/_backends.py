"""Where sweep points run: a local process pool, or Ray (a local instance or a cluster).

Both take the same ``Task`` list and call ``on_row(point, row)`` in the calling process as rows
arrive (in completion order; the caller orders them). Tasks carry configs, never simulators.
On Ray every trace file the points read is put into the object store once and each worker
process writes it to a local cache file once, so a cluster node needs no copy of the trace.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aisim.errors import ConfigError
from aisim.sweep._evaluate import evaluate_point

RowCallback = Callable[[int, dict[str, Any]], None]
BACKENDS = ("pool", "ray")


class Task:
    """One point to evaluate: its index in the sweep and its full replay config."""

    def __init__(self, point: int, config: dict[str, Any]) -> None:
        self.point = point
        self.config = config


def run_tasks(
    tasks: list[Task],
    base_dir: str,
    slos: dict[str, dict[str, float]],
    on_row: RowCallback,
    *,
    backend: str,
    workers: int | None,
    address: str | None,
) -> None:
    if backend == "pool":
        if address is not None:
            raise ConfigError("--address: only for --backend ray")
        _run_pool(tasks, base_dir, slos, on_row, workers)
    elif backend == "ray":
        _run_ray(tasks, base_dir, slos, on_row, workers, address)
    else:
        raise ConfigError(f"backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


def _run_pool(
    tasks: list[Task],
    base_dir: str,
    slos: dict[str, dict[str, float]],
    on_row: RowCallback,
    workers: int | None,
) -> None:
    count = workers if workers is not None else default_workers()
    if count < 1:
        raise ConfigError(f"--workers: expected an integer >= 1, got {count}")
    if count == 1 or len(tasks) <= 1:
        for task in tasks:
            on_row(task.point, evaluate_point(task.config, base_dir, slos))
        return
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    # spawn: a fresh interpreter per worker (fork is unsafe beside threads, e.g. a progress bar).
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(count, len(tasks)), mp_context=context) as pool:
        pending: dict[Future[dict[str, Any]], int] = {
            pool.submit(evaluate_point, task.config, base_dir, slos): task.point for task in tasks
        }
        try:
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: pending[f]):
                    on_row(pending.pop(future), future.result())
        except BaseException:
            for future in pending:
                future.cancel()
            raise


def _run_ray(
    tasks: list[Task],
    base_dir: str,
    slos: dict[str, dict[str, float]],
    on_row: RowCallback,
    workers: int | None,
    address: str | None,
) -> None:
    from aisim._extras import import_optional

    ray: Any = import_optional("ray", "aisim sweep --backend ray")
    if not ray.is_initialized():
        if address is None:
            ray.init(
                num_cpus=workers if workers is not None else default_workers(),
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    evaluate = ray.remote(num_cpus=1)(_evaluate_with_files)
    shipped: dict[str, Any] = {}
    pending: dict[Any, int] = {}
    for task in tasks:
        files: dict[str, Any] = {}
        path = trace_path(task.config, base_dir)
        if path is not None and path.is_file():
            key = str(path)
            if key not in shipped:
                shipped[key] = ray.put((path.name, path.read_bytes()))
            files[key] = shipped[key]
        pending[evaluate.remote(task.config, base_dir, slos, files)] = task.point
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                on_row(pending.pop(ref), ray.get(ref))
    except BaseException:
        for ref in pending:
            ray.cancel(ref)
        raise


def trace_path(config: dict[str, Any], base_dir: str) -> Path | None:
    """The trace file a point's traffic reads, resolved, or None (synthetic/inline traffic)."""
    traffic = config.get("traffic")
    source = traffic.get("source") if isinstance(traffic, dict) else None
    if not isinstance(source, dict) or not isinstance(source.get("path"), str):
        return None
    path = Path(source["path"])
    return path if path.is_absolute() else Path(base_dir) / path


def _evaluate_with_files(
    config: dict[str, Any],
    base_dir: str,
    slos: dict[str, dict[str, float]],
    files: dict[str, Any],
) -> dict[str, Any]:
    """The Ray task body: fetch the shipped trace (once per worker process), point the config
    at the local copy, evaluate."""
    import ray

    for original, ref in files.items():
        name, data = ray.get(ref)
        local = _local_copy(name, data)
        if trace_path(config, base_dir) == Path(original):
            config = {**config, "traffic": {**config["traffic"]}}
            config["traffic"]["source"] = {**config["traffic"]["source"], "path": str(local)}
    return evaluate_point(config, base_dir, slos)


def _local_copy(name: str, data: bytes) -> Path:
    digest = hashlib.sha256(data).hexdigest()[:32]
    target = Path(tempfile.gettempdir()) / "aisim-sweep-traces" / digest / name
    if not target.is_file():
        from aisim._io import atomic_write_bytes

        atomic_write_bytes(target, data, overwrite=True)
    return target
