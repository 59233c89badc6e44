"""Replay and sweep speed of two commits, compiled, side by side in one run.

    python -m qualification.bench.bench_commits --base 8d1e051 [--head HEAD] [--rounds 3]
        [--size 100000] [--work DIR]

For each commit: its tree (``git archive``), one mypyc-compiled wheel (``AISIM_PURE=0 pip
wheel --no-deps``) and a venv holding that wheel, whose other packages come from the running
interpreter's environment (a ``.pth`` line; nothing is downloaded). A commit's build is made
once and kept under ``--work`` (by full hash), so a second run starts measuring at once.

Then ``--rounds`` rounds, the two builds alternating (base, head; head, base; ...) so a load
change on the shared host hits both alike. Every child runs from ``/`` with
``PYTHONSAFEPATH=1``: it imports only its venv's wheel, and refuses a pure build. Per round and
build:

* **warm**: the shared 4000-request trace replayed in-process (``bench_replay --warm N``: SD off
  and ngram K=3, roofline timing), the least process CPU seconds per case;
* **100k**: one 100,000-request replay in its own process (``bench_scale --child``: trace
  read, validated and replayed, ``requests.parquet`` streamed), its CPU seconds and peak RSS;
* **sweep**: the 200-point bench sweep (``bench_sweep.sweep_config``: 200 requests, 10 rates x
  4 speculation settings x 5 sequence caps, fixed timing) on 1 worker, after one untimed
  1-point sweep; points per CPU second (caller + helpers) and per wall second.

The workloads are the current tree's (``bench_replay.config``, ``bench_scale.write_trace``,
``bench_sweep.sweep_config``); ``bench_replay`` and ``bench_scale`` run as each wheel ships
them (their replay configs are the same at both commits: check with ``git diff BASE HEAD --
qualification/bench``). Printed: each build's least CPU per figure over the rounds, the ratio
head / base (below 1: head is faster or smaller), the outputs' headline numbers (equal builds
replay the same events; where the commits schedule differently, as when the roofline's cost
terms changed, the CPU per simulated event is the comparable figure), each round's values, and
the load average around each round. CPU seconds are the figures a
loaded host disturbs least; wall-clock points/s are printed for orientation only. The last
line is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def _git(*args: str) -> str:
    completed = subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        raise SystemExit(f"bench_commits: git {' '.join(args)} failed: {completed.stderr.strip()}")
    return completed.stdout.strip()


def build(commit: str, work: Path) -> Path:
    """The interpreter of a venv holding ``commit``'s compiled wheel (built once, then kept)."""
    full = _git("rev-parse", "--verify", f"{commit}^{{commit}}")
    home = work / full[:12]
    python = home / "venv" / "bin" / "python"
    if python.exists():
        return python
    source, wheels = home / "src", home / "wheel"
    if not any(wheels.glob("aisim-*.whl")):
        source.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", full], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
        print(f"building {full[:12]} (compiled wheel; several minutes)", flush=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "-q",
                "--no-deps",
                "-w",
                str(wheels),
                str(source),
            ],
            env={**os.environ, "AISIM_PURE": "0"},
            check=True,
        )
    (wheel,) = wheels.glob("aisim-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(home / "venv")], check=True)
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # The wheel's dependencies: this interpreter's packages, after the venv's own (the wheel).
    (site / "zz_bench_dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8"
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
    )
    return python


def _child(python: Path, args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``python ARGS`` from ``/`` on the installed build only; the JSON on its last line."""
    completed = subprocess.run(
        [str(python), *args],
        cwd="/",
        env={
            **{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            "PYTHONSAFEPATH": "1",
            **(env or {}),
        },
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise SystemExit(f"bench_commits: child {args} failed:\n{completed.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    if result.get("compiled") is not True:
        raise SystemExit(f"bench_commits: {python} imported a pure aisim; compiled builds only")
    return result


def sweep_child(config_file: str) -> dict[str, Any]:
    """The bench sweep on 1 worker in this process: points per CPU and per wall second."""
    import aisim
    from aisim.sweep import run

    config = json.loads(Path(config_file).read_text(encoding="utf-8"))
    warm = json.loads(json.dumps(config))
    warm["axes"] = {"traffic.load.rate_rps": [2]}
    run(warm, workers=1)  # untimed: imports done, the trace parsed once in this process

    def cpu() -> float:
        own = resource.getrusage(resource.RUSAGE_SELF)
        helpers = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + helpers.ru_utime + helpers.ru_stime

    with tempfile.TemporaryDirectory() as out:
        start_cpu, start = cpu(), time.perf_counter()
        frame = run(config, workers=1, out=out)
        wall, used = time.perf_counter() - start, cpu() - start_cpu
    points = len(frame)
    return {
        "compiled": aisim.__compiled__,
        "points": points,
        "ok": int((frame["status"] == "ok").sum()),
        "cpu_s": used,
        "wall_s": wall,
        "mean_tpot_ms_sum": float(frame["mean_tpot_ms"].sum()),
    }


def measure(python: Path, files: dict[str, str], warm_repeat: int) -> dict[str, Any]:
    """One round of the three figures for one build."""
    warm = _child(
        python,
        ["-m", "qualification.bench.bench_replay", "--warm", str(warm_repeat)],
        {"AISIM_BENCH_TRACE": files["trace4000"]},
    )
    with tempfile.TemporaryDirectory(prefix="aisim-bench-commits-") as out:
        scale = _child(
            python, ["-m", "qualification.bench.bench_scale", "--child", files["trace100k"], out]
        )
    sweep = _child(python, [__file__, "--sweep-child", files["sweep"]])
    return {
        "warm_off_cpu_s": warm["cpu_s"]["off"],
        "warm_ngram_cpu_s": warm["cpu_s"]["ngram"],
        "warm_off_us_per_event": warm["cpu_s"]["off"] / warm["off"]["events"] * 1e6,
        "warm_ngram_us_per_event": warm["cpu_s"]["ngram"] / warm["ngram"]["events"] * 1e6,
        "warm_events": [warm["off"]["events"], warm["ngram"]["events"]],
        "replay_100k_cpu_s": scale["cpu_s"],
        "replay_100k_us_per_event": scale["cpu_s"] / scale["events"] * 1e6,
        "replay_100k_peak_rss_mib": scale["peak_rss_mib"],
        "replay_100k_headline": [
            scale["events"],
            scale["mean_ttft_ms"],
            scale["mean_e2e_latency_ms"],
        ],
        "sweep_points_per_cpu_s": sweep["points"] / sweep["cpu_s"],
        "sweep_points_per_s": sweep["points"] / sweep["wall_s"],
        "sweep_headline": [sweep["points"], sweep["ok"], sweep["mean_tpot_ms_sum"]],
    }


#: Figure -> True when more is better (points per second), else False (seconds, MiB).
FIGURES: dict[str, bool] = {
    "warm_off_cpu_s": False,
    "warm_ngram_cpu_s": False,
    "warm_off_us_per_event": False,
    "warm_ngram_us_per_event": False,
    "replay_100k_cpu_s": False,
    "replay_100k_us_per_event": False,
    "replay_100k_peak_rss_mib": False,
    "sweep_points_per_cpu_s": True,
    "sweep_points_per_s": True,
}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m qualification.bench.bench_commits")
    parser.add_argument("--base", help="the commit to compare against (e.g. 8d1e051)")
    parser.add_argument("--head", default="HEAD")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm-repeat", type=int, default=3)
    parser.add_argument("--size", type=int, default=100_000, help="requests of the scale replay")
    parser.add_argument(
        "--work",
        default=str(Path(tempfile.gettempdir()) / "aisim-bench-commits"),
        help="where the builds are kept (default: aisim-bench-commits in the temp folder)",
    )
    parser.add_argument("--sweep-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sweep_child:
        print(json.dumps(sweep_child(args.sweep_child)))
        return
    if not args.base:
        parser.error("--base COMMIT is required")
    from qualification.bench.bench_replay import TRACE
    from qualification.bench.bench_scale import write_trace
    from qualification.bench.bench_sweep import sweep_config

    work = Path(args.work)
    labels = {"base": _git("rev-parse", "--short=12", args.base)}
    labels["head"] = _git("rev-parse", "--short=12", args.head)
    pythons = {side: build(commit, work) for side, commit in labels.items()}
    runs: dict[str, list[dict[str, Any]]] = {"base": [], "head": []}
    loads: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory(prefix="aisim-bench-commits-") as folder:
        files = {
            "trace4000": str(Path(TRACE).resolve()),
            "trace100k": str(Path(folder) / "trace_100k.csv"),
            "sweep": str(Path(folder) / "sweep.json"),
        }
        write_trace(Path(files["trace100k"]), args.size)
        Path(files["sweep"]).write_text(json.dumps(sweep_config(files["trace4000"])), "utf-8")
        for turn in range(args.rounds):
            before = os.getloadavg()[0]
            order = ("base", "head") if turn % 2 == 0 else ("head", "base")
            for side in order:
                runs[side].append(measure(pythons[side], files, args.warm_repeat))
            loads.append((before, os.getloadavg()[0]))
            print(
                f"round {turn + 1}/{args.rounds} ({' then '.join(order)}): load average "
                f"{before:.1f} -> {loads[-1][1]:.1f}",
                flush=True,
            )
    report: dict[str, Any] = {"commits": labels, "rounds": args.rounds, "load_average": loads}
    print(f"base {labels['base']}, head {labels['head']}; best of {args.rounds} rounds each:")
    for figure, more_is_better in FIGURES.items():
        pick = max if more_is_better else min
        base = pick(run[figure] for run in runs["base"])
        head = pick(run[figure] for run in runs["head"])
        every = {side: [round(run[figure], 3) for run in runs[side]] for side in runs}
        report[figure] = {
            "base": base,
            "head": head,
            "head_over_base": head / base,
            **{f"{side}_rounds": values for side, values in every.items()},
        }
        print(
            f"  {figure:26s} base {base:10.3f}  head {head:10.3f}  head/base x{head / base:.3f}"
            f"  (rounds: base {every['base']}, head {every['head']})"
        )
    for headline in ("warm_events", "replay_100k_headline", "sweep_headline"):
        values = {side: runs[side][0][headline] for side in runs}
        report[headline] = values
        print(f"  {headline}: base {values['base']}, head {values['head']}")
    print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main()
