"""File I/O shared by the CLI and the harness: config loading and atomic, non-clobbering writes.

Not compiled: the core never does I/O.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from aisim.errors import ConfigError, DataIntegrityError


def load_config_file(path: str | os.PathLike[str]) -> Any:
    """Parse a YAML or JSON file; a missing or malformed file is one clear ConfigError."""
    import yaml

    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{str(file)!r}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{str(file)!r}: cannot read: {exc}") from None
    try:
        if file.suffix.lower() == ".json":
            return json.loads(text)
        return yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{str(file)!r}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{str(file)!r}: not valid YAML: {_one_line_yaml_error(exc)}") from None


def _one_line_yaml_error(exc: Exception) -> str:
    """PyYAML errors span several lines with a source excerpt; keep problem and position."""
    import yaml

    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"{exc.problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(exc).split())


def read_sidecar_object(data_file: Path, sidecar: Path, *, missing_reason: str) -> dict[str, Any]:
    """The JSON object in ``sidecar`` (the metadata of ``data_file``), schema not yet checked.

    Missing, unreadable or non-object sidecars are a DataIntegrityError; ``missing_reason``
    finishes the message for a missing one (why the caller needs it).
    """
    try:
        loaded = json.loads(sidecar.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataIntegrityError(
            f"{str(data_file)!r}: sidecar {sidecar.name!r} is missing; {missing_reason}"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataIntegrityError(f"{str(sidecar)!r}: unreadable sidecar: {exc}") from None
    if not isinstance(loaded, dict):
        raise DataIntegrityError(f"{str(sidecar)!r}: sidecar must be a JSON object")
    return loaded


def check_writable(path: str | os.PathLike[str], overwrite: bool) -> Path:
    """Refuse to clobber an existing user file unless ``overwrite`` is set."""
    target = Path(path)
    if target.exists() and not overwrite:
        raise ConfigError(f"{str(target)!r} already exists; pass --overwrite to replace it")
    return target


def atomic_write_bytes(
    path: str | os.PathLike[str], data: bytes, *, overwrite: bool = False
) -> Path:
    """Write ``data`` to a temp file beside ``path`` then rename it into place."""
    target = check_writable(path, overwrite)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        # mkstemp creates 0600; give the file the mode a plain open() would (0666 minus umask).
        os.fchmod(fd, 0o666 & ~_current_umask())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | os.PathLike[str], text: str, *, overwrite: bool = False) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"), overwrite=overwrite)


def canonical_json(value: Any) -> str:
    """Sorted keys, two-space indent, floats via repr, trailing newline: byte-stable output."""
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
