"""Config loading and atomic writes shared by every subcommand."""

from __future__ import annotations

from pathlib import Path

import pytest

from aisim.errors import ConfigError
from aisim.files import atomic_write_text, load_config_file


def test_yaml_errors_are_one_line_with_position(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1, 2\nb: 3\n")
    with pytest.raises(ConfigError) as info:
        load_config_file(bad)
    message = str(info.value)
    assert "\n" not in message
    assert "not valid YAML" in message and "line 2, column 2" in message


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
