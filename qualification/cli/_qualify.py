"""``aisim qualify mape|calibrate|engine|report|rulecheck|public|public-gpu``: score, publish.

The logic lives in ``qualification.mape``, ``qualification.calibrate``, ``qualification.report``,
``qualification.public`` and ``qualification.public_gpu``; this module only parses arguments
and prints.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from aisim.cli import integer_argument as integer
from aisim.cli import number_argument as number
from aisim.errors import ConfigError
from aisim.files import atomic_write_text, canonical_json, check_output_dir, check_output_file

#: What ``qualify mape --out`` and ``qualify engine --out`` write besides their plots (checked
#: before any work; the plots' names are checked again when they are known).
MAPE_FILES = ("mape.json", "mape.md", "predicted_vs_measured.png", "signed_error_by_config.png")
#: Every file ``qualify engine --out`` writes (``qualification.engine.write_outputs``): a folder
#: named cdf_ttft.png was found only after the scoring.
ENGINE_FILES = ("engine.json", "engine.md", "cdf_ttft.png", "cdf_e2e.png", "scatter_e2e.png")
OVERWRITE_HELP = "replace existing outputs (refused otherwise)"


def _path(text: str) -> Path:
    """``type=`` for path arguments: ``Path('')`` is ``.``, so ``--out ''`` wrote a score into
    the current folder (and ``qualify engine ''`` read it as a recording)."""
    if not text:
        raise argparse.ArgumentTypeError("expected a path, got an empty string")
    return Path(text)


def register(commands: Any) -> None:
    """Add ``qualify`` with its ``mape``, ``calibrate`` and ``report`` subcommands."""
    qualify = commands.add_parser(
        "qualify",
        help="score predictions against recordings and public measurements; the release report",
        description=(
            "Score aisim's predictions against recorded SD rounds, engine recordings and public "
            "measurements, and judge them all against the release plan (docs/evidence.md, "
            "docs/qualification.md)."
        ),
    )
    actions = qualify.add_subparsers(dest="qualify_command", metavar="ACTION", required=True)

    mape = actions.add_parser(
        "mape",
        help="score an estimator against a recorded dataset",
        description=(
            "Per-row predicted vs measured, per-cell table, round-weighted and "
            "equal-configuration MAPE, P90, worst configuration, bias and coverage."
        ),
    )
    mape.add_argument("dataset", metavar="DATASET", help="dataset directory (or one of its files)")
    mape.add_argument(
        "--estimator",
        default="rule",
        choices=("rule", "stp-widened", "calibrated", "measured_round"),
        help=(
            "rule: the published STP->SD rule; calibrated: needs --coefficients; "
            "measured_round: needs --rounds (default: %(default)s)"
        ),
    )
    mape.add_argument(
        "--rounds",
        metavar="FILE",
        help=(
            "measured_round: the sd_rounds.parquet of an independent recording of the same "
            "identity (never the scored dataset's own: circular)"
        ),
    )
    mape.add_argument("--coefficients", metavar="FILE", help="a calibration artefact (JSON)")
    mape.add_argument("--tests", action="store_true", help="add KS and TOST equivalence tests")
    mape.add_argument(
        "--tost-margin", type=number, default=0.10, help="TOST margin (default: %(default)s)"
    )
    mape.add_argument("--out", metavar="DIR", type=_path, help="write mape.json, mape.md, plots")
    mape.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    mape.set_defaults(handler=mape_command)

    calibrate = actions.add_parser(
        "calibrate",
        help="fit (a, b) of (a d + b) F_STP with held-out validation",
        description=(
            "Fit the rule's coefficients on a dataset, validate on held-out configurations "
            "(never on fitted rows) next to the published rule, and optionally save the "
            "coefficients as a named, versioned artefact."
        ),
    )
    calibrate.add_argument(
        "dataset", metavar="DATASET", help="dataset directory (or one of its files)"
    )
    calibrate.add_argument(
        "--validation",
        default="loco",
        help="loco (leave one configuration out) or kfold:K (default: %(default)s)",
    )
    calibrate.add_argument("--name", help="artefact name (default: <dataset>-fit)")
    calibrate.add_argument(
        "--version", type=integer, default=1, help="artefact version (default: %(default)s)"
    )
    calibrate.add_argument("--out", metavar="FILE", type=_path, help="write the artefact here")
    calibrate.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    calibrate.set_defaults(handler=calibrate_command)

    engine = actions.add_parser(
        "engine",
        help="replay a recorded vLLM engine's served runs and score the difference",
        description=(
            "Build the replay config from the engine settings recorded with the served runs, "
            "price passes from the step table of a separate recording (default DATASET/grid), "
            "replay the served trace, and report per-request TTFT/TPOT/E2E errors (median, P90, "
            "MAPE, bias), throughput and acceptance-length errors next to the engine's own "
            "repeat noise. Evidence type: engine-measurement."
        ),
    )
    engine.add_argument("dataset", metavar="DATASET", type=_path, help="engine recording directory")
    engine.add_argument(
        "--step-table",
        metavar="DIR",
        type=_path,
        help="the step table to price passes with (a recording or its grid/) (default: DATASET)",
    )
    engine.add_argument(
        "--out", metavar="DIR", type=_path, help="write engine.json, engine.md, plots"
    )
    engine.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    engine.set_defaults(handler=engine_command)
    engine_import = actions.add_parser(
        "engine-import",
        help="convert a plain engine recording (CSV + JSON, any driver) into an engine recording",
        description=(
            "Read PLAIN (settings.json, grid.csv, grid-metrics.prom, served-N/requests.csv, "
            "served-N/steps.csv, served-N/metrics.prom; docs/evidence.md, 'Bring your own "
            "engine'), check every file as a recording is loaded, and write an engine recording "
            "to --out that `aisim qualify engine` scores. Nothing is written on an error."
        ),
    )
    engine_import.add_argument("plain", metavar="PLAIN", type=_path, help="plain recording folder")
    engine_import.add_argument(
        "--out", required=True, metavar="DIR", type=_path, help="recording to write"
    )
    engine_import.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    engine_import.set_defaults(handler=engine_import_command)

    report = actions.add_parser(
        "report",
        help="judge the committed evidence against the qualification plan (HTML + JSON)",
        description=(
            "Run parity, probes and the prediction gate, score every dataset under --evidence "
            "with the published rule and a held-out calibration (bootstrap intervals over "
            "configurations), judge every criterion of --plan (PASS / FAIL / NOT RUN / KNOWN GAP) "
            "and write report.html + report.json. Exits 1 unless the overall verdict is PASS."
        ),
    )
    report.add_argument(
        "--out", metavar="DIR", type=_path, required=True, help="write report.html and report.json"
    )
    report.add_argument(
        "--plan",
        metavar="FILE",
        type=_path,
        help="acceptance criteria (default: the release plan, qualification/plan.yaml)",
    )
    report.add_argument(
        "--evidence",
        metavar="DIR",
        type=_path,
        help=(
            "recorded datasets (default: ./evidence, else the evidence/ of the checkout aisim "
            "runs from)"
        ),
    )
    report.add_argument(
        "--check-results",
        metavar="NAME=FILE",
        action="append",
        default=[],
        help=(
            "read a check's result from a pytest JUnit XML file instead of running it "
            "(NAME: parity or probes; repeatable)"
        ),
    )
    report.add_argument(
        "--skip-checks",
        action="store_true",
        help="do not run parity/probes/gate (they are then NOT RUN, which fails the plan)",
    )
    report.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    report.set_defaults(handler=report_command)

    rulecheck = actions.add_parser(
        "rulecheck",
        help="the default's SD round / widened STP next to the published 0.08 d + 1.25",
        description=(
            "Over d 1..5, B 1..64 and K 1k..32k per request on each built-in GPU, price MTP and "
            "EAGLE-3 rounds with the default roofline and divide by its widened STP pass "
            "F_STP((d + 1) B, K); print min / median / max next to the published factor and say "
            "where and why they differ."
        ),
    )
    rulecheck.add_argument(
        "--model", default="Qwen/Qwen3-8B", help="target, a catalogue name (default: %(default)s)"
    )
    rulecheck.add_argument(
        "--hardware", action="append", metavar="GPU", help="limit to these GPUs (repeatable)"
    )
    rulecheck.add_argument("--json", action="store_true", help="print canonical JSON")
    rulecheck.set_defaults(handler=rulecheck_command)

    public = actions.add_parser(
        "public",
        help="score roofline_ideal and the default roofline against public measurements",
        description=(
            "Predict every committed public figure (decode ms per token, EAGLE-3 round / STP "
            "ratios; sources in qualification/public/measurements.json) with roofline_ideal "
            "(before) and roofline (the default), and print the errors and MAPE; then "
            "Llama-3.1-70B prefill at TP 4 / 8 against a silicon-based reference simulator's "
            "figures (qualification/public/reference_prefill.json) with the default."
        ),
    )
    public.add_argument("--json", action="store_true", help="print canonical JSON")
    public.set_defaults(handler=public_command)

    public_gpu = actions.add_parser(
        "public-gpu",
        help="predict public GPU serving runs (InferenceX, speculators) and score them",
        description=(
            "Build the replay of every measured point in evidence/public-gpu (the workload as it "
            "was run), predict it with the default cost model and score median TTFT, mean / "
            "median TPOT, throughput per GPU and the SD gain; refused points are counted with "
            "their reason. Writes public_gpu.json, public_gpu.md and one plot per GPU."
        ),
    )
    public_gpu.add_argument(
        "--evidence",
        metavar="DIR",
        type=_path,
        default=Path("evidence/public-gpu"),
        help="the public measurements (default: evidence/public-gpu)",
    )
    public_gpu.add_argument(
        "--only",
        metavar="TEXT",
        action="append",
        default=[],
        help="keep points whose id contains every TEXT given (repeatable), e.g. h200/sglang",
    )
    public_gpu.add_argument("--out", metavar="DIR", type=_path, help="write the report here")
    public_gpu.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    public_gpu.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    public_gpu.set_defaults(handler=public_gpu_command)


def mape_command(args: argparse.Namespace) -> int:
    from qualification.calibrate import calibrated_factory, load_artefact
    from qualification.datasets import load_dataset
    from qualification.mape import evaluate, make_predictor, to_markdown, write_mape_outputs

    if args.coefficients and args.estimator != "calibrated":
        raise ConfigError(
            f"--coefficients: only used with --estimator calibrated, got --estimator "
            f"{args.estimator}"
        )
    if args.out is not None:
        check_output_dir(args.out, args.overwrite, "--out", MAPE_FILES)
    dataset = load_dataset(args.dataset)
    factory = calibrated_factory(load_artefact(args.coefficients)) if args.coefficients else None
    predictor = make_predictor(args.estimator, dataset, factory, rounds=args.rounds)
    report, scored = evaluate(
        dataset, predictor, with_tests=args.tests, tost_margin=args.tost_margin
    )
    if args.out is not None:
        written = write_mape_outputs(report, scored, args.out, overwrite=args.overwrite)
        print(f"wrote {', '.join(str(path) for path in written)}")
    else:
        print(to_markdown(report), end="")
    return 0


def calibrate_command(args: argparse.Namespace) -> int:
    from qualification.calibrate import (
        calibrate,
        calibration_markdown,
        check_artefact_name,
        check_artefact_version,
    )
    from qualification.datasets import load_dataset

    # Before the fit (minutes on a big dataset), under the flags' names; '' was read as no
    # name (the default one) unseen.
    if args.name is not None:
        check_artefact_name(args.name, "--name")
    check_artefact_version(args.version, "--version")
    if args.out is not None:
        check_output_file(args.out, args.overwrite, "--out")
    dataset = load_dataset(args.dataset)
    result = calibrate(dataset, method=args.validation, name=args.name, version=args.version)
    print(calibration_markdown(result), end="")
    if args.out is not None:
        atomic_write_text(args.out, canonical_json(result["artefact"]), overwrite=args.overwrite)
        print(f"wrote {args.out}")
    return 0


def engine_import_command(args: argparse.Namespace) -> int:
    # imported here: the engine package needs the qualify extra (pandas), and `aisim` without
    # it must still build its parser (tests/test_base_install.py)
    from qualification.engine import import_plain

    check_output_dir(args.out, args.overwrite, "--out")
    written = import_plain(args.plain, args.out, overwrite=args.overwrite)
    print(f"wrote {written}")
    return 0


def engine_command(args: argparse.Namespace) -> int:
    from qualification.engine import (
        load_recording,
        load_step_table,
        score_recording,
        to_markdown,
        write_outputs,
    )

    if args.out is not None:
        check_output_dir(args.out, args.overwrite, "--out", ENGINE_FILES)
    recording = load_recording(args.dataset)
    table = load_step_table(args.step_table) if args.step_table else recording.grid
    if table is None:
        raise ConfigError(
            f"DATASET {str(args.dataset)!r}: has no grid/ step table; give "
            "--step-table with a separate recording of the same engine"
        )
    report, per_request = score_recording(recording, table)
    if args.out is not None:
        written = write_outputs(report, per_request, args.out, overwrite=args.overwrite)
        print(f"wrote {', '.join(str(path) for path in written)}")
    else:
        print(to_markdown(report, []), end="")
    return 0


def report_command(args: argparse.Namespace) -> int:
    from qualification.report import (
        REPORT_FILES,
        build_report,
        check_report_target,
        parse_check_results,
        plan_source,
        resolve_evidence,
        write_report,
    )

    check_output_dir(args.out, args.overwrite, "--out", REPORT_FILES)  # before any work
    check_report_target(args.out, args.overwrite)
    plan, source = plan_source(args.plan)
    evidence, root = resolve_evidence(args.evidence)
    results = parse_check_results(args.check_results)
    command = f"aisim qualify report --plan {source['path']} --evidence {evidence.as_posix()}"
    command += f" --out {args.out.as_posix()}"
    command += " --skip-checks" if args.skip_checks else ""
    report, images = build_report(
        evidence,
        plan,
        run_checks_now=not args.skip_checks,
        root=root,
        command=command,
        check_results=results,
        plan_source=source,
    )
    written = write_report(report, images, args.out, overwrite=args.overwrite)
    print(f"wrote {', '.join(str(path) for path in written)}")
    verdict = report["verdict"]
    for result in report["criteria"]:
        if result["status"] != "PASS":
            reason = f" ({result['reason']})" if result["reason"] else ""
            print(f"{result['status']}: {result['id']}{reason}")
    for problem in verdict["problems"]:
        print(f"FAIL: {problem}")
    print(f"verdict: {verdict['summary']}")
    return 0 if verdict["overall"] == "PASS" else 1


def rulecheck_command(args: argparse.Namespace) -> int:
    from aisim.config import get_gpu, get_model
    from qualification.public import rulecheck, rulecheck_markdown

    model = get_model(args.model, "--model").name
    gpus = None
    if args.hardware:
        gpus = tuple(get_gpu(name, "--hardware").name for name in args.hardware)
    rows = rulecheck(model, gpus)
    print(canonical_json(rows) if args.json else rulecheck_markdown(rows), end="")
    return 0


def public_command(args: argparse.Namespace) -> int:
    from qualification.public import prefill_markdown, prefill_reference, score, score_markdown

    before, after = score("roofline_ideal"), score("roofline")
    prefill = prefill_reference("roofline")
    if args.json:
        print(canonical_json({"before": before, "after": after, "prefill": prefill}), end="")
    else:
        print(score_markdown(before, after), end="")
        print(
            f"\nLlama-3.1-70B prefill, batch 1: {prefill['reference']} ms / roofline ms (error)\n"
        )
        print(prefill_markdown(prefill), end="")
    return 0


def public_gpu_command(args: argparse.Namespace) -> int:
    from qualification.public_gpu import run, stderr_progress, to_markdown, write_outputs

    if args.out is not None:
        check_output_dir(args.out, args.overwrite, "--out", ("public_gpu.json",))
    if not args.evidence.is_dir():
        raise ConfigError(
            f"--evidence {str(args.evidence)!r}: not a directory; expected the public "
            "measurements folder (evidence/public-gpu of an aisim checkout)"
        )
    only = list(args.only)
    report = run(
        args.evidence,
        select=(lambda point: all(text in point["id"] for text in only)) if only else None,
        progress=None if args.quiet else stderr_progress,
    )
    if only and not report["counts"]["points"]:
        raise ConfigError(
            f"--only {' '.join(repr(text) for text in only)}: no point id contains every text "
            "given (an id reads SOURCE/GPU/ENGINE/PRECISION/SD/PARALLELISM/ISL-OSL/cCONC, e.g. "
            "--only h200/sglang --only /c64); nothing was written"
        )
    if args.out is not None:
        written = write_outputs(report, args.out, overwrite=args.overwrite)
        print(f"wrote {', '.join(str(path) for path in written)}")
    else:
        print(to_markdown(report), end="")
    return 0
