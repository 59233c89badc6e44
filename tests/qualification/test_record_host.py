"""The recorder's host description: CPU model and flags parsed from /proc/cpuinfo or lscpu."""

from __future__ import annotations

import pytest

from aisim.errors import ConfigError
from qualification.record._host import check_source_tree, parse_cpuinfo, parse_lscpu

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu vme avx2 avx512f sse4_2

processor\t: 1
model name\t: other
flags\t\t: fpu
"""

ARM_CPUINFO = """processor\t: 0
Features\t: fp asimd evtstrm

Hardware\t: BCM2835
"""

LSCPU = """Architecture:            x86_64
Model name:              Intel(R) Xeon(R) Processor @ 2.80GHz
Flags:                   sse avx512f amx_tile
"""


def test_cpuinfo_gives_the_first_processors_model_and_sorted_flags() -> None:
    assert parse_cpuinfo(CPUINFO) == {
        "model": "AMD EPYC 7B13",
        "flags": ["avx2", "avx512f", "fpu", "sse4_2", "vme"],
    }


def test_cpuinfo_on_arm_reads_features() -> None:
    assert parse_cpuinfo(ARM_CPUINFO) == {"model": None, "flags": ["asimd", "evtstrm", "fp"]}


def test_lscpu_fallback() -> None:
    assert parse_lscpu(LSCPU) == {
        "model": "Intel(R) Xeon(R) Processor @ 2.80GHz",
        "flags": ["amx_tile", "avx512f", "sse"],
    }


def test_source_tree_state_is_checked() -> None:
    clean = {"revision": "abc", "dirty": False}
    assert check_source_tree(clean, False) == {
        "revision": "abc",
        "dirty": False,
        "allow_dirty": False,
    }
    dirty = {"revision": "abc", "dirty": True}
    with pytest.raises(ConfigError, match="^record: the source tree at abc has uncommitted"):
        check_source_tree(dirty, False)
    assert check_source_tree(dirty, True)["allow_dirty"] is True
    # Outside a git checkout the state is unknown, not dirty: recording proceeds and says so.
    unknown = {"revision": "unknown", "dirty": None}
    assert check_source_tree(unknown, False)["dirty"] is None
