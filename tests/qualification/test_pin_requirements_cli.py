"""`python -m qualification.engine.pin_requirements --help` answers on stdout and exits 0; a
wrong call prints the usage to stderr and exits 2."""

import subprocess
import sys


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "qualification.engine.pin_requirements", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_help_is_an_answer_not_an_error() -> None:
    done = run("--help")
    assert (done.returncode, done.stderr) == (0, "")
    assert "pin" in done.stdout and "direct" in done.stdout


def test_a_wrong_call_is_refused_with_the_usage() -> None:
    done = run("bogus")
    assert (done.returncode, done.stdout) == (2, "")
    assert "direct" in done.stderr
