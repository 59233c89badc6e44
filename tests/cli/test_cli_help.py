"""``aisim --help`` and each command's: every option explains itself, examples stay as written."""

from __future__ import annotations

import argparse

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


def test_every_option_has_a_help_line() -> None:
    # `aisim record engine` forwards the engine recorder's own arguments (documented in
    # docs/evidence.md, "Recording"); every other command's options explain themselves.
    missing = [
        f"{name} {action.option_strings or action.dest}"
        for name, parser in _parsers(build_parser(), "aisim")
        if name != "aisim record engine"
        for action in parser._actions
        if not isinstance(action, (argparse._SubParsersAction, argparse._HelpAction))
        and action.help is None
    ]
    assert missing == []


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
