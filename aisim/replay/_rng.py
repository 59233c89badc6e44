"""A small seeded random stream (xoshiro128** on 32-bit words) owned by whoever draws from it.

Why not ``random``: its global state would couple simulations, and why not numpy: per-draw numpy
calls are slow in compiled loops. Every intermediate stays below 2**63 (32-bit words, multiplies
by 5 and 9), so mypyc keeps it in native integers and both builds draw bit-identical numbers.
Seeding uses SplitMix64 (wider arithmetic, done once per stream).
"""

from __future__ import annotations

import math
from typing import Final

_MASK32: Final = 0xFFFFFFFF
_MASK64: Final = 0xFFFFFFFFFFFFFFFF
_GOLDEN64: Final = 0x9E3779B97F4A7C15
_TWO_POW_53: Final = 9007199254740992.0


def _splitmix64(state: int) -> int:
    """One SplitMix64 output for ``state`` (an integer in [0, 2**64))."""
    z = (state + _GOLDEN64) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


class RandomStream:
    """Independent stream ``stream`` of generator ``seed``: same (seed, stream) => same draws."""

    def __init__(self, seed: int, stream: int = 0) -> None:
        state = (seed * 0x100000001B3 + stream * _GOLDEN64) & _MASK64
        words: list[int] = []
        for _ in range(2):
            state = (state + _GOLDEN64) & _MASK64
            mixed = _splitmix64(state)
            words.append(mixed & _MASK32)
            words.append(mixed >> 32)
        if words[0] == 0 and words[1] == 0 and words[2] == 0 and words[3] == 0:
            words[0] = 1
        self._s0: int = words[0]
        self._s1: int = words[1]
        self._s2: int = words[2]
        self._s3: int = words[3]

    def next_u32(self) -> int:
        """A uniform integer in [0, 2**32)."""
        s0 = self._s0
        s1 = self._s1
        s2 = self._s2
        s3 = self._s3
        # x * 5 and x * 9 as shifts and adds: mypyc compiles integer multiplication to a call
        # (~4x slower per draw, measured), shifts and adds inline.
        scaled = ((s1 << 2) + s1) & _MASK32
        rotated = ((scaled << 7) & _MASK32) | (scaled >> 25)
        result = ((rotated << 3) + rotated) & _MASK32
        shifted = (s1 << 9) & _MASK32
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= shifted
        s3 = ((s3 << 11) & _MASK32) | (s3 >> 21)
        self._s0 = s0
        self._s1 = s1
        self._s2 = s2
        self._s3 = s3
        return result

    def uniform(self) -> float:
        """A uniform float in [0, 1) with 53 random bits."""
        high = self.next_u32() >> 5
        low = self.next_u32() >> 6
        return (high * 67108864 + low) / _TWO_POW_53

    def exponential(self, mean: float) -> float:
        """An exponential draw with the given mean (inverse transform; never infinite)."""
        return -mean * math.log(1.0 - self.uniform())

    def normal(self, mean: float, std: float) -> float:
        """A normal draw (Box-Muller, one value per call for a simple, fixed draw count)."""
        radius = math.sqrt(-2.0 * math.log(1.0 - self.uniform()))
        angle = 2.0 * math.pi * self.uniform()
        return mean + std * radius * math.cos(angle)

    def integer(self, low: int, high: int) -> int:
        """A uniform integer in [low, high] (inclusive; span below 2**32)."""
        span = high - low + 1
        return low + int(self.uniform() * span)
