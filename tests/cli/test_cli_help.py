"""``aisim --help`` and each command's: every option explains itself, examples stay as written."""

from __future__ import annotations

import argparse
import re

import pytest

from aisim.cli import build_parser, main


def _parsers(
    parser: argparse.ArgumentParser, name: str
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                found += _parsers(sub, f"{name} {sub_name}")
    return found


def test_every_command_prints_its_help() -> None:
    # Formats every help text (a stray '%' in one raises TypeError here).
    for name, parser in _parsers(build_parser(), "aisim"):
        assert parser.format_help().startswith(f"usage: {name}")


def _options() -> list[tuple[str, argparse.Action, str]]:
    """Every option with its help text as printed ('%(default)s' expanded)."""
    return [
        (name, action, parser._get_formatter()._expand_help(action) if action.help else "")
        for name, parser in _parsers(build_parser(), "aisim")
        for action in parser._actions
        if not isinstance(action, (argparse._SubParsersAction, argparse._HelpAction))
    ]


def test_every_option_has_a_help_line() -> None:
    # `aisim record engine` included: its options are the engine recorder's own.
    missing = [
        f"{name} {action.option_strings or action.dest}"
        for name, action, _ in _options()
        if action.help is None
    ]
    assert missing == []
    names = {name for name, _, _ in _options()}
    assert "aisim record engine" in names


def test_defaults_are_written_one_way() -> None:
    # '(default: VALUE)' at the end of the help, the value from argparse's '%(default)s' where
    # the option has one; never '(default VALUE)', a bare '(VALUE)' or 'X (default)'.
    old_forms = re.compile(r"\(default [^:]|\(default\)|; default |the default\)|\(\d[\d.,]*\)")
    unstated, written_otherwise = [], []
    for name, action, text in _options():
        if action.help == argparse.SUPPRESS:
            continue
        where = f"{name} {action.option_strings or action.dest}: {text}"
        if old_forms.search(text):
            written_otherwise.append(where)
        if (
            action.default not in (None, False, True, "", [], argparse.SUPPRESS)
            and "(default: " not in text
        ):
            unstated.append(where)
    assert written_otherwise == []
    assert unstated == []


def test_record_engine_help_states_its_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["record", "engine", "--help"])
    assert exit_info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    # The recorder's defaults, as qualification.engine._cli sets them.
    assert "vLLM max_num_seqs (default: 8)" in out
    assert "served: Poisson arrival rate in requests/s (default: 2.0)" in out
    assert "speculative decoding: none, draft_model" in out
    # The description's count of served runs is the option's default (it said "twice").
    assert "(--served-runs times, 3 by default)" in out
    assert "served repeats of the trace, for the engine's own noise (default: 3)" in out


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        ([], "  aisim replay docs/examples/replay/aggregated_mtp.yaml --out out/replay"),
        (
            ["replay"],
            "  aisim replay docs/examples/replay/aggregated_mtp.yaml --out out/replay --overwrite \\",
        ),
        (
            ["sweep"],
            "      --merge-over traffic.load.rate_rps   # each scheme's percentiles over its loads",
        ),
        (
            ["estimate"],
            "  aisim estimate --model Qwen3-8B --hardware h100 --batch 8 --kv 1024 --estimator roofline_ideal",
        ),
        (["advise"], "      --acceptance ngram=0.5 --replicas 5 --out out/advice"),
    ],
)
def test_examples_are_printed_line_by_line(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "\nexamples" in out
    assert line in out.splitlines()


def test_top_level_lists_commands_in_a_users_order(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    listed = [
        name
        for name in (
            "speculation",
            "estimate",
            "replay",
            "sweep",
            "advise",
            "schema",
            "qualify",
            "record",
            "snapshot",
            "compare",
        )
        if f"\n    {name} " in out or f"\n    {name}\n" in out
    ]
    assert listed == sorted(listed, key=lambda name: out.index(f"\n    {name}"))
    assert len(listed) == 10


def test_the_harness_uncertainty_module_prints_its_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A bare '%' in an argparse help string is a format directive: '90 % intervals' made
    # 'python -m qualification.uncertainty --help' end in "TypeError: %i format".
    from qualification.uncertainty.__main__ import main as uncertainty_main

    with pytest.raises(SystemExit) as exit_info:
        uncertainty_main(["--help"])
    assert exit_info.value.code == 0
    assert "coverage of the 90 % intervals (held out)" in capsys.readouterr().out
