"""The fuzz worker: a child process that runs ``aisim.cli.main(argv)`` in-process, one case at a
time, as a user's shell would see it (stdout, stderr, exit status) plus any escaped traceback.

Protocol: one JSON request per stdin line ``{"folder": ..., "argv": [...]}``; one JSON reply per
stdout line ``{"code", "out", "err", "traceback", "seconds"}``. The parent kills and restarts the
worker when a case overruns its time bound (a hang), so a stuck case cannot stall the campaign.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
import traceback
from typing import Any


def run_one(folder: str, argv: list[str]) -> dict[str, Any]:
    """Run ``aisim`` with ``argv`` inside ``folder``; never raises."""
    from aisim.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    escaped = ""
    code: object = None
    start = time.perf_counter()
    os.chdir(folder)
    sys.stdout, sys.stderr = out, err
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse: usage errors (2), --help/--version (0)
        code = stop.code if stop.code is not None else 0
    except BaseException:  # noqa: BLE001 - the point is to see what escaped
        escaped = traceback.format_exc()
        code = 1
    finally:
        sys.stdout, sys.stderr = saved
    return {
        "code": code if isinstance(code, int) else 1,
        "out": out.getvalue(),
        "err": err.getvalue(),
        "traceback": escaped,
        "seconds": time.perf_counter() - start,
    }


def warm_up() -> None:
    """Import what the subcommands import lazily, so no case's time bound pays for it."""
    import pandas  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    import aisim.config  # noqa: F401
    import aisim.fpm  # noqa: F401
    import aisim.replay  # noqa: F401
    from aisim.cli import build_parser

    try:  # the harness's commands (qualify, sweep plots, acceptance intervals)
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401
        import scipy.stats  # noqa: F401

        import aisim.sweep  # noqa: F401
        import qualification.calibrate  # noqa: F401
        import qualification.mape  # noqa: F401
    except ModuleNotFoundError:
        pass

    build_parser()


def serve() -> None:
    """Say ``ready`` once warmed up, then answer requests until stdin closes."""
    # Replies go to the real stdout; what aisim prints is captured per case.
    channel = sys.stdout
    warm_up()
    channel.write(json.dumps({"ready": True}) + "\n")
    channel.flush()
    for line in sys.stdin:
        request = json.loads(line)
        reply = run_one(request["folder"], request["argv"])
        channel.write(json.dumps(reply) + "\n")
        channel.flush()


if __name__ == "__main__":
    serve()
