"""aisim's qualification harness: how we know the answers are right (docs/qualification.md).

Subpackages:

* ``qualification.cli``: its ``aisim`` subcommands (``snapshot``, ``compare``, ``record``,
  ``qualify``), found by ``aisim`` through the ``aisim.commands`` entry points;
* ``qualification.cases``: the declarative case matrix, one suite per capability (data files in
  ``cases/``);
* ``qualification.parity``: frozen goldens, exact comparison and the update command;
* ``qualification.gate``: the prediction-regression gate (``aisim snapshot`` / ``aisim compare``);
* ``qualification.record``: the PyTorch recorder of STP/SD timing grids (``aisim[record]``);
* ``qualification.engine``: recording and scoring a real serving engine;
* ``qualification.datasets``: the recorded-dataset format and its integrity checks;
* ``qualification.mape``: error metrics of predictions against recordings (``aisim qualify mape``);
* ``qualification.calibrate``: fitting estimator corrections to recordings;
* ``qualification.public``: scoring against published measurements;
* ``qualification.report``: the HTML/markdown qualification report;
* ``qualification.bench``: performance figures, compiled vs pure in one run;
* ``qualification.fuzz``: the fuzz campaign against the input contract (needs hypothesis, from
  the ``test`` extra).

Everything but ``cli``, ``cases``, ``parity`` and ``gate`` needs the ``aisim[qualify]`` extra. Hypothesis
strategies and the syrupy extension are test-only and live in ``tests/``.
"""

from __future__ import annotations

__all__: list[str] = []
