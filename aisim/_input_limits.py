"""Limits every YAML/JSON input is read under, shared by the JSON reader (``aisim._io``) and the
YAML loader (``aisim._yaml``), so neither imports the other for them."""

from __future__ import annotations

from typing import Final

#: Deepest nesting of mappings and lists accepted in any YAML/JSON input. Real configs nest about
#: 8 levels (``engine.workers.decode.kv_cache.capacity.blocks``); HF config.json files about 4.
MAX_NESTING_DEPTH: Final = 64
#: Most nodes a YAML document may expand to with every alias counted at each use (a few aliases
#: of aliases would otherwise grow exponentially when a consumer walks the value).
MAX_EXPANDED_NODES: Final = 1_000_000

__all__ = ["MAX_EXPANDED_NODES", "MAX_NESTING_DEPTH"]
