"""The front end of ``vllm serve`` from CPU accounting: terms that do not subtract two timings
made at different moments (``python -m qualification.engine.frontend_cpu``).

``qualification.engine.frontend`` derives the front-end terms as the probe's wall time minus
the grid's price of the same steps: that difference holds the front end *and* whatever the
worker's own steps cost beyond the grid at the probe's minutes (the host's speed then). Where
the probe also read each server process's CPU time (``frontend/probe-cpu.csv.gz``: per probe
batch, per process, ``/proc/PID/task/*/schedstat`` summed over threads), the front end is the
CPU time of every process but the worker (``VLLM::Worker``): the API server (``python``), the
engine core (``VLLM::EngineCor``) and the client (``client``) on the same core. Per batch:

* ``front_ms`` = the batch's CPU time summed over those processes; ``steps`` = the batch's
  output tokens per request (``max_tokens`` of its requests in ``frontend/probe.csv.gz``: one
  engine step streams one token to every running request); ``batch`` = B requests.
* the step line: over the ``decode`` batches, ``front_ms / steps`` (the front end per streamed
  step, the B requests' own per-request work spread over their steps) is fitted as
  ``step_ms + token_ms x B`` (``qualification.engine.frontend.fit_step_token``: least squares,
  both terms >= 0);
* ``request_ms`` = mean over the ``ttft`` batches (one request alone) of ``front_ms - steps x
  (step_ms + token_ms)``, clipped at 0: the request's own work besides its steps (HTTP,
  rendering and tokenizing the prompt, the request's registration, its last chunk).

A pooled model takes the batches of several recordings' probes together (one line through all
of them). ``--evaluate`` judges the rule where the answer is known: every ``vllm-bench-*``
recording under ``--root`` is scored (``aisim qualify engine``'s figures) with the committed
front-end model, with none, with the mean of the wall-minus-grid terms of every *other*
recording's own probe, and with the CPU terms pooled over every *other* recording's
``probe-cpu`` (leave-own-recording-out); and per probed recording with CPU accounting, the
batch-by-batch check that the processes' CPU adds up to the wall time and, per B, the
wall-minus-grid excess against the CPU line. docs/evidence.md, "The front end from CPU
accounting", keeps the tables.

usage: python -m qualification.engine.frontend_cpu RECORDING --from REC [--from REC ...]
           [--out FILE] [--overwrite]
       python -m qualification.engine.frontend_cpu --evaluate [--root evidence/engine] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from aisim.errors import AisimError, DataIntegrityError
from aisim.files import atomic_write_text, check_output_file
from aisim.fpm import FRONTEND_FILE, FRONTEND_SCHEMA
from qualification.engine.frontend import (
    PROBE_FILE,
    fit_step_token,
    integer_column,
    ms_column,
    read_probe,
    read_probe_table,
)

CPU_FILE = "frontend/probe-cpu.csv.gz"
CPU_COLUMNS = (
    "pass",
    "kind",
    "rep",
    "batch",
    "prompt_tokens",
    "process",
    "pid",
    "cpu_ms",
    "wall_ms",
)
#: The process that runs the model (its CPU time is the step the grid prices); every other
#: process of the probe's CPU file is the front end.
WORKER = "VLLM::Worker"
_BATCH_KEYS = ["pass", "kind", "rep", "batch", "prompt_tokens"]


def read_probe_cpu(path: str | Path) -> pd.DataFrame:
    """The probe's CPU rows, checked: exactly ``CPU_COLUMNS``, known kinds, integer rep >= 0,
    batch, prompt tokens and pid >= 1, finite cpu_ms and wall_ms >= 0, one worker row per
    batch. DataIntegrityError naming the file, row (0-based data row) and field otherwise."""
    frame, where = read_probe_table(path, CPU_COLUMNS, "the CPU accounting needs it")
    out = frame.copy()
    for column in ("rep", "batch", "prompt_tokens", "pid"):
        out[column] = integer_column(frame, column, 0 if column == "rep" else 1, where)
    for column in ("cpu_ms", "wall_ms"):
        out[column] = ms_column(frame, column, where)
    for _, group in out.groupby(_BATCH_KEYS, sort=True):
        if int((group["process"] == WORKER).sum()) != 1:
            raise DataIntegrityError(
                f"{where}: row {int(group.index[0])}: process: the batch needs exactly one "
                f"{WORKER!r} row (the model's process), found "
                f"{int((group['process'] == WORKER).sum())}"
            )
    return out


def batch_costs(cpu: pd.DataFrame, probe: pd.DataFrame, where: str = "probe") -> pd.DataFrame:
    """One row per probe batch: the batch keys, ``steps`` (its requests' max_tokens from the
    probe), ``front_ms`` (CPU of every process but the worker), ``worker_ms``, ``cpu_ms`` (all
    processes), ``wall_ms``. DataIntegrityError when a CPU batch has no requests in the probe."""
    steps: dict[tuple[Any, ...], int] = {}
    for key, group in probe.groupby(_BATCH_KEYS, sort=True):
        steps[tuple(key)] = int(group["max_tokens"].max())
    rows = []
    for key, group in cpu.groupby(_BATCH_KEYS, sort=True):
        if tuple(key) not in steps:
            named = ", ".join(f"{k} {v}" for k, v in zip(_BATCH_KEYS, key, strict=True))
            raise DataIntegrityError(
                f"{where}: row {int(group.index[0])}: the CPU batch ({named}) has no requests "
                "in the probe"
            )
        worker = float(group.loc[group["process"] == WORKER, "cpu_ms"].sum())
        total = float(group["cpu_ms"].sum())
        rows.append(
            {
                **dict(zip(_BATCH_KEYS, key, strict=True)),
                "steps": steps[tuple(key)],
                "front_ms": total - worker,
                "worker_ms": worker,
                "cpu_ms": total,
                "wall_ms": float(group["wall_ms"].iloc[0]),
            }
        )
    return pd.DataFrame(rows)


def fit_terms(batches: pd.DataFrame) -> dict[str, float]:
    """(step_ms, token_ms, request_ms) from batch rows (module docstring)."""
    decode = batches[batches["kind"] == "decode"]
    if decode.empty:
        raise DataIntegrityError("the probe's CPU file has no decode batches to fit the steps to")
    points = [
        (int(b), float(f) / float(s))
        for b, f, s in zip(decode["batch"], decode["front_ms"], decode["steps"], strict=True)
    ]
    step_ms, token_ms = fit_step_token(points)
    ttft = batches[batches["kind"] == "ttft"]
    if ttft.empty:
        raise DataIntegrityError("the probe's CPU file has no ttft batches to price a request")
    request = statistics.fmean(
        float(f) - float(s) * (step_ms + token_ms)
        for f, s in zip(ttft["front_ms"], ttft["steps"], strict=True)
    )
    return {"step_ms": step_ms, "token_ms": token_ms, "request_ms": max(0.0, request)}


def load_batches(recording: Path) -> pd.DataFrame:
    """``batch_costs`` of ``recording``'s probe and CPU file, with a ``recording`` column."""
    cpu = read_probe_cpu(recording / CPU_FILE)
    probe = read_probe(recording / PROBE_FILE)
    frame = batch_costs(cpu, probe, repr(str(recording / CPU_FILE)))
    frame.insert(0, "recording", recording.name)
    return frame


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build(recording: Path, sources: Sequence[Path]) -> dict[str, Any]:
    """The ``frontend_model.json`` object for ``recording`` from the CPU accounting of the
    probes of ``sources`` (pooled): terms, the figures per source and B, provenance."""
    if not sources:
        raise DataIntegrityError("--from: name at least one recording with a probe-cpu file")
    frames = [load_batches(source) for source in sources]
    pooled = pd.concat(frames, ignore_index=True)
    terms = fit_terms(pooled)
    decode = pooled[pooled["kind"] == "decode"]
    per_b = []
    for (name, batch), group in decode.groupby(["recording", "batch"], sort=True):
        per_b.append(
            {
                "recording": str(name),
                "batch": int(str(batch)),
                "batches": len(group),
                "front_per_step_ms": round(float((group["front_ms"] / group["steps"]).mean()), 4),
                "worker_per_step_ms": round(float((group["worker_ms"] / group["steps"]).mean()), 4),
            }
        )
    base = recording.resolve().parent
    return {
        "schema": {"name": FRONTEND_SCHEMA, "version": 1},
        "source": (
            "CPU accounting of the probes of "
            + ", ".join(source.name for source in sources)
            + " (every process but the worker; qualification/engine/frontend_cpu.py)"
        ),
        "terms": {name: round(value, 4) for name, value in terms.items()},
        "decode_cpu": per_b,
        "derived_from": {
            "probes": [
                {
                    "probe": str((source / PROBE_FILE).resolve().relative_to(base)),
                    "probe_sha256": _sha256(source / PROBE_FILE),
                    "probe_cpu": str((source / CPU_FILE).resolve().relative_to(base)),
                    "probe_cpu_sha256": _sha256(source / CPU_FILE),
                }
                for source in sources
            ],
            "method": "qualification/engine/frontend_cpu.py (module docstring)",
        },
    }


def model_probes(model: dict[str, Any]) -> list[str]:
    """The recordings whose probes a ``frontend_model.json`` object was derived from (the
    first path component of ``derived_from.probe``, or of each ``derived_from.probes[].probe``
    of a pooled model)."""
    derived = model.get("derived_from")
    if not isinstance(derived, dict):
        raise DataIntegrityError("derived_from: missing (an object naming the probe)")
    if "probes" in derived:
        entries = derived["probes"]
        if not isinstance(entries, list) or not entries:
            raise DataIntegrityError(
                f"derived_from.probes: {entries!r} is not a non-empty list of probes"
            )
        names = []
        for index, entry in enumerate(entries):
            probe = entry.get("probe") if isinstance(entry, dict) else None
            if not isinstance(probe, str) or not probe:
                raise DataIntegrityError(
                    f"derived_from.probes[{index}].probe: {probe!r} is not a probe path"
                )
            names.append(probe.split("/", 1)[0])
        return names
    probe = derived.get("probe")
    if not isinstance(probe, str) or not probe:
        raise DataIntegrityError(f"derived_from.probe: {probe!r} is not a probe path")
    return [probe.split("/", 1)[0]]


# --- the held-out judgement -------------------------------------------------------------------


def consistency(recording: Path) -> dict[str, Any]:
    """Batch by batch, wall time - the processes' summed CPU time (median and largest |.|, ms);
    per decode B, the wall-minus-grid excess per step of ``qualification.engine.frontend``
    (its own grid) beside the CPU front end and worker per step and the CPU line at B."""
    from qualification.engine._recording import load_step_table
    from qualification.engine.frontend import derive

    batches = load_batches(recording)
    gap = batches["wall_ms"] - batches["cpu_ms"]
    wall = derive(read_probe(recording / PROBE_FILE), load_step_table(recording))
    own = fit_terms(batches)
    rows = []
    decode = batches[batches["kind"] == "decode"]
    for row in wall["decode"]:
        mine = decode[decode["batch"] == row["batch"]]
        rows.append(
            {
                "batch": row["batch"],
                "wall_excess_ms": row["excess_ms"],
                "grid_ms": row["grid_ms"],
                "front_per_step_ms": float((mine["front_ms"] / mine["steps"]).mean()),
                "worker_per_step_ms": float((mine["worker_ms"] / mine["steps"]).mean()),
                "cpu_line_ms": own["step_ms"] + own["token_ms"] * row["batch"],
            }
        )
    return {
        "recording": recording.name,
        "batches": len(batches),
        "wall_minus_cpu_median_ms": float(gap.median()),
        "wall_minus_cpu_max_abs_ms": float(gap.abs().max()),
        "wall_terms": wall["terms"],
        "cpu_terms": own,
        "per_batch_size": rows,
    }


def evaluate(root: Path) -> dict[str, Any]:
    """The held-out judgement of the module docstring over every ``vllm-bench-*`` recording."""
    from qualification.engine._recording import load_recording
    from qualification.engine.frontend_transfer import figures

    names = sorted(p.name for p in root.iterdir() if p.name.startswith("vllm-bench-"))
    with_cpu = [n for n in names if (root / n / CPU_FILE).is_file()]
    probed = [n for n in names if (root / n / PROBE_FILE).is_file()]
    batches = {n: load_batches(root / n) for n in with_cpu}
    wall_terms: dict[str, tuple[float, float, float]] = {}
    for name in probed:
        model = json.loads((root / name / FRONTEND_FILE).read_text(encoding="utf-8"))
        if model_probes(model) != [name]:
            raise DataIntegrityError(
                f"{str(root / name / FRONTEND_FILE)!r}: derived_from: not its own probe"
            )
        terms = model["terms"]
        wall_terms[name] = (
            float(terms["step_ms"]),
            float(terms["token_ms"]),
            float(terms["request_ms"]),
        )
    rows = []
    for name in names:
        recording = load_recording(root / name)
        committed = recording.frontend
        model = json.loads((root / name / FRONTEND_FILE).read_text(encoding="utf-8"))
        others_wall = [wall_terms[o] for o in probed if o != name]
        wall_pool = (
            statistics.fmean(t[0] for t in others_wall),
            statistics.fmean(t[1] for t in others_wall),
            statistics.fmean(t[2] for t in others_wall),
        )
        others_cpu = [o for o in with_cpu if o != name]
        cpu = fit_terms(pd.concat([batches[o] for o in others_cpu], ignore_index=True))
        cpu_terms = (cpu["step_ms"], cpu["token_ms"], cpu["request_ms"])
        assert committed is not None
        variants: dict[str, tuple[float, float, float] | None] = {
            "committed": (committed.step_ms, committed.token_ms, committed.request_ms),
            "none": None,
            "wall_held_out": wall_pool,
            "cpu_held_out": cpu_terms,
        }
        rows.append(
            {
                "recording": name,
                "committed_from": model_probes(model),
                "wall_held_out_from": [o for o in probed if o != name],
                "cpu_held_out_from": others_cpu,
                "terms": {k: None if v is None else list(v) for k, v in variants.items()},
                "figures": {k: figures(recording, v) for k, v in variants.items()},
            }
        )
    return {
        "consistency": [consistency(root / n) for n in with_cpu],
        "recordings": rows,
    }


_FIGURES = ("e2e_median_pct", "e2e_p90_pct", "ttft_mean_pct", "tpot_mean_pct")


def _cell(figures: dict[str, float]) -> str:
    return " / ".join(f"{figures[key]:.1f}" for key in _FIGURES)


def _terms(terms: Sequence[float] | None) -> str:
    return "-" if terms is None else " / ".join(f"{value:.2f}" for value in terms)


def to_markdown(result: dict[str, Any]) -> str:
    lines = [
        "| recording | batches | wall - CPU: median / largest |.| ms | B | wall - grid per step "
        "| front-end CPU per step | worker CPU per step | grid per step |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for item in result["consistency"]:
        for index, row in enumerate(item["per_batch_size"]):
            head = (
                f"`{item['recording']}` | {item['batches']} | "
                f"{item['wall_minus_cpu_median_ms']:.2f} / {item['wall_minus_cpu_max_abs_ms']:.2f}"
                if index == 0
                else " | |"
            )
            lines.append(
                f"| {head} | {row['batch']} | {row['wall_excess_ms']:.2f} | "
                f"{row['front_per_step_ms']:.2f} | {row['worker_per_step_ms']:.2f} | "
                f"{row['grid_ms']:.2f} |"
            )
    lines.append("")
    lines.append(
        "| recording | terms (step / token / request ms): committed; wall held out; CPU held out "
        "| committed | none | wall held out | CPU held out |"
    )
    lines.append("|---|---|---|---|---|---|")
    for row in result["recordings"]:
        terms = row["terms"]
        figs = row["figures"]
        lines.append(
            f"| `{row['recording']}` | {_terms(terms['committed'])}; "
            f"{_terms(terms['wall_held_out'])}; {_terms(terms['cpu_held_out'])} | "
            f"{_cell(figs['committed'])} | {_cell(figs['none'])} | "
            f"{_cell(figs['wall_held_out'])} | {_cell(figs['cpu_held_out'])} |"
        )
    lines.append("")
    lines.append(
        "(each figure cell: median E2E |error| / P90 E2E |error| / mean TTFT error / mean TPOT "
        "error, %)"
    )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m qualification.engine.frontend_cpu",
        description=(__doc__ or "").splitlines()[0],
    )
    parser.add_argument("recording", type=Path, nargs="?")
    parser.add_argument(
        "--from",
        dest="sources",
        type=Path,
        action="append",
        default=[],
        help="a recording whose probe-cpu file the pooled terms take (repeat)",
    )
    parser.add_argument("--out", type=Path, help="output (default: RECORDING/frontend/...json)")
    parser.add_argument("--overwrite", action="store_true")
    parser.add_argument("--evaluate", action="store_true", help="the held-out judgement")
    parser.add_argument("--root", type=Path, default=Path("evidence/engine"))
    parser.add_argument("--json", action="store_true", help="--evaluate: print JSON")
    args = parser.parse_args(argv)
    try:
        if args.evaluate:
            result = evaluate(args.root)
            if args.json:
                print(json.dumps(result, indent=1, sort_keys=True))
            else:
                sys.stdout.write(to_markdown(result))
            return 0
        if args.recording is None:
            print("error: RECORDING: required unless --evaluate", file=sys.stderr)
            return 2
        out = args.out or args.recording / FRONTEND_FILE
        check_output_file(out, args.overwrite, "--out")
        data = build(args.recording, args.sources)
        atomic_write_text(
            out, json.dumps(data, indent=1, sort_keys=True) + "\n", overwrite=args.overwrite
        )
    except AisimError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(data["terms"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
