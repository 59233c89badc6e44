"""Probe: does work on the *other* core slow the engine's core? (issue 23, "Why served steps
cost more than grid steps").

Run under ``taskset -c 1`` while every other process is fenced onto CPU 0 (evidence/README.md):
this process times a fixed float32 workload shaped like a small Llama decode step (M = 4 rows
through the weights of ``--layers`` x ``--hidden`` layers and a vocabulary head, the way a
decode step streams its weights) in process CPU time, while a child pinned to CPU 0 runs, in
turn, nothing extra (``idle``: only the host's own work), an ALU spin (``spin``: integer
arithmetic in registers, no memory traffic) and a memory stream (``stream``: copies of
buffers far larger than the L3 cache). Phases alternate (idle, spin, idle, stream, ...) so a
slow drift of the host shows up in the idle phases. Printed per phase kind: median CPU ms per
workload pass and its ratio to the idle phases' median. A ratio above 1 for ``spin`` says the
two vCPUs share an execution core (a hyperthread pair outside the VM); above 1 for ``stream``
says they share L3 or memory bandwidth. With ``--load-nice -15`` (root) the load takes most of
CPU 0 from the host's other work there: a phase then also says what removing that work does.

Usage: ``taskset -c 1 python -m qualification.engine.probe_host [--seconds 8] [--rounds 3]``.
Needs torch (the engine's environment).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import time
from typing import Any


def _load(kind: str, stop: Any, nice: int) -> None:
    """The other core's extra work: ``spin`` (registers only) or ``stream`` (memory)."""
    os.sched_setaffinity(0, {0})
    if nice:
        os.nice(nice)  # below 0 (root): take CPU 0 from the host's other work
    if kind == "spin":
        value = 1
        while not stop.is_set():
            for _ in range(100_000):
                value = (value * 1103515245 + 12345) & 0xFFFFFFFF
    else:
        import numpy as np

        source = np.ones(64 * 1024 * 1024 // 8)  # 64 MiB, twice the L3 cache
        target = np.empty_like(source)
        while not stop.is_set():
            np.copyto(target, source)
            np.copyto(source, target)


def _workload(layers: int, hidden: int, vocab: int) -> Any:
    import torch

    torch.set_num_threads(1)
    ffn = int(hidden * 2.6875)
    weights = [
        (
            torch.randn(3 * hidden, hidden),
            torch.randn(hidden, hidden),
            torch.randn(2 * ffn, hidden),
            torch.randn(hidden, ffn),
        )
        for _ in range(layers)
    ]
    head = torch.randn(vocab, hidden)
    x = torch.randn(4, hidden)

    def run() -> None:
        h = x
        for qkv, out, up, down in weights:
            h = torch.nn.functional.linear(torch.nn.functional.linear(h, qkv)[:, :hidden], out)
            g = torch.nn.functional.linear(h, up)
            h = torch.nn.functional.linear(torch.nn.functional.silu(g[:, :ffn]) * g[:, ffn:], down)
        torch.nn.functional.linear(h, head)

    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qualification.engine.probe_host")
    parser.add_argument("--seconds", type=float, default=8.0, help="per phase")
    parser.add_argument("--rounds", type=int, default=3, help="idle/spin/idle/stream cycles")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=8192)
    parser.add_argument(
        "--load-nice", type=int, default=0, help="niceness increment of the CPU-0 load"
    )
    parser.add_argument(
        "--phases",
        default="idle,spin,idle,stream",
        help="one round's phases in order (idle, spin, stream); 'idle' alone times the host's "
        "own speed from window to window with nothing of ours on the other core",
    )
    args = parser.parse_args(argv)
    phases = [kind.strip() for kind in args.phases.split(",") if kind.strip()]
    if not set(phases) <= {"idle", "spin", "stream"} or "idle" not in phases:
        parser.error(
            f"--phases: {args.phases!r}: each phase is one of idle, spin, stream, and one is "
            "idle (the reference)"
        )
    run = _workload(args.layers, args.hidden, args.vocab)
    for _ in range(20):
        run()
    times: dict[str, list[float]] = {"idle": [], "spin": [], "stream": []}
    context = multiprocessing.get_context("fork")
    for _ in range(args.rounds):
        for kind in phases:
            stop = context.Event()
            child = None
            if kind != "idle":
                child = context.Process(
                    target=_load, args=(kind, stop, args.load_nice), daemon=True
                )
                child.start()
                time.sleep(0.5)
            samples = []
            end = time.monotonic() + args.seconds
            while time.monotonic() < end:
                start = time.process_time_ns()
                run()
                samples.append((time.process_time_ns() - start) / 1e6)
            stop.set()
            if child is not None:
                child.join(timeout=5)
            times[kind].append(statistics.median(samples))
            print(f"{kind:6s} median {statistics.median(samples):.3f} cpu-ms over {len(samples)}")
    idle = statistics.median(times["idle"])
    for kind, values in times.items():
        if not values:
            continue
        ratio = statistics.median(values) / idle
        spread = ", ".join(f"{v:.3f}" for v in values)
        print(f"{kind:6s}: per phase {spread} cpu-ms; median / idle {ratio:.3f}")
    windows = times["idle"]
    print(
        f"idle windows: {len(windows)}; slowest / fastest {max(windows) / min(windows):.3f}; "
        f"each / their median {min(windows) / idle:.3f}..{max(windows) / idle:.3f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
