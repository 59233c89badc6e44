"""The harness's ``aisim`` subcommands: ``snapshot``/``compare`` (``_gate``), ``record`` and
``qualify``.

Each module has ``register(commands)``, exported here as ``register_gate``, ``register_record``
and ``register_qualify`` and named so in pyproject.toml's ``aisim.commands`` entry-point group,
which ``aisim.cli.build_parser`` loads: the harness imports aisim, never the reverse
(docs/design.md#import-graph). Importing a module here must not need an extra: the commands
import what they need when they run.
"""

from __future__ import annotations

from qualification.cli._gate import register as register_gate
from qualification.cli._qualify import register as register_qualify
from qualification.cli._record import register as register_record

__all__ = ["register_gate", "register_qualify", "register_record"]
