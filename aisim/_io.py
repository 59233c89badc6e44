"""File I/O shared by the CLI and the harness: the one YAML/JSON loader, path and number checks
for untrusted text, and atomic, non-clobbering writes.

Not compiled: the core never does I/O.

Every YAML or JSON document a user hands us (configs, ``--model``/``--hardware`` files, JSONL
trace rows) goes through :func:`parse_yaml_text` or :func:`parse_json_text`: nesting deeper than
``MAX_NESTING_DEPTH`` levels, duplicate keys, recursive YAML aliases and alias expansions beyond
``MAX_EXPANDED_NODES`` are one-line ``ConfigError``s instead of a ``RecursionError``, a silently
dropped value or an exponential blow-up further down.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from aisim._input_limits import MAX_EXPANDED_NODES as MAX_EXPANDED_NODES  # re-exported
from aisim._input_limits import MAX_NESTING_DEPTH
from aisim._text import value_error_text
from aisim.errors import ConfigError, DataIntegrityError

#: Longest file name (one path component) in bytes, as on Linux and macOS (NAME_MAX).
MAX_FILE_NAME_BYTES: Final = 255
#: Longest path accepted, in characters (below every platform's PATH_MAX).
MAX_PATH_CHARS: Final = 1024
#: Most digits an integer field written as text may have (2**63 has 19).
MAX_INT_DIGITS: Final = 19
#: Largest file read whole as a document: a config, ``--model``/``--hardware`` file, plan,
#: snapshot, sidecar or engine metrics scrape (real ones are kilobytes; a snapshot of 20,000
#: predictions is about 2 MB). A bigger file (or ``/dev/zero``) would exhaust memory first.
MAX_DOCUMENT_BYTES: Final = 64 * 2**20
#: Largest trace file (it is read whole once, to hash it for the trace cache; the Mooncake
#: trace of 23,608 requests is 9 MB).
MAX_TRACE_BYTES: Final = 1024 * 2**20

# A JSON integer or real number, ASCII only: no sign other than a leading '-', no '+', no
# underscores, no surrounding blanks, no 'inf'/'nan' (the text forms Python's int()/float()
# would also take).
_INT_TEXT: Final = re.compile(r"-?[0-9]+")
_FLOAT_TEXT: Final = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_JSON_STRUCTURE: Final = re.compile(r'[\[\]{}"\\\n]')

#: A staging folder's name: ``.aisim-<owner pid>-<random>.tmp`` (``tempfile.mkdtemp``'s random
#: part: lower-case letters, digits, ``_``). Only a folder whose whole name matches is ever
#: removed as stale (``remove_stale_staging``).
STAGING_NAME: Final = re.compile(r"\.aisim-([1-9][0-9]{0,9})-[a-z0-9_]+\.tmp")


def check_path_text(value: object, field: str) -> Path:
    """``value`` as a ``Path`` after checks that need no I/O: a non-empty string without NUL
    bytes, at most ``MAX_PATH_CHARS`` characters, each name at most ``MAX_FILE_NAME_BYTES``
    bytes in UTF-8 (the operating system would otherwise fail with 'File name too long')."""
    if not isinstance(value, (str, os.PathLike)):
        raise ConfigError(f"{field}: expected a file path (a string), got {_describe(value)}")
    text = os.fspath(value)
    if not isinstance(text, str):
        raise ConfigError(f"{field}: expected a file path (a string), got {_describe(text)}")
    if not text:
        raise ConfigError(f"{field}: expected a file path, got an empty string")
    if "\0" in text:
        raise ConfigError(f"{field}: a file path cannot contain a NUL character, got {text!r}")
    if len(text) > MAX_PATH_CHARS:
        raise ConfigError(
            f"{field}: path too long: at most {MAX_PATH_CHARS} characters, got {len(text)}"
        )
    for name in text.split(os.sep):
        size = len(name.encode("utf-8", "surrogatepass"))
        if size > MAX_FILE_NAME_BYTES:
            raise ConfigError(
                f"{field}: file name too long: at most {MAX_FILE_NAME_BYTES} bytes per name, "
                f"got {size} ({_shorten(name)!r})"
            )
    return Path(text)


def int_text_problem(text: str) -> str | None:
    """Why ``text`` is not a decimal integer as we accept them (None if it is): ASCII digits
    with an optional leading '-', at most ``MAX_INT_DIGITS`` digits. Python's ``int()`` would
    also take '+5', ' 3', '1_000' and other scripts' digits; we do not."""
    digits = text[1:] if text.startswith("-") else text
    if _INT_TEXT.fullmatch(text) is None or len(digits) > MAX_INT_DIGITS:
        return (
            f"expected an integer (ASCII digits, optional leading '-', at most "
            f"{MAX_INT_DIGITS} digits), got {_shorten(text)!r}"
        )
    return None


def float_text_problem(text: str) -> str | None:
    """Why ``text`` is not a finite decimal number as we accept them (None if it is): JSON's
    syntax (``12``, ``-0.5``, ``1e3``); no '+' or '_', no blanks, no 'inf' or 'nan', and
    finite as a float (``1e999`` is not)."""
    if _FLOAT_TEXT.fullmatch(text) is None or len(text) > 64:
        return f"expected a decimal number like 12, -0.5 or 1e3, got {_shorten(text)!r}"
    if abs(float(text)) == float("inf"):
        return f"expected a finite number, got {_shorten(text)!r}"
    return None


def parse_int_text(text: str, field: str) -> int:
    """``int(text)`` under the rules of ``int_text_problem``; ConfigError naming ``field``."""
    problem = int_text_problem(text)
    if problem is not None:
        raise ConfigError(f"{field}: {problem}")
    return int(text)


def parse_float_text(text: str, field: str) -> float:
    """``float(text)`` under the rules of ``float_text_problem``; ConfigError naming ``field``."""
    problem = float_text_problem(text)
    if problem is not None:
        raise ConfigError(f"{field}: {problem}")
    return float(text)


def _describe(value: object) -> str:
    return f"{_shorten(repr(value))} ({type(value).__name__})"


def _shorten(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def input_file_problem(file: Path, max_bytes: int) -> str | None:
    """Why ``file`` cannot be read as an input (None when it can): ``"file not found"``, ``"is
    a folder, not a file"``, ``"is not a regular file (a FIFO, socket or device)"`` (reading one
    could block forever or never end), ``"is N bytes, over the limit of M"`` or ``"cannot read:
    <reason>"``. Only ``stat`` is called: a FIFO is never opened."""
    try:
        status = os.stat(file)
    except (FileNotFoundError, NotADirectoryError):
        return "file not found"
    except (OSError, ValueError) as exc:
        return f"cannot read: {_os_reason(exc)}"
    if stat.S_ISDIR(status.st_mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(status.st_mode):
        return "is not a regular file (a FIFO, socket or device)"
    if status.st_size > max_bytes:
        return f"is {status.st_size} bytes, over the limit of {max_bytes} ({_mib(max_bytes)})"
    return None


def read_input_bytes(file: Path, max_bytes: int, where: str) -> bytes:
    """The bytes of the regular file ``file`` (at most ``max_bytes``, checked before and while
    reading: a file that grows, or a ``/proc`` file that reports size 0, cannot get past it).
    ``ConfigError('<where>: <problem>')`` otherwise, with ``input_file_problem``'s wording."""
    problem = input_file_problem(file, max_bytes)
    if problem is not None:
        raise ConfigError(f"{where}: {problem}")
    try:
        with open(file, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read: {_os_reason(exc)}") from None
    if len(data) > max_bytes:
        raise ConfigError(f"{where}: is over the limit of {max_bytes} bytes ({_mib(max_bytes)})")
    return data


def _mib(size: int) -> str:
    return f"{size / 2**20:g} MiB"


def _os_reason(exc: BaseException) -> str:
    """An ``OSError``'s reason without the path Python appends (we name the file ourselves)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return " ".join(str(exc).split())


def load_config_file(path: str | os.PathLike[str], field: str = "") -> Any:
    """Parse a YAML or JSON file (JSON when the name ends in ``.json``); a bad path, a missing,
    oversized (``MAX_DOCUMENT_BYTES``), non-regular or malformed file is one clear
    ConfigError. ``field`` names the input in path errors."""
    file = check_path_text(path, field or "config file")
    data = read_input_bytes(file, MAX_DOCUMENT_BYTES, repr(str(file)))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{str(file)!r}: cannot read: {' '.join(str(exc).split())}") from None
    source = repr(str(file))
    if file.suffix.lower() == ".json":
        return parse_json_text(text, source)
    return parse_yaml_text(text, source)


def parse_json_text(text: str, source: str) -> Any:
    """One JSON document (a leading BOM ignored); errors are ``ConfigError('<source>: ...')`` on
    one line.

    Nesting is bounded before parsing (Python's parser would raise ``RecursionError``), and a
    key repeated in one object is refused (the parser would keep the last value silently).
    """
    _check_json_nesting(text, source)
    # A leading byte-order mark (Windows editors, Excel exports) is not part of the document:
    # RFC 8259 section 8.1 lets a parser ignore it, as the YAML and CSV readers do.
    text = text.removeprefix("\ufeff")
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{source}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    except _DuplicateKey as exc:
        raise ConfigError(
            f"{source}: not valid JSON: duplicate key {exc.key!r} in one object"
        ) from None
    except ValueError as exc:  # e.g. an integer with more than 4300 digits
        raise ConfigError(f"{source}: not valid JSON: {value_error_text(exc)}") from None


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


# One decoder for every document: json.loads(text, object_pairs_hook=...) builds a new decoder
# (and scanner) per call, which a trace pays once per line.
_DECODER: Final = json.JSONDecoder(object_pairs_hook=_unique_pairs)


def _check_json_nesting(text: str, source: str) -> None:
    """Refuse JSON nested deeper than ``MAX_NESTING_DEPTH`` (brackets inside strings skipped)."""
    if text.count("[") + text.count("{") <= MAX_NESTING_DEPTH:
        return
    depth = 0
    line = 1
    line_start = 0
    in_string = False
    escaped_at = -1
    for match in _JSON_STRUCTURE.finditer(text):
        char = match.group()
        at = match.start()
        if char == "\n":
            line += 1
            line_start = at + 1
        elif in_string:
            if char == "\\" and escaped_at != at:
                escaped_at = at + 1
            elif char == '"' and escaped_at != at:
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_NESTING_DEPTH:
                raise ConfigError(
                    f"{source}: nested deeper than {MAX_NESTING_DEPTH} levels at line {line}, "
                    f"column {at - line_start + 1}"
                )
        elif char in "]}":
            depth -= 1


def parse_yaml_text(text: str, source: str) -> Any:
    """One YAML document read by ``aisim._yaml.StrictSafeLoader`` (PyYAML's safe loader plus
    our limits); errors are one-line ``ConfigError``s."""
    from aisim._yaml import load_yaml

    return load_yaml(text, source)


def read_verified_bytes(
    data_file: Path, sidecar: Mapping[str, Any], *, require_size: bool = False
) -> bytes:
    """The bytes of ``data_file`` after the one integrity check every recorded table gets: its
    size (``sidecar["bytes"]``, when given or ``require_size``) and SHA-256 (``sidecar["sha256"]``)
    match the sidecar. ``DataIntegrityError`` naming the file otherwise."""
    where = repr(str(data_file))
    problem = input_file_problem(data_file, MAX_TRACE_BYTES)
    if problem == "file not found":
        raise DataIntegrityError(f"{where}: data file is missing")
    try:
        data = read_input_bytes(data_file, MAX_TRACE_BYTES, where)
    except ConfigError as exc:
        raise DataIntegrityError(str(exc)) from None
    size = sidecar.get("bytes")
    if (size is not None or require_size) and size != len(data):
        raise DataIntegrityError(
            f"{where}: {len(data)} bytes, sidecar says {size!r}: the file was truncated or "
            "modified after it was written; restore or re-record it"
        )
    digest = hashlib.sha256(data).hexdigest()
    if digest != sidecar.get("sha256"):
        raise DataIntegrityError(
            f"{where}: SHA-256 {digest} does not match the sidecar's {sidecar.get('sha256')!r}: "
            "the file was modified or truncated after it was written; restore or re-record it"
        )
    return data


def read_sidecar_object(data_file: Path, sidecar: Path, *, missing_reason: str) -> dict[str, Any]:
    """The JSON object in ``sidecar`` (the metadata of ``data_file``), schema not yet checked.

    Missing, unreadable or non-object sidecars are a DataIntegrityError; ``missing_reason``
    finishes the message for a missing one (why the caller needs it).
    """
    if input_file_problem(sidecar, MAX_DOCUMENT_BYTES) == "file not found":
        raise DataIntegrityError(
            f"{str(data_file)!r}: sidecar {sidecar.name!r} is missing; {missing_reason}"
        )
    try:
        data = read_input_bytes(sidecar, MAX_DOCUMENT_BYTES, "sidecar")
        loaded = parse_json_text(data.decode("utf-8"), "sidecar")
    except (UnicodeDecodeError, ConfigError) as exc:
        raise DataIntegrityError(f"{str(sidecar)!r}: unreadable sidecar: {exc}") from None
    if not isinstance(loaded, dict):
        raise DataIntegrityError(f"{str(sidecar)!r}: sidecar must be a JSON object")
    return loaded


def check_writable(path: str | os.PathLike[str], overwrite: bool) -> Path:
    """Refuse to clobber an existing user file unless ``overwrite`` is set."""
    target = Path(path)
    if not overwrite and target.exists():
        raise ConfigError(f"{str(target)!r} already exists; pass --overwrite to replace it")
    return target


def check_output_file(path: str | os.PathLike[str], overwrite: bool, field: str) -> Path:
    """Check, before any work, that a command can write the file ``path`` (``field``: the
    option naming it, e.g. ``--out``): not an existing folder (even with ``overwrite``), not an
    existing FIFO or device, no existing file without ``overwrite``, and a folder to create it
    in that is a folder (not under a file) and writable. One ``ConfigError`` otherwise."""
    target = check_path_text(path, field)
    shown = f"{field} {str(target)!r}"
    if target.is_dir():
        raise ConfigError(f"{shown}: is a folder; give the path of a file to write")
    if os.path.lexists(target):
        if not target.is_file():
            raise ConfigError(f"{shown}: exists and is not a regular file")
        if not overwrite:
            raise ConfigError(f"{str(target)!r} already exists; pass --overwrite to replace it")
    _check_location(target.parent, shown)
    return target


def check_output_dir(
    path: str | os.PathLike[str], overwrite: bool, field: str, files: tuple[str, ...] = ()
) -> Path:
    """Check, before any work, that a command can write into the folder ``path``: not an
    existing file, not under a file, writable (or creatable in a writable place), and each of
    ``files`` inside it passes ``check_output_file`` (so an existing output needs
    ``overwrite`` and a folder standing where a file goes is refused)."""
    out = check_path_text(path, field)
    shown = f"{field} {str(out)!r}"
    if os.path.lexists(out) and not out.is_dir():
        raise ConfigError(f"{shown}: exists and is not a folder")
    _check_location(out, shown)
    for name in files:
        check_output_file(out / name, overwrite, field)
    return out


def _check_location(folder: Path, shown: str) -> None:
    """``folder`` (to be created where missing) can hold new files: its nearest existing
    ancestor is a folder and accepts a new file (tried for real, so read-only mounts, ``/proc``
    and permissions are seen as the write would see them, for root too)."""
    existing = folder
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"{shown}: {str(existing)!r} is a file, not a folder")
    name = os.path.join(existing, f".aisim-probe-{os.urandom(6).hex()}.tmp")
    try:
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as exc:
        raise ConfigError(
            f"{shown}: cannot write in {str(existing)!r}: {_os_reason(exc)}"
        ) from None
    os.unlink(name)


def writable_folder(folder: Path, field: str = "--out") -> None:
    """Create ``folder`` (and its parents) for output; an ``OSError`` is one ``ConfigError``."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"{field} {str(folder)!r}: cannot create the folder: {_os_reason(exc)}"
        ) from None


def atomic_write_bytes(
    path: str | os.PathLike[str], data: bytes, *, overwrite: bool = False
) -> Path:
    """Write ``data`` to a temp file beside ``path``, flush it to disk, then rename it into place:
    a reader (or a resumed sweep) sees the old file or the whole new one, never part of one.

    The temp file is created with mode 0666, so the umask applies as for a plain ``open()``
    (no ``os.umask`` round trip, which would briefly change the mode of files other threads
    create). A sweep writes one file per point with this, so it is kept to a few system calls.
    """
    target = check_writable(path, overwrite)
    try:
        try:
            fd, tmp = create_temp_beside(target)
        except FileNotFoundError:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = create_temp_beside(target)
    except OSError as exc:
        # Callers check their outputs first (check_output_file/_dir); this is the backstop.
        raise ConfigError(f"cannot write {str(target)!r}: {_os_reason(exc)}") from None
    try:
        with memoryview(data) as view:
            written = 0
            while written < len(view):
                written += os.write(fd, view[written:])
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, target)
    except BaseException as exc:
        if fd >= 0:
            os.close(fd)
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise ConfigError(f"cannot write {str(target)!r}: {_os_reason(exc)}") from None
        raise
    return target


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
    ``ConfigError`` naming the file; the staging folder is removed either way. A name may hold
    one subfolder (``plots/a.png``). ``StagedFiles`` is the same for files streamed in parts."""
    with StagedFiles(folder, overwrite=overwrite, field=field, write=write) as staged:
        for name, data in files.items():
            staged.add(name, data)
        staged.commit()


class StagedFiles:
    """A command's output files as one set, for writers that stream (``write_together`` is the
    whole-bytes form): the hidden staging folder ``stage`` is made inside ``folder`` (created if
    missing) on construction; ``add`` writes a file there (or marks an output not made this
    run: removed at ``commit``), a streaming writer writes ``path(name)`` itself and ``adopt``s
    it, ``commit`` checks every name (``check_output_file``) and renames the set into place.

    Use it as a context manager: leaving the block without ``commit`` (an exception, an
    interrupt) removes the staging folder with everything in it, and ``folder`` too when this
    object created it and it is empty, so nothing of the run is left and an earlier set stays
    whole. A run killed outright (SIGKILL) cannot do that: its staging folder is named with its
    process id (``.aisim-<pid>-<random>.tmp``) and the next ``StagedFiles`` in the same
    ``folder`` removes it once that process is gone (``remove_stale_staging``)."""

    def __init__(
        self,
        folder: Path,
        *,
        overwrite: bool,
        field: str = "--out",
        write: Callable[[Path, bytes], None] = write_synced,
    ) -> None:
        self.folder = folder
        self.overwrite = overwrite
        self.field = field
        self._write = write
        self._present: dict[str, bool] = {}
        self._created = not os.path.lexists(folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if not self._created:
                remove_stale_staging(folder)
            self.stage = Path(
                tempfile.mkdtemp(prefix=f".aisim-{os.getpid()}-", suffix=".tmp", dir=folder)
            )
        except OSError as exc:
            raise ConfigError(f"{field} {str(folder)!r}: cannot write: {_os_reason(exc)}") from None

    def __enter__(self) -> StagedFiles:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if kind is not None:
            self.discard()

    def path(self, name: str) -> Path:
        """Where the file ``name`` (relative to ``folder``) is staged; its folder exists."""
        staged = self.stage / name
        if staged.parent != self.stage:
            try:
                staged.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                reason = _os_reason(exc)
                raise ConfigError(f"cannot write {str(self.folder / name)!r}: {reason}") from None
        return staged

    def adopt(self, name: str) -> None:
        """``name`` is written at ``path(name)`` (by a streaming writer): part of the set."""
        self._present[name] = True

    def add(self, name: str, data: bytes | None) -> None:
        """Stage ``data`` as the file ``name``; None: an earlier run's ``name`` is removed at
        ``commit`` (no such output this run). An ``OSError`` is one ``ConfigError``."""
        if data is None:
            self._present[name] = False
            return
        try:
            self._write(self.path(name), data)
        except OSError as exc:
            reason = _os_reason(exc)
            raise ConfigError(f"cannot write {str(self.folder / name)!r}: {reason}") from None
        self._present[name] = True

    def commit(self) -> list[Path]:
        """Check every name again, then rename the staged files into place (and remove the
        outputs not made); the staging folder is removed. Returns the paths written."""
        for name in self._present:
            check_output_file(self.folder / name, self.overwrite, self.field)
        written = []
        for name, present in self._present.items():
            target = self.folder / name
            try:
                if not present:
                    target.unlink(missing_ok=True)
                    continue
                if target.parent != self.folder:
                    target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(self.stage / name, target)
            except OSError as exc:
                reason = _os_reason(exc)
                raise ConfigError(f"cannot write {str(target)!r}: {reason}") from None
            written.append(target)
        shutil.rmtree(self.stage, ignore_errors=True)
        return written

    def discard(self) -> None:
        """Remove the staging folder (and ``folder`` when this object made it and it is
        empty: nothing of this run's got in)."""
        shutil.rmtree(self.stage, ignore_errors=True)
        if self._created:
            with contextlib.suppress(OSError):
                self.folder.rmdir()


def remove_stale_staging(folder: Path) -> list[Path]:
    """Remove the staging folders in ``folder`` that a killed run left behind; return them.

    A run killed outright (SIGKILL, a power cut) cannot remove its staging folder, so the next
    set written into the same folder does: a folder whose whole name matches ``STAGING_NAME``,
    that is a real folder (not a link) owned by this user, and whose owner process (the pid in
    its name) no longer exists (``os.kill(pid, 0)`` says ProcessLookupError). A folder of a live
    process (this one included, or any other: a concurrent run) is left alone, and so is one
    whose owner cannot be told (no such check on this system: POSIX only). A process id is
    known on this machine only: a folder shared with another machine is judged by this one's
    processes. Errors while removing are ignored; the next write tries again."""
    if os.name != "posix":  # os.kill(pid, 0) is not a probe on Windows: it ends the process
        return []
    removed = []
    try:
        with os.scandir(folder) as listing:
            entries = list(listing)
    except OSError:
        return []
    for entry in entries:
        found = STAGING_NAME.fullmatch(entry.name)
        if found is None or not _owner_is_gone(int(found.group(1))):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


def _owner_is_gone(pid: int) -> bool:
    """True only when no process ``pid`` exists (one of another user exists: PermissionError)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError, ValueError):
        return False
    return False


def create_temp_beside(target: Path) -> tuple[int, str]:
    """A new, empty ``.<name>.<random>.tmp`` beside ``target`` (never an existing file), open
    for writing: (descriptor, path)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(target.parent, f".{target.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {str(target)!r}")


def atomic_write_text(path: str | os.PathLike[str], text: str, *, overwrite: bool = False) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"), overwrite=overwrite)


def canonical_json(value: Any) -> str:
    """Sorted keys, two-space indent, floats via repr, trailing newline: byte-stable output."""
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def read_parquet_bytes(data: bytes) -> Any:
    """A parquet file's bytes as a ``pyarrow.Table``, read without Arrow's thread pools.

    ``pyarrow.parquet.read_table`` starts a pool thread even with ``use_threads=False`` (it goes
    through ``pyarrow.dataset``), and such a thread can still run while the interpreter exits,
    which aborts the process ("terminate called without an active exception", status 134) after
    a correct answer. ``ParquetFile.read(use_threads=False)`` starts none; convert the result
    with ``to_pandas(use_threads=False)`` for the same reason. Raises pyarrow's own errors
    (``pyarrow.ArrowException``, ``OSError``) for a file it cannot read.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pq.ParquetFile(pa.BufferReader(data)).read(use_threads=False)
