"""Speculative-decoding configuration semantics (SPEC §1-2): kinds, acceptance, identity.

Re-exports only: ``resolve_speculation`` turns a canonical or legacy speculation block into a
frozen ``ResolvedSpeculation``; ``AcceptanceProfile`` holds the acceptance forms and their exact
conversions.
"""

from __future__ import annotations

from aisim.speculation._acceptance import AcceptanceProfile
from aisim.speculation._resolve import ACCEPTANCE_KEYS, resolve_speculation
from aisim.speculation._resolved import ResolvedSpeculation
from aisim.speculation._schemes import KINDS

__all__ = [
    "ACCEPTANCE_KEYS",
    "KINDS",
    "AcceptanceProfile",
    "ResolvedSpeculation",
    "resolve_speculation",
]
