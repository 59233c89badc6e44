"""Put a recording's front-end probe (record.sh with PROBE=1) into its committed folder:
``frontend/probe.csv.gz`` (raw/frontend_probe.csv, gzip -n) and ``frontend/probe.csv.json`` (its
provenance: SHA-256, size, the probe's command, when each pass ran and the host's one-minute
load then, read from raw/host.log). The model is then derived with
``python -m qualification.engine.frontend EVIDENCE_DIR``.

usage: python package_probe.py REC_DIR EVIDENCE_DIR
"""

import gzip
import hashlib
import json
import sys
from pathlib import Path

rec, evidence = Path(sys.argv[1]), Path(sys.argv[2])
source = rec / "raw" / "frontend_probe.csv"
target = evidence / "frontend" / "probe.csv.gz"
if target.exists():
    raise SystemExit(f"{str(target)!r} exists; remove it first")
target.parent.mkdir(parents=True, exist_ok=True)
target.write_bytes(gzip.compress(source.read_bytes(), compresslevel=9, mtime=0))
data = target.read_bytes()
windows = [
    line.split(" load ")[0].split() + [line.split(" load ")[1]]
    for line in (rec / "raw" / "host.log").read_text().splitlines()
    if line.startswith(("probe-", "served-", "fence-hold-", "grid-"))
]
side = {
    "schema": {"name": "aisim.engine_frontend_probe", "version": 1},
    "file": "probe.csv.gz",
    "sha256": hashlib.sha256(data).hexdigest(),
    "size_bytes": len(data),
    "made_by": "../../../vllm-bench-driver/frontend_probe.py (through record.sh, PROBE=1): fixed "
    "shapes timed through the running `vllm serve` over HTTP (streamed /v1/completions, text "
    "prompts, ignore_eos, temperature 0), the client pinned on CPU 1 beside the server, before "
    "every served run and after the last one",
    "shapes": "decode: B = 1, 2, 4, 8 simultaneous requests of 64 prompt tokens, 32 output "
    "tokens; ttft: one request alone of 16, 64, 128, 256 prompt tokens, 2 output tokens; "
    "PROBE_REPS repetitions per pass",
    "columns": "pass, kind, rep, batch, prompt_tokens, max_tokens, request, chunk, t_ms (ms "
    "since the request was sent), send_ms (ms since the pass started), wall_start (UTC)",
    "timeline": [
        {"event": event, "utc": utc, "load_average": load} for event, utc, *_, load in windows
    ],
}
cpu_source = rec / "raw" / "frontend_probe-cpu.csv"
if cpu_source.exists():  # the server processes' CPU time per probe batch (--server-pid)
    cpu_target = target.with_name("probe-cpu.csv.gz")
    cpu_target.write_bytes(gzip.compress(cpu_source.read_bytes(), compresslevel=9, mtime=0))
    side["cpu"] = {
        "file": cpu_target.name,
        "sha256": hashlib.sha256(cpu_target.read_bytes()).hexdigest(),
        "columns": "pass, kind, rep, batch, prompt_tokens, process (/proc comm: python = the "
        "API server, VLLM::EngineCor = the engine core, VLLM::Worker = the worker, client = "
        "the probe), pid, cpu_ms (CPU time over the batch, summed over the process's threads, "
        "/proc/PID/task/*/schedstat), wall_ms (the batch's wall time)",
    }
(target.parent / "probe.csv.gz.json").write_text(json.dumps(side, indent=1) + "\n")
print("wrote", target, len(data), "bytes")
