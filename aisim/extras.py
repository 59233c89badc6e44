"""Optional dependencies: which extra installs which module (``EXTRA_OF``), the one-line hint
naming it (``missing_extra_message``) and the error that carries it (``MissingExtra``), for
commands that need pandas, torch or ray. The implementation is ``aisim._extras``; this module
is its public face (``docs/api.md``). Not compiled.
"""

from __future__ import annotations

from aisim._extras import EXTRA_OF, MissingExtra, import_optional, missing_extra_message

__all__ = ["EXTRA_OF", "MissingExtra", "import_optional", "missing_extra_message"]
