"""The harness's ``aisim`` subcommands: ``snapshot``/``compare`` (``_gate``), ``record`` and
``qualify``.

Each module has ``register(commands)``, named in pyproject.toml's ``aisim.commands`` entry-point
group, which ``aisim.cli.build_parser`` loads: the harness imports aisim, never the reverse
(docs/design.md#import-graph). Importing a module here must not need an extra: the commands
import what they need when they run.
"""

from __future__ import annotations

__all__: list[str] = []
