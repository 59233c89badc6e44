"""Timing clocks: process CPU time on CPU (primary) with wall time beside it; CUDA events on GPU.

Process CPU time with one torch thread is the metric that survives a shared host (measured here:
~3 % CV within a run against ~25 % for wall time). On CUDA the primary metric is device time
between events, which is wall time on the device.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Lap:
    """Milliseconds between consecutive marks: ``primary`` (cpu or device) and host ``wall``."""

    primary_ms: tuple[float, ...]
    wall_ms: tuple[float, ...]


class Clock:
    """Mark points in a sequence of work and read the intervals between them.

    ``metric`` is ``"cpu"`` (process CPU time) or ``"wall"`` (CUDA events);
    ``clock_name`` names the exact source for the sidecar.
    """

    def __init__(self, device: str) -> None:
        self.cuda = device.startswith("cuda")
        self.metric = "wall" if self.cuda else "cpu"
        self.clock_name = "cuda-events" if self.cuda else "process_time_ns"
        self._cpu: list[int] = []
        self._wall: list[int] = []
        self._events: list[torch.cuda.Event] = []

    def start(self) -> None:
        self._cpu, self._wall, self._events = [], [], []
        if self.cuda:
            torch.cuda.synchronize()
        self.mark()

    def mark(self) -> None:
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            event.record()
            self._events.append(event)
        self._cpu.append(time.process_time_ns())
        self._wall.append(time.perf_counter_ns())

    def stop(self) -> Lap:
        """Mark the end, wait for the device, and return every interval."""
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            event.record()
            self._events.append(event)
            torch.cuda.synchronize()
        self._cpu.append(time.process_time_ns())
        self._wall.append(time.perf_counter_ns())
        wall = tuple((b - a) / 1e6 for a, b in itertools.pairwise(self._wall))
        if self.cuda:
            events = self._events
            primary = tuple(float(a.elapsed_time(b)) for a, b in itertools.pairwise(events))
        else:
            primary = tuple((b - a) / 1e6 for a, b in itertools.pairwise(self._cpu))
        return Lap(primary, wall)
