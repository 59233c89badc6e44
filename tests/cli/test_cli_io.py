"""Config loading and atomic writes shared by every subcommand."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from aisim._io import write_synced
from aisim.errors import ConfigError
from aisim.files import atomic_write_text, load_config_file, write_together


def test_yaml_errors_are_one_line_with_position(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1, 2\nb: 3\n")
    with pytest.raises(ConfigError) as info:
        load_config_file(bad)
    message = str(info.value)
    assert "\n" not in message
    assert "not valid YAML" in message and "line 2, column 2" in message


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("big.json", '{"depth": ' + "9" * 5000 + "}"),
        ("big.yaml", "depth: " + "9" * 5000 + "\n"),
    ],
)
def test_an_integer_too_long_to_read_is_said_without_interpreter_advice(
    tmp_path: Path, name: str, text: str
) -> None:
    """Python's message ended in 'use sys.set_int_max_str_digits() to increase the limit',
    advice for a programmer that a user of the command cannot follow."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    kind = "JSON" if name.endswith(".json") else "YAML"
    with pytest.raises(ConfigError) as info:
        load_config_file(path)
    assert str(info.value) == (
        f"{str(path)!r}: not valid {kind}: an integer of 5000 digits; at most 4300 digits are read"
    )


def test_json_errors_are_one_line_with_position(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1,}')
    with pytest.raises(ConfigError, match=r"not valid JSON: .* at line 1, column 9$"):
        load_config_file(bad)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_config_file(tmp_path / "absent.yaml")


def test_atomic_write_refuses_to_clobber(tmp_path: Path) -> None:
    target = tmp_path / "out" / "summary.json"
    atomic_write_text(target, "first")
    with pytest.raises(ConfigError, match="--overwrite"):
        atomic_write_text(target, "second")
    assert target.read_text() == "first"
    atomic_write_text(target, "second", overwrite=True)
    assert target.read_text() == "second"
    assert [p.name for p in target.parent.iterdir()] == ["summary.json"]


def test_atomic_write_uses_the_umask_mode(tmp_path: Path) -> None:
    import os

    previous = os.umask(0o022)
    try:
        target = atomic_write_text(tmp_path / "report.json", "{}")
    finally:
        os.umask(previous)
    assert target.stat().st_mode & 0o777 == 0o644


def test_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`aisim compare OLD NEW | head -1`: no BrokenPipeError traceback when the reader leaves."""
    import json
    import subprocess
    import sys

    def snapshot(value: float) -> dict[str, object]:
        cases = {f"case-{index:05d}": {"latency_ms": value} for index in range(20_000)}
        return {"aisim_version": "0", "build": "pure", "format": 1, "predictions": cases}

    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(snapshot(1.0)))
    new.write_text(json.dumps(snapshot(2.0)))
    with subprocess.Popen(
        [sys.executable, "-m", "aisim", "compare", str(old), str(new)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()
        stderr = process.stderr.read().decode()
        assert process.wait(timeout=60) == 141
    assert b"moved" in first
    assert "Traceback" not in stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
@pytest.mark.parametrize("argv", [["schema", "replay"], ["speculation", "profiles"]])
def test_a_full_disk_under_stdout_is_one_line(argv: list[str]) -> None:
    """`aisim schema replay > FILE` on a full disk used to end in an OSError traceback (a
    large output fails in print, a small one in the interpreter's final flush)."""
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "aisim", *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 2
    assert done.stderr == "aisim: error: cannot write the output: No space left on device\n"


def _listing(folder: Path) -> dict[str, bytes]:
    """Every entry of ``folder`` (hidden ones too: a staging folder left behind would show)."""
    return {p.name: p.read_bytes() if p.is_file() else b"<folder>" for p in folder.iterdir()}


EARLIER = {"advice.json": b"{}\n", "advice.md": b"# earlier\n", "gain_vs_load.png": b"png 1"}


def _fail_on(failing: str, error: BaseException) -> Callable[[Path, bytes], None]:
    """A writer that writes every file but ``failing``, where it raises ``error``."""

    def write(path: Path, data: bytes) -> None:
        if path.name == failing:
            raise error
        write_synced(path, data)

    return write


@pytest.mark.parametrize(
    "error", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()]
)
def test_a_failing_writer_leaves_the_earlier_set_whole(
    tmp_path: Path, error: BaseException
) -> None:
    """aisim advise wrote its four files one by one: a failure at the third left a new
    advice.json and advice.md beside the earlier advice.html and plot."""
    out = tmp_path / "out"
    out.mkdir()
    for name, data in EARLIER.items():
        (out / name).write_bytes(data)
    (out / "notes.txt").write_bytes(b"the user's")
    new = {"advice.json": b"{new}", "advice.md": b"new", "advice.html": b"new", "x.png": None}
    caught = ConfigError if isinstance(error, OSError) else KeyboardInterrupt
    with pytest.raises(caught) as info:
        write_together(out, new, overwrite=True, write=_fail_on("advice.html", error))
    if caught is ConfigError:
        assert (
            str(info.value) == f"cannot write {str(out / 'advice.html')!r}: No space left on device"
        )
    assert _listing(out) == {**EARLIER, "notes.txt": b"the user's"}


def test_a_failing_writer_leaves_no_new_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    error = OSError(errno.EIO, "Input/output error")
    with pytest.raises(ConfigError, match="advice.md'.*Input/output error$"):
        write_together(
            out,
            {"advice.json": b"{}", "advice.md": b"x"},
            overwrite=False,
            write=_fail_on("advice.md", error),
        )
    assert _listing(tmp_path) == {}


def test_the_set_replaces_the_earlier_one_and_drops_an_output_not_made(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    for name, data in EARLIER.items():
        (out / name).write_bytes(data)
    new = {"advice.json": b"[1]", "advice.md": b"# new\n", "gain_vs_load.png": None}
    write_together(out, new, overwrite=True)
    assert _listing(out) == {"advice.json": b"[1]", "advice.md": b"# new\n"}


def test_a_file_that_appeared_meanwhile_is_not_overwritten(tmp_path: Path) -> None:
    """The outputs are checked before a command's work (check_output_dir) and again before
    the renames: a user's file that appeared in between stops the whole set."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "advice.md").write_bytes(b"the user's")
    with pytest.raises(ConfigError) as info:
        write_together(out, {"advice.json": b"{}", "advice.md": b"x"}, overwrite=False)
    assert (
        str(info.value)
        == f"{str(out / 'advice.md')!r} already exists; pass --overwrite to replace it"
    )
    assert _listing(out) == {"advice.md": b"the user's"}


def _dead_pid() -> int:
    """The process id of a process that has run and been reaped (no process has it now)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    with pytest.raises(ProcessLookupError):
        os.kill(child.pid, 0)  # not reused meanwhile
    return child.pid


@pytest.mark.skipif(os.name != "posix", reason="owners are probed with os.kill(pid, 0): POSIX")
def test_a_killed_runs_staging_folder_is_removed_by_the_next_set(tmp_path: Path) -> None:
    """Only a folder named exactly ``.aisim-<pid>-<random>.tmp`` whose process is gone is
    removed; a live process's staging folder, other names, a file and a link are left alone."""
    out = tmp_path / "out"
    out.mkdir()
    dead = _dead_pid()
    stale = out / f".aisim-{dead}-k1ll_ed.tmp"
    (stale / "plots").mkdir(parents=True)
    (stale / "plots" / "a.png").write_bytes(b"half")
    (out / f".aisim-{os.getpid()}-live.tmp").mkdir()  # this (live) process's
    (out / f".aisim-{dead}-x.tmp.keep").mkdir()  # not the pattern: a suffix after .tmp
    (out / f"aisim-{dead}-x.tmp").mkdir()  # not hidden
    (out / ".aisim-probe-x.tmp").mkdir()  # no pid
    (out / f".aisim-{dead}-file.tmp").write_bytes(b"a file")  # not a folder
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / f".aisim-{dead}-link.tmp").symlink_to(elsewhere)  # a link, not a folder
    write_together(out, {"advice.json": b"{}"}, overwrite=False)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [
            "advice.json",
            f".aisim-{os.getpid()}-live.tmp",
            f".aisim-{dead}-x.tmp.keep",
            f"aisim-{dead}-x.tmp",
            ".aisim-probe-x.tmp",
            f".aisim-{dead}-file.tmp",
            f".aisim-{dead}-link.tmp",
        ]
    )
    assert elsewhere.is_dir()


#: A child that starts writing a set into argv[1] and stops in the middle, staged file written.
_STOPS_MID_WRITE = """
import sys, time
from pathlib import Path
from aisim.files import write_together

def write(path, data):
    path.write_bytes(data)
    print(path.parent.name, flush=True)
    time.sleep(600)

write_together(Path(sys.argv[1]), {"advice.json": b"new"}, overwrite=True, write=write)
"""


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL and os.kill(pid, 0) are POSIX")
def test_a_sigkilled_write_leaves_the_earlier_set_and_the_next_write_removes_its_staging(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "advice.json").write_bytes(b"earlier")
    child = subprocess.Popen(
        [sys.executable, "-c", _STOPS_MID_WRITE, str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    staging = child.stdout.readline().strip()  # the child is now inside write()
    child.kill()  # SIGKILL: no cleanup can run
    child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    assert staging == f".aisim-{child.pid}-{staging.split('-')[-1]}"
    assert _listing(out) == {"advice.json": b"earlier", staging: b"<folder>"}
    assert (out / staging / "advice.json").read_bytes() == b"new"
    write_together(out, {"advice.md": b"# next\n"}, overwrite=False)
    assert _listing(out) == {"advice.json": b"earlier", "advice.md": b"# next\n"}
