"""``qualification.engine.probe_step_host``: its arithmetic on hand-made steps, its method
wrapper, and its command line without vLLM (the probe itself needs the engine's environment)."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from qualification.engine.probe_step_host import Timer, _summary, main


def test_host_time_is_the_step_less_forward_and_lm_head_and_serial_host_the_two_ends() -> None:
    # Two steps in seconds: the medians of two values are their means.
    steps = [
        {
            "step": 1.0e-3,
            "forward": 0.40e-3,
            "logits": 0.03e-3,
            "before_forward": 0.44e-3,
            "after_sampler": 0.07e-3,
        },
        {
            "step": 1.2e-3,
            "forward": 0.50e-3,
            "logits": 0.05e-3,
            "before_forward": 0.50e-3,
            "after_sampler": 0.09e-3,
        },
    ]
    summary = _summary(steps)
    # host: 1.0 - 0.40 - 0.03 = 0.57 and 1.2 - 0.50 - 0.05 = 0.65 ms, median 0.61 ms
    assert summary["host"] == pytest.approx(0.61)
    # serial: 0.44 + 0.07 = 0.51 and 0.50 + 0.09 = 0.59 ms, median 0.55 ms
    assert summary["serial_host"] == pytest.approx(0.55)
    assert summary["step"] == pytest.approx(1.1)
    assert summary["schedule"] == 0.0  # a part a step did not call costs nothing


def test_the_timer_passes_calls_through_and_sums_each_part_per_step() -> None:
    class Owner:
        def __init__(self) -> None:
            self.calls: list[tuple[Any, ...]] = []

        def work(self, *args: Any, **kwargs: Any) -> str:
            self.calls.append((args, tuple(sorted(kwargs.items()))))
            return "done"

    owner = Owner()
    timer = Timer()
    seen: list[Any] = []
    timer.wrap(owner, "work", "part", seen.append)
    assert owner.work(1, key=2) == "done" and owner.work(3) == "done"
    assert owner.calls == [((1,), (("key", 2),)), ((3,), ())]
    assert seen == ["done", "done"]
    assert timer.current["part"] > 0.0
    assert timer.began["part"] <= timer.ended["part"]
    timer.clear()
    assert timer.current == {} and timer.began == {} and timer.ended == {}


PROG = "python -m qualification.engine.probe_step_host"
BATCHES = (
    "argument --batches: expected a comma-separated list of distinct positive integers (ASCII "
    "digits; no sign, blank or leading zero), e.g. 1,4,8,16, got "
)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--batches", "1,x"], BATCHES + "'1,x' ('x' is not a positive integer)"),
        (["--batches", "0,4"], BATCHES + "'0,4' ('0' is not a positive integer)"),
        # int() per item took these, or split them into a stray empty item
        (["--batches", "1,,2"], BATCHES + "'1,,2' ('' is not a positive integer)"),
        (["--batches", "1.5"], BATCHES + "'1.5' ('1.5' is not a positive integer)"),
        (["--batches", "-3"], BATCHES + "'-3' ('-3' is not a positive integer)"),
        (["--batches", "0"], BATCHES + "'0' ('0' is not a positive integer)"),
        (["--batches", "a"], BATCHES + "'a' ('a' is not a positive integer)"),
        (["--batches", "1, 2"], BATCHES + "'1, 2' (' 2' is not a positive integer)"),
        (["--batches", "1_0"], BATCHES + "'1_0' ('1_0' is not a positive integer)"),
        (["--batches", "+2"], BATCHES + "'+2' ('+2' is not a positive integer)"),
        (["--batches", "4,"], BATCHES + "'4,' ('' is not a positive integer)"),
        (["--batches", "1,4,4"], BATCHES + "'1,4,4' (4 is given twice)"),
        (["--steps", "0"], "argument --steps: expected an integer >= 1, got '0'"),
        (
            ["--steps", "1_0"],
            "argument --steps: expected an integer (ASCII digits, optional leading '-', at most "
            "19 digits), got '1_0'",
        ),
    ],
)
def test_bad_arguments_are_refused_in_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == f"{PROG}: error: {message} (see {PROG} --help)\n"


def test_good_batches_are_read_in_the_order_given() -> None:
    from qualification.engine.probe_step_host import _batches

    assert _batches("16,1,4") == [16, 1, 4]
    assert _batches("7") == [7]


def test_help_answers_without_vllm(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m qualification.engine.probe_step_host")
    assert "example: .tox/engine/bin/python -m qualification.engine.probe_step_host" in out


def test_without_vllm_it_says_so_and_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm raises ImportError
    monkeypatch.setattr(os, "environ", dict(os.environ))  # the probe sets vLLM's variables
    assert main(["--batches", "1"]) == 2
    assert capsys.readouterr().err.startswith("error: needs vLLM (tox -e engine): ")
