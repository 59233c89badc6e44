"""The fuzz campaign's own machinery: seeds are valid, mutations replay deterministically, the
judge tells each outcome class apart, and a failure is minimised to the mutations that matter.
(The campaign itself runs as ``tox -e fuzz``.)"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

from qualification.fuzz import SEEDS, Case, Executor, Mutation, Outcome, build, cases, classify
from qualification.fuzz._campaign import minimise, traceback_signature
from qualification.fuzz._mutate import apply
from qualification.fuzz._seeds import SEEDS_BY_NAME


def reply(code: int, err: str = "", out: str = "", escaped: str = "") -> dict[str, Any]:
    return {"code": code, "out": out, "err": err, "traceback": escaped, "seconds": 0.0}


def test_the_judge_tells_the_classes_apart() -> None:
    assert classify(reply(0, out="latency"), []).kind == "accept"
    clean = classify(reply(2, err="aisim: error: traffic: required\n"), [])
    assert (clean.kind, clean.err) == ("reject", "aisim: error: traffic: required")
    usage = reply(2, err="aisim estimate: error: argument --tp: bad (see aisim estimate --help)\n")
    assert classify(usage, []).kind == "reject"
    assert classify(reply(1, err="boom\n"), []).signature == "exit status 1"
    two_lines = classify(reply(2, err="usage: aisim\naisim: error: x\n"), [])
    assert (two_lines.kind, two_lines.signature) == (
        "contract",
        "error not on one 'aisim: error:' line",
    )
    written = classify(reply(2, err="aisim: error: x\n"), ["out/requests.parquet"])
    assert (written.kind, written.signature) == ("contract", "files written on error")
    noisy = classify(reply(2, err="aisim: error: x\n", out="half"), [])
    assert noisy.signature == "stdout written on error"


def test_a_traceback_is_named_by_type_and_innermost_aisim_frame() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/x/site-packages/aisim/cli/__init__.py", line 40, in main\n'
        "    return int(args.handler(args))\n"
        '  File "/x/site-packages/aisim/_io.py", line 412, in canonical_json\n'
        "    return json.dumps(value)\n"
        '  File "/usr/lib/python3.11/json/encoder.py", line 240, in floatstr\n'
        "ValueError: Out of range float values are not JSON compliant\n"
    )
    assert traceback_signature(text) == "ValueError at aisim/_io.py:canonical_json"
    outcome = classify(reply(1, escaped=text), [])
    assert (outcome.kind, outcome.signature) == ("traceback", traceback_signature(text))


def test_every_seed_runs_clean() -> None:
    """A mutation's rejection must be the mutation's doing: each seed alone exits 0 (or its
    ``expect``: record without PyTorch is a clean refusal)."""
    executor = Executor(time_bound_s=120.0)
    try:
        outcomes = {seed.name: executor.run(build(seed, ())) for seed in SEEDS}
    finally:
        executor.close()
    assert {name: (outcome.kind, outcome.code) for name, outcome in outcomes.items()} == {
        seed.name: ("accept", 0) if seed.expect == 0 else ("reject", seed.expect) for seed in SEEDS
    }


def test_every_command_has_a_campaign() -> None:
    """Issue 28: the campaign covers every command (record only where PyTorch is absent, as in
    the fuzz environment, since a valid recording runs for minutes)."""
    import importlib.util

    expected = {
        "replay",
        "estimate",
        "speculation explain",
        "speculation acceptance",
        "sweep",
        "schema",
        "compare",
        "snapshot",
        "qualify mape",
        "qualify calibrate",
    }
    if importlib.util.find_spec("torch") is None:
        expected.add("record")
    assert {seed.campaign for seed in SEEDS} == expected


def test_nonsense_and_judged_exits() -> None:
    """An invalid-by-construction case that exits 0 is accepted nonsense; compare's exit 1 (a
    prediction moved) is an answer when the seed says the command judges its input."""
    assert classify(reply(0, out="ok"), [], nonsense=True).kind == "nonsense"
    assert classify(reply(2, err="aisim: error: x: unknown\n"), [], nonsense=True).kind == (
        "reject"
    )
    assert classify(reply(1, out="moved"), [], judged=True).kind == "accept"
    assert classify(reply(1, out="moved"), []).kind == "contract"
    seed = SEEDS_BY_NAME["replay-csv-trace"]
    unknown = build(seed, (Mutation("replay.yaml", ("engine",), "add_key", "colour"),))
    known = build(seed, (Mutation("replay.yaml", ("engine",), "add_key", "workers"),))
    bogus = build(seed, (Mutation("argv", (1,), "add_key", "--bogus"),))
    assert (unknown.nonsense, known.nonsense, bogus.nonsense) == (True, False, True)
    explain = SEEDS_BY_NAME["explain-dflash"]
    free_form = build(
        explain, (Mutation("spec.yaml", ("speculation", "draft_config"), "add_key", "rope"),)
    )
    assert not free_form.nonsense  # a drafter's config.json may carry any extra key


def test_the_executor_reports_a_clean_rejection_and_writes_nothing() -> None:
    seed = SEEDS_BY_NAME["replay-csv-trace"]
    # A CSV cell Python's int() accepts and we do not: row 1 (after the header), column 1.
    case = build(seed, (Mutation("trace.csv", (1, 1), "set", "1_000"),))
    executor = Executor(time_bound_s=120.0)
    try:
        outcome = executor.run(case)
    finally:
        executor.close()
    assert outcome.kind == "reject"
    assert outcome.err == (
        "aisim: error: trace.csv:2.prompt_tokens: expected an integer (ASCII digits, optional "
        "leading '-', at most 19 digits), got '1_000'"
    )


def test_mutations_replay_without_touching_the_seed() -> None:
    tree = {"a": {"b": [1, 2]}, "c": 3}
    assert apply(tree, Mutation("f", ("a", "b", 1), "set", "x")) == {"a": {"b": [1, "x"]}, "c": 3}
    assert apply(tree, Mutation("f", ("a",), "delete")) == {"c": 3}
    assert apply(tree, Mutation("f", ("a", "b", 0), "duplicate")) == {"a": {"b": [1, 1, 2]}, "c": 3}
    assert apply(tree, Mutation("f", ("gone", 0), "set", 1)) == tree  # a vanished path: no-op
    assert tree == {"a": {"b": [1, 2]}, "c": 3}


@settings(max_examples=25)
@given(cases())
def test_a_drawn_case_rebuilds_identically_from_its_mutations(case: Case) -> None:
    again = build(SEEDS_BY_NAME[case.seed], case.mutations)
    assert (again.argv, again.files) == (case.argv, case.files)


class FakeExecutor:
    """Fails (a made-up traceback) exactly when the tp flag holds '+1'."""

    def __init__(self) -> None:
        self.runs = 0

    def run(self, case: Case) -> Outcome:
        self.runs += 1
        if "+1" in case.argv:
            return Outcome("traceback", "ValueError at aisim/x.py:f")
        return Outcome("reject")


def test_minimise_keeps_only_the_mutations_that_matter() -> None:
    seed = SEEDS_BY_NAME["estimate-files"]
    tp_value = seed.argv.index("--tp") + 1
    noise = Mutation("config.json", ("vocab_size",), "set", 7)
    culprit = Mutation("argv", (tp_value,), "set", "+1")
    other = Mutation("gpu.yaml", ("tdp_w",), "set", 1)
    case = build(seed, (noise, culprit, other))
    failing = Outcome("traceback", "ValueError at aisim/x.py:f")
    small = minimise(case, failing, FakeExecutor())  # type: ignore[arg-type]
    assert small.mutations == (culprit,)


@pytest.mark.parametrize("name", sorted(SEEDS_BY_NAME))
def test_seed_argv_names_only_its_own_files(name: str) -> None:
    seed = SEEDS_BY_NAME[name]
    files = {file.name for file in seed.files}
    mentioned = {arg for arg in seed.argv if "." in arg and not arg.startswith(("-", "{"))}
    assert mentioned - {"Qwen/Qwen3-8B"} <= files | {"Qwen3-8B"}


def test_an_unknown_key_a_later_mutation_removes_is_not_nonsense() -> None:
    """Found by the long profile (seed 1, case 1539): a key added to ``params`` and then the
    whole ``params`` deleted leaves a valid block, which is rightly accepted."""
    seed = SEEDS_BY_NAME["explain-dflash"]
    added = Mutation("spec.yaml", ("speculation", "params"), "add_key", 220)
    gone = Mutation("spec.yaml", ("speculation", "params"), "delete")
    cut = Mutation("spec.yaml", (), "raw_truncate", 10)
    assert build(seed, (added,)).nonsense
    assert not build(seed, (added, gone)).nonsense
    assert not build(seed, (added, cut)).nonsense
