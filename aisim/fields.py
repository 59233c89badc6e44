"""Checked readers for untrusted mappings (a parsed YAML/JSON document): each returns the typed
value or raises a one-line ``ConfigError`` naming the field path, the value and what is
allowed, never an ``AttributeError``/``TypeError``/``KeyError``. The harness reads its own
files (scenarios, snapshots, calibration artefacts) with them, under the same error contract
as the config edge. The implementation is ``aisim._fields``; this module is its public face
(``docs/api.md``). Not compiled.
"""

from __future__ import annotations

from aisim._fields import (
    as_bool,
    as_float,
    as_int,
    as_list,
    as_mapping,
    as_str,
    join_path,
    reject_unknown,
)

__all__ = [
    "as_bool",
    "as_float",
    "as_int",
    "as_list",
    "as_mapping",
    "as_str",
    "join_path",
    "reject_unknown",
]
