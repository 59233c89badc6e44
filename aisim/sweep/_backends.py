"""Where sweep points run: a local process pool, or Ray (a local instance or a cluster).

Both take the same ``Task`` list and call ``on_row(point, row)`` in the calling process as rows
arrive (in completion order; the caller orders them). Tasks carry configs, never simulators.

Every trace file the points read is read once by the driver and shipped once per worker (a pool
worker receives it when it starts) or once per node (Ray's object store); points replay it
*pinned* (``aisim/traffic/_trace_cache.py``): no point reads or hashes the file, and all see the
content the sweep started with. On the pool, ``workers`` N >= 2 starts N helper processes that
evaluate every point while the calling process only feeds them and writes the rows
(``_run_pool`` says why); ``--workers 1`` evaluates in the calling process.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from aisim.errors import ConfigError, SimulationError
from aisim.sweep._evaluate import evaluate_point
from aisim.traffic import TRACES, Contents, read_contents

RowCallback = Callable[[int, dict[str, Any]], None]
BACKENDS = ("pool", "ray")
#: Points queued per helper process. While many remain, four: a helper runs on while this
#: process writes point files or waits for the scheduler on a loaded host (a 200-request point
#: is ~15 ms compiled, shorter than a scheduler wait). For the last ones, two (one running, one
#: ready), so no helper finishes more than a point after the others.
IN_FLIGHT_PER_WORKER: Final = 4
IN_FLIGHT_AT_THE_END: Final = 2
#: Modules a ``forkserver`` imports once, so each helper it forks starts with them imported.
FORKSERVER_PRELOAD: Final = ("aisim.sweep._backends", "aisim.sweep._evaluate", "aisim.config")


class Task:
    """One point to evaluate: its index in the sweep and its full replay config; ``draw``: a
    Monte Carlo replica's sampled inputs (``aisim.uncertainty``), None for a plain point."""

    def __init__(self, point: int, config: dict[str, Any], draw: Any = None) -> None:
        self.point = point
        self.config = config
        self.draw = draw


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
    """Points on ``workers`` processes: with 1 (or one point) in this process, else on
    ``workers`` helper processes that this process feeds.

    Each helper has its own pipe and a few points queued in it (``IN_FLIGHT_...``); this process
    waits for rows, takes every row a helper has sent, tops its queue up, and passes the rows
    on (``on_row`` writes the point file and draws the progress bar). It evaluates no point
    itself: when it did (N - 1 helpers beside it), its own points, every point file's write and
    fsync (~0.7 CPU-ms and 1-5 ms of waiting each) and the progress bar sat on one process,
    which took one row per helper between two points of its own, so a helper was fed no faster
    than that process ran and slept 0.6-0.9 s of a 200-point sweep (docs/sweep.md, "Figures").
    Points are not fed by a thread: there is nothing else for this process to do meanwhile,
    and helpers fork only while no other thread runs (``start_method``).
    """
    count = workers if workers is not None else default_workers()
    if count < 1:
        raise ConfigError(f"--workers: expected an integer >= 1, got {count}")
    traces = trace_contents(tasks, base_dir)
    if min(count, len(tasks)) <= 1:
        for task in tasks:
            on_row(task.point, evaluate_pinned(task.config, base_dir, slos, traces, task.draw))
        return
    queue = deque(tasks)
    helpers = _start_helpers(min(count, len(tasks)), traces, base_dir, slos)
    try:
        while queue or any(helper.queued for helper in helpers):
            ending = len(queue) <= IN_FLIGHT_PER_WORKER * len(helpers)
            for helper in helpers:
                helper.top_up(queue, IN_FLIGHT_AT_THE_END if ending else IN_FLIGHT_PER_WORKER)
            _collect(helpers, on_row)
    finally:
        for helper in helpers:
            helper.stop()


def _collect(helpers: list[_Helper], on_row: RowCallback) -> None:
    """Wait until a helper sends a row, then pass on every row the helpers have sent."""
    from multiprocessing.connection import wait

    busy = {helper.connection: helper for helper in helpers if helper.queued}
    for connection in wait(list(busy)):
        helper = busy[connection]
        while True:
            point, row = helper.receive()
            on_row(point, row)
            if not helper.queued or not helper.connection.poll():
                break


class _Helper:
    """One helper process, its end of the pipe and the points queued in it."""

    def __init__(self, process: Any, connection: Any) -> None:
        self.process = process
        self.connection = connection
        self.queued: deque[int] = deque()

    def greet(self, greeting: bytes) -> None:
        """Send the traces (pickled once for all helpers): the helper's first message. A trace
        larger than the pipe's buffer makes this wait until the helper reads it, so every
        helper is started before the first is greeted."""
        try:
            self.connection.send_bytes(greeting)
        except OSError:
            raise self._exited() from None

    def top_up(self, queue: deque[Task], depth: int) -> None:
        while queue and len(self.queued) < depth:
            task = queue.popleft()
            self.queued.append(task.point)
            try:
                self.connection.send((task.point, task.config, task.draw))
            except OSError:
                raise self._exited() from None

    def receive(self) -> tuple[int, dict[str, Any]]:
        try:
            point, row, failure = self.connection.recv()
        except (EOFError, OSError):
            raise self._exited() from None
        if failure is not None:
            raise SimulationError(f"sweep: point {point} failed in a worker process: {failure}")
        self.queued.remove(point)
        return point, row

    def _exited(self) -> SimulationError:
        self.process.join(timeout=5)
        unfinished = f"point {self.queued[0]} unfinished" if self.queued else "no point done"
        return SimulationError(
            f"sweep: a worker process exited (exit code {self.process.exitcode}) with "
            f"{unfinished}; finished points are kept: run the sweep again with --out to resume"
        )

    def stop(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.connection.send(None)
        self.process.join(timeout=0 if self.queued else 5)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join()
        self.connection.close()


def _start_helpers(
    count: int, traces: dict[str, Contents], base_dir: str, slos: dict[str, dict[str, float]]
) -> list[_Helper]:
    import multiprocessing
    from multiprocessing.reduction import ForkingPickler

    method = start_method()
    context: Any = multiprocessing.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload(list(FORKSERVER_PRELOAD))
    started: list[_Helper] = []
    try:
        for _ in range(count):
            ours, theirs = context.Pipe(duplex=True)
            # A forked helper inherits this process's ends of every pipe so far, its own
            # included: it closes them, or it would never see the pipe close if we are killed.
            inherited = (
                [*(helper.connection for helper in started), ours] if method == "fork" else []
            )
            process = context.Process(
                target=_helper_main, args=(theirs, base_dir, slos, inherited), daemon=True
            )
            process.start()
            theirs.close()
            started.append(_Helper(process, ours))
        greeting = bytes(ForkingPickler.dumps(traces))
        for helper in started:
            helper.greet(greeting)
    except BaseException:
        for helper in started:
            helper.process.terminate()
            helper.process.join()
            helper.connection.close()
        raise
    return started


def start_method() -> str:
    """How helpers start: ``fork`` on Linux when no other Python thread runs (a thread holding
    a lock as we fork would leave it locked in the helper), so a helper starts at once with
    this process's modules imported and its traces parsed; else ``forkserver`` where there is
    one (POSIX): a server process started once per session imports aisim
    (``FORKSERVER_PRELOAD``) and forks each helper, so only the first sweep pays the import
    (0.3-0.5 CPU-s, about a tenth of a 200-point sweep on two cores); else ``spawn`` (a fresh
    interpreter per helper). From Python 3.12, which warns when a process with any other thread
    forks (native ones too, such as a BLAS pool), only a process with a single thread forks."""
    import multiprocessing
    import threading

    fork = sys.platform.startswith("linux") and threading.active_count() == 1
    if fork and sys.version_info >= (3, 12) and len(os.listdir("/proc/self/task")) != 1:
        fork = False
    if fork:
        return "fork"
    if "forkserver" in multiprocessing.get_all_start_methods():
        return "forkserver"
    return "spawn"


def _helper_main(
    connection: Any, base_dir: str, slos: dict[str, dict[str, float]], inherited: list[Any]
) -> None:
    """A helper process: receive the traces, then evaluate the points that arrive on
    ``connection`` until ``None`` (or the pipe closes: the calling process is gone).

    A forked helper first moves what it inherited out of the cyclic collector's reach
    (``gc.freeze``): a collection writes to every object it scans, which copies the page
    holding it (measured: 6,600 -> 1,500 page faults per 100 points of the bench sweep)."""
    gc.freeze()
    # A forked helper inherits the CLI's SIGTERM handler (aisim.cli.Terminated); terminate()
    # must simply end it.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for end in inherited:
        end.close()
    try:
        traces: dict[str, Contents] = connection.recv()
    except (EOFError, OSError, KeyboardInterrupt):
        return
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if message is None:
            return
        point, config, draw = message
        reply: tuple[int, dict[str, Any] | None, str | None]
        try:
            reply = (point, evaluate_pinned(config, base_dir, slos, traces, draw), None)
        except KeyboardInterrupt:
            return
        except Exception as exc:  # a bug, not bad input (that is an error row): say which
            reply = (point, None, f"{type(exc).__name__}: {exc}")
        try:
            connection.send(reply)
        except (OSError, KeyboardInterrupt):  # the calling process is gone or interrupted
            return


def trace_contents(tasks: list[Task], base_dir: str) -> dict[str, Contents]:
    """Each trace file the tasks read, read once: path -> (SHA-256, bytes). A file that cannot
    be read is left out (its points fail with the replay edge's own message)."""
    contents: dict[str, Contents] = {}
    for task in tasks:
        path = trace_path(task.config, base_dir)
        if path is None or str(path) in contents or not path.is_file():
            continue
        try:
            contents[str(path)] = read_contents(path)
        except ConfigError:
            continue
    return contents


def evaluate_pinned(
    config: dict[str, Any],
    base_dir: str,
    slos: dict[str, dict[str, float]],
    traces: dict[str, Contents],
    draw: Any = None,
) -> dict[str, Any]:
    """``evaluate_point`` with the sweep's trace contents pinned."""
    with TRACES.pinned(traces):
        return evaluate_point(config, base_dir, slos, draw)


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
    # Each trace once into the object store; a node fetches it once, its tasks read it there.
    shipped = {path: ray.put(item) for path, item in trace_contents(tasks, base_dir).items()}
    pending: dict[Any, int] = {}
    for task in tasks:
        path = trace_path(task.config, base_dir)
        files = {str(path): shipped[str(path)]} if str(path) in shipped else {}
        pending[evaluate.remote(task.config, base_dir, slos, files, task.draw)] = task.point
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
    draw: Any = None,
) -> dict[str, Any]:
    """The Ray task body: the shipped traces (object references) pinned, evaluate."""
    import ray

    return evaluate_pinned(
        config, base_dir, slos, {path: ray.get(ref) for path, ref in files.items()}, draw
    )
