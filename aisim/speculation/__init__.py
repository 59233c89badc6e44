"""Speculative-decoding semantics (docs/design.md#speculation): kinds, acceptance, identity.

Re-exports only: ``ResolvedSpeculation`` is the frozen result of resolving a speculation block
(``aisim.resolve_speculation``, at the config edge); ``AcceptanceProfile`` holds the acceptance
forms and their exact conversions; ``KINDS`` and ``ACCEPTANCE_KEYS`` name the kinds and forms.
"""

from __future__ import annotations

from aisim.speculation._acceptance import AcceptanceProfile
from aisim.speculation._resolved import ResolvedSpeculation
from aisim.speculation._schemes import ACCEPTANCE_KEYS, KINDS

__all__ = [
    "ACCEPTANCE_KEYS",
    "KINDS",
    "AcceptanceProfile",
    "ResolvedSpeculation",
]
