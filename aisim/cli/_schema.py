"""``aisim schema KIND``: print the JSON Schema of one config file kind (for editors and CI)."""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(commands: Any) -> None:
    """Add the ``schema`` subcommand."""
    from aisim.cli._args import ExamplesFormatter
    from aisim.config import SCHEMA_KINDS

    parser = commands.add_parser(
        "schema",
        help="print the JSON Schema of a config file kind",
        description=(
            "Print the JSON Schema of one config file kind, e.g. for the YAML language server "
            "(docs/schemas.md). Kinds: " + ", ".join(sorted(SCHEMA_KINDS)) + "."
        ),
        epilog="examples:\n  aisim schema replay > replay.schema.json",
        formatter_class=ExamplesFormatter,
    )
    parser.add_argument("kind", metavar="KIND", help="one of the kinds above")
    parser.set_defaults(handler=schema_command)


def schema_command(args: argparse.Namespace) -> int:
    """Handler of ``aisim schema``: canonical JSON (sorted keys) on stdout."""
    from aisim.config import json_schema

    print(json.dumps(json_schema(args.kind), sort_keys=True, indent=2))
    return 0
