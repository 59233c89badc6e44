"""``python -m qualification.engine``: record a real vLLM engine (see ``--help``)."""

import sys

from qualification.engine._cli import main

sys.exit(main())
