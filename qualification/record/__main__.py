"""``python -m qualification.record``: record a dataset (see ``--help``)."""

import sys

from qualification.record._cli import main

sys.exit(main())
