"""Write a command's output files as one set: after a failure the folder holds the earlier set
whole (or nothing new), never this run's files beside an earlier run's (``aisim advise``)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from aisim._io import _os_reason, check_output_file
from aisim.errors import ConfigError


def write_synced(path: Path, data: bytes) -> None:
    """``data`` as the new file ``path``, flushed to disk (the mode a plain ``open()`` gives)."""
    with path.open("xb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def write_together(
    folder: Path,
    files: Mapping[str, bytes | None],
    *,
    overwrite: bool,
    field: str = "--out",
    write: Callable[[Path, bytes], None] = write_synced,
) -> None:
    """Write ``files`` (a file name in ``folder`` -> its bytes; None: no such output this run,
    and an earlier run's file of that name is removed, lest it read as this run's) as one set.

    Every file is written (``write``) into a hidden staging folder inside ``folder`` first; only
    when all are written are the names checked again (``check_output_file``: an existing file
    needs ``overwrite``, so one that appeared while the command ran is refused, a folder at an
    output name always) and the files renamed into place. A failure before the renames (a full
    disk, an interrupt, an error from ``write``) leaves ``folder`` as it was, a folder this call
    created removed again; the renames (one folder, one file system, no data written) are the
    only step a failure could interrupt with part of the set in place. An ``OSError`` is one
    ``ConfigError`` naming the file; the staging folder is removed either way."""
    created = not os.path.lexists(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=".aisim-", suffix=".tmp", dir=folder))
    except OSError as exc:
        raise ConfigError(f"{field} {str(folder)!r}: cannot write: {_os_reason(exc)}") from None
    try:
        for name, data in files.items():
            if data is not None:
                try:
                    write(stage / name, data)
                except OSError as exc:
                    reason = _os_reason(exc)
                    raise ConfigError(f"cannot write {str(folder / name)!r}: {reason}") from None
        for name in files:
            check_output_file(folder / name, overwrite, field)
        for name, data in files.items():
            try:
                if data is None:
                    (folder / name).unlink(missing_ok=True)
                else:
                    os.replace(stage / name, folder / name)
            except OSError as exc:
                reason = _os_reason(exc)
                raise ConfigError(f"cannot write {str(folder / name)!r}: {reason}") from None
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        if created:
            with contextlib.suppress(OSError):  # only when empty: nothing of this run's got in
                folder.rmdir()
        raise
    shutil.rmtree(stage, ignore_errors=True)
