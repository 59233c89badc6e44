"""aisim's qualification harness: frozen-golden parity, boundary-probe strategies and the
prediction-regression gate (SPEC §5).

Subpackages: ``qualification.cases`` (the declarative case matrix, one suite per capability),
``qualification.parity`` (goldens, comparison, the update command, the syrupy extension),
``qualification.gate`` (``aisim snapshot`` / ``aisim compare``), ``qualification.probes``
(shared hypothesis strategies).
"""

from __future__ import annotations

__all__: list[str] = []
