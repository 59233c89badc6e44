#!/usr/bin/env bash
# Re-record every committed engine recording in evidence/engine/ (the commands in their sidecars),
# then re-score them and rewrite the evidence/README.md table and every generated block of engine
# figures (evidence/README.md, qualification/plan.yaml, docs/replay.md: the lines between
# `evidence:NAME begin` and `evidence:NAME end`). Run on an IDLE host: the
# recordings measure wall-clock time, and other work on the machine becomes the engine's noise.
# Needs vLLM: `tox -e engine-evidence` installs it and runs this script; by hand, with vLLM
# installed in the Python that runs it: PYTHON=.tox/engine/bin/python evidence/engine/record-all.sh
# The vllm-cpu-pinned-* recordings were made with the engine alone on one core of a 2-vCPU host
# while other work ran on the other (their sidecars' host.note): PIN="taskset -c 1" runs them
# pinned, HOST_NOTE="..." says how the host ran (written into every sidecar).
set -euo pipefail
PIN=${PIN:-}
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python}
export OMP_NUM_THREADS=1 VLLM_ENABLE_V1_MULTIPROCESSING=0
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # this checkout's recorder and scorer
"$PYTHON" -m qualification.engine --batch 1,2,4,8 --block-size 32 --context 64,256,512 --draft-shape llama-1x512 --kv-cache-mib 256 --max-model-len 1024 --max-num-batched-tokens 512 --max-num-seqs 8 --num-speculative-tokens 3 --out evidence/engine/vllm-cpu-quiet-llama-4x256 --output 16:64 --part all --prefill 32,128,384 --prefill-batch 1,2,4 --prompt 32:256 --prompts random --rate 3.0 --reps 5 --requests 24 --seed 0 --served-runs 3 --shape llama-4x256 --speculative none --warmup 1 --overwrite
"$PYTHON" -m qualification.engine --batch 1,2,4,8 --block-size 32 --context 64,256,512 --draft-shape llama-1x256 --kv-cache-mib 256 --max-model-len 1024 --max-num-batched-tokens 512 --max-num-seqs 8 --num-speculative-tokens 3 --out evidence/engine/vllm-cpu-quiet-llama-4x256-draft_model --output 16:64 --part all --prefill 32,128,384 --prefill-batch 1,2,4 --prompt 32:256 --prompts random --rate 3.0 --reps 5 --requests 24 --seed 0 --served-runs 3 --shape llama-4x256 --speculative draft_model --warmup 1 --overwrite
"$PYTHON" -m qualification.engine --batch 1,2,4,8 --block-size 32 --context 64,256,512 --draft-shape llama-1x512 --kv-cache-mib 256 --max-model-len 1024 --max-num-batched-tokens 512 --max-num-seqs 8 --num-speculative-tokens 3 --out evidence/engine/vllm-cpu-quiet-llama-4x256-ngram --output 16:64 --part all --prefill 32,128,384 --prefill-batch 1,2,4 --prompt 32:256 --prompts repeating --rate 3.0 --reps 5 --requests 24 --seed 0 --served-runs 3 --shape llama-4x256 --speculative ngram --warmup 1 --overwrite
"$PYTHON" -m qualification.engine --batch 1,2,4,8 --block-size 32 --context 64,256,512 --draft-shape llama-1x512 --kv-cache-mib 256 --max-model-len 1024 --max-num-batched-tokens 512 --max-num-seqs 8 --num-speculative-tokens 3 --out evidence/engine/vllm-cpu-quiet-llama-8x512 --output 16:64 --part all --prefill 32,128,384 --prefill-batch 1,2,4 --prompt 32:256 --prompts random --rate 1.5 --reps 5 --requests 24 --seed 0 --served-runs 3 --shape llama-8x512 --speculative none --warmup 1 --overwrite
"$PYTHON" -m qualification.engine --batch 1,2,4,8 --block-size 32 --context 64,256,512 --draft-shape llama-1x512 --kv-cache-mib 256 --max-model-len 1024 --max-num-batched-tokens 512 --max-num-seqs 8 --num-speculative-tokens 3 --out evidence/engine/vllm-cpu-quiet-llama-8x512-draft_model --output 16:64 --part all --prefill 32,128,384 --prefill-batch 1,2,4 --prompt 32:256 --prompts random --rate 1.5 --reps 5 --requests 24 --seed 0 --served-runs 3 --shape llama-8x512 --speculative draft_model --warmup 1 --overwrite
"$PYTHON" -m qualification.engine --batch 1,2,4,8 --block-size 32 --context 64,256,512 --draft-shape llama-1x512 --kv-cache-mib 256 --max-model-len 1024 --max-num-batched-tokens 512 --max-num-seqs 8 --num-speculative-tokens 3 --out evidence/engine/vllm-cpu-quiet-llama-8x512-ngram --output 16:64 --part all --prefill 32,128,384 --prefill-batch 1,2,4 --prompt 32:256 --prompts repeating --rate 1.5 --reps 5 --requests 24 --seed 0 --served-runs 3 --shape llama-8x512 --speculative ngram --warmup 1 --overwrite
# The ten issue-23 configurations (3 shapes, block 32 and 128, 100 requests per served run, low and
# high load, prefix caching on and off, SD off / draft_model / ngram): ten_configs PREFIX NOTE
# [RUNNER...] records each as evidence/engine/PREFIX-llama-..., NOTE (if any) as its host note,
# RUNNER (e.g. taskset -c 1) in front of the recorder.
ten_configs() {
  local prefix=$1 note=$2
  shift 2
  "$@" "$PYTHON" -m qualification.engine --batch 1,2,4,8 --block-size 128 --context 16,64,256,512 --draft-shape llama-1x384 --kv-cache-mib 256 --max-model-len 1024 --max-num-batched-tokens 512 --max-num-seqs 8 --num-speculative-tokens 3 --out "evidence/engine/$prefix-llama-12x384-b128-draft_model-high" --output 16:48 --part all --prefill 16,64,128,384 --prefill-batch 1,2,4 --prompt 32:384 --prompts random --rate 3.0 --reps 3 --requests 100 --seed 0 --served-runs 3 --shape llama-12x384 --speculative draft_model --warmup 1 ${note:+--host-note "$note"} --overwrite
  "$@" "$PYTHON" -m qualification.engine --batch 1,2,4,8 --block-size 128 --context 16,64,256,512 --draft-shape llama-1x512 --kv-cache-mib 256 --max-model-len 1024 --max-num-batched-tokens 512 --max-num-seqs 8 --num-speculative-tokens 3 --out "evidence/engine/$prefix-llama-12x384-b128-high" --output 16:48 --part all --prefill 16,64,128,384 --prefill-batch 1,2,4 --prompt 32:384 --prompts random --rate 3.0 --reps 3 --requests 100 --seed 0 --served-runs 3 --shape llama-12x384 --speculative none --warmup 1 ${note:+--host-note "$note"} --overwrite
  "$@" "$PYTHON" -m qualification.engine --batch 1,2,4,8 --block-size 128 --context 16,64,256,512 --draft-shape llama-1x512 --kv-cache-mib 256 --max-model-len 1024 --max-num-batched-tokens 512 --max-num-seqs 8 --no-prefix-caching --num-speculative-tokens 3 --out "evidence/engine/$prefix-llama-12x384-b128-high-nopc" --output 16:48 --part all --prefill 16,64,128,384 --prefill-batch 1,2,4 --prompt 32:384 --prompts random --rate 3.0 --reps 3 --requests 100 --seed 0 --served-runs 3 --shape llama-12x384 --speculative none --warmup 1 ${note:+--host-note "$note"} --overwrite
  "$@" "$PYTHON" -m qualification.engine --batch 1,2,4,8 --block-size 128 --context 16,64,256,512 --draft-shape llama-1x512 --kv-cache-mib 256 --max-model-len 1024 --max-num-batched-tokens 512 --max-num-seqs 8 --num-speculative-tokens 3 --out "evidence/engine/$prefix-llama-12x384-b128-low" --output 16:48 --part all --prefill 16,64,128,384 --prefill-batch 1,2,4 --prompt 32:384 --prompts random --rate 1.0 --reps 3 --requests 100 --seed 0 --served-runs 3 --shape llama-12x384 --speculative none --warmup 1 ${note:+--host-note "$note"} --overwrite
  "$@" "$PYTHON" -m qualification.engine --batch 1,2,4,8 --block-size 128 --context 16,64,256,512 --draft-shape llama-1x512 --kv-cache-mib 256 --max-model-len 1024 --max-num-batched-tokens 512 --max-num-seqs 8 --num-speculative-tokens 3 --out "evidence/engine/$prefix-llama-4x256-b128-ngram" --output 16:64 --part all --prefill 16,64,128,384 --prefill-batch 1,2,4 --prompt 32:256 --prompts repeating --rate 3.0 --reps 3 --requests 100 --seed 0 --served-runs 3 --shape llama-4x256 --speculative ngram --warmup 1 ${note:+--host-note "$note"} --overwrite
  "$@" "$PYTHON" -m qualification.engine --batch 1,2,4,8 --block-size 32 --context 16,64,256,512 --draft-shape llama-1x256 --kv-cache-mib 256 --max-model-len 1024 --max-num-batched-tokens 512 --max-num-seqs 8 --num-speculative-tokens 3 --out "evidence/engine/$prefix-llama-4x256-b32-draft_model-high" --output 16:64 --part all --prefill 16,64,128,384 --prefill-batch 1,2,4 --prompt 32:256 --prompts random --rate 4.0 --reps 3 --requests 100 --seed 0 --served-runs 3 --shape llama-4x256 --speculative draft_model --warmup 1 ${note:+--host-note "$note"} --overwrite
  "$@" "$PYTHON" -m qualification.engine --batch 1,2,4,8 --block-size 32 --context 16,64,256,512 --draft-shape llama-1x512 --kv-cache-mib 256 --max-model-len 1024 --max-num-batched-tokens 512 --max-num-seqs 8 --num-speculative-tokens 3 --out "evidence/engine/$prefix-llama-4x256-b32-high" --output 16:64 --part all --prefill 16,64,128,384 --prefill-batch 1,2,4 --prompt 32:256 --prompts random --rate 4.0 --reps 3 --requests 100 --seed 0 --served-runs 3 --shape llama-4x256 --speculative none --warmup 1 ${note:+--host-note "$note"} --overwrite
  "$@" "$PYTHON" -m qualification.engine --batch 1,2,4,8 --block-size 32 --context 16,64,256,512 --draft-shape llama-1x512 --kv-cache-mib 256 --max-model-len 1024 --max-num-batched-tokens 512 --max-num-seqs 8 --num-speculative-tokens 3 --out "evidence/engine/$prefix-llama-8x512-b32" --output 16:64 --part all --prefill 16,64,128,384 --prefill-batch 1,2,4 --prompt 32:256 --prompts random --rate 1.5 --reps 3 --requests 100 --seed 0 --served-runs 3 --shape llama-8x512 --speculative none --warmup 1 ${note:+--host-note "$note"} --overwrite
  "$@" "$PYTHON" -m qualification.engine --batch 1,2,4,8 --block-size 32 --context 16,64,256,512 --draft-shape llama-1x512 --kv-cache-mib 256 --max-model-len 1024 --max-num-batched-tokens 512 --max-num-seqs 8 --num-speculative-tokens 3 --out "evidence/engine/$prefix-llama-8x512-b32-draft_model" --output 16:64 --part all --prefill 16,64,128,384 --prefill-batch 1,2,4 --prompt 32:256 --prompts random --rate 1.5 --reps 3 --requests 100 --seed 0 --served-runs 3 --shape llama-8x512 --speculative draft_model --warmup 1 ${note:+--host-note "$note"} --overwrite
  "$@" "$PYTHON" -m qualification.engine --batch 1,2,4,8 --block-size 32 --context 16,64,256,512 --draft-shape llama-1x512 --kv-cache-mib 256 --max-model-len 1024 --max-num-batched-tokens 512 --max-num-seqs 8 --num-speculative-tokens 3 --out "evidence/engine/$prefix-llama-8x512-b32-ngram" --output 16:64 --part all --prefill 16,64,128,384 --prefill-batch 1,2,4 --prompt 32:256 --prompts repeating --rate 1.5 --reps 3 --requests 100 --seed 0 --served-runs 3 --shape llama-8x512 --speculative ngram --warmup 1 ${note:+--host-note "$note"} --overwrite
}
# PIN (default none) and HOST_NOTE as the pinned set was recorded (the header above)
ten_configs vllm-cpu-pinned "${HOST_NOTE:-}" $PIN
# The vllm-cpu-idle-* recordings (2026-12-03 01:49-02:26 UTC): the same ten configurations with the
# engine alone on CPU 1 and CPU 0 otherwise idle (no other jobs; one-minute load 0.2-1.2, the
# recorder's own). Then the wake and admission probes per configuration, on the same idle host
# (their files copied into each recording's grid/ that has that shape, block size and draft).
IDLE_NOTE="idle: the engine process ran alone on CPU 1 of 2 (taskset -c 1, OMP_NUM_THREADS=1); CPU 0 carried only light interactive work (git, file edits, no test runs); load average below 0.3 before the first recording"
ten_configs vllm-cpu-idle "$IDLE_NOTE" taskset -c 1
PROBES=$(mktemp -d)
PROBE_CONFIGS="llama-12x384:128: llama-12x384:128:llama-1x384 llama-4x256:128: llama-4x256:32:llama-1x256 llama-4x256:32: llama-8x512:32:llama-1x512 llama-8x512:32:"  # shape:block size:draft
PROBE_NOTE="idle: the probe alone on CPU 1 of 2 (taskset -c 1, OMP_NUM_THREADS=1); CPU 0 carried only light interactive work"
for config in $PROBE_CONFIGS; do
  IFS=: read -r shape block draft <<< "$config"
  out="$PROBES/$shape-b$block${draft:+-$draft}"; mkdir -p "$out"
  taskset -c 1 "$PYTHON" -m qualification.engine.probe_served_steps --shape "$shape" --block-size "$block" ${draft:+--draft-shape "$draft"} --reps 24 --idle 300 --out "$out/wake_model.json" --note "$PROBE_NOTE" --overwrite
done
for config in $PROBE_CONFIGS; do
  IFS=: read -r shape block draft <<< "$config"  # a second wake pass minutes later, pooled with the first
  out="$PROBES/$shape-b$block${draft:+-$draft}"
  taskset -c 1 "$PYTHON" -m qualification.engine.probe_served_steps --shape "$shape" --block-size "$block" ${draft:+--draft-shape "$draft"} --reps 24 --idle 300 --pool "$out/wake_model.json" --out "$out/wake_model.json" --note "$PROBE_NOTE" --overwrite
  taskset -c 1 "$PYTHON" -m qualification.engine.probe_served_steps --shape "$shape" --block-size "$block" ${draft:+--draft-shape "$draft"} --reps 24 --admit --out "$out/admit_model.json" --note "$PROBE_NOTE" --overwrite
done
for pair in 12x384-b128-high:12x384-b128 12x384-b128-low:12x384-b128 12x384-b128-high-nopc:12x384-b128 \
    12x384-b128-draft_model-high:12x384-b128-llama-1x384 4x256-b128-ngram:4x256-b128 \
    4x256-b32-draft_model-high:4x256-b32-llama-1x256 4x256-b32-high:4x256-b32 \
    8x512-b32-draft_model:8x512-b32-llama-1x512 8x512-b32:8x512-b32 8x512-b32-ngram:8x512-b32; do
  cp "$PROBES/llama-${pair#*:}/wake_model.json" "$PROBES/llama-${pair#*:}/admit_model.json" "evidence/engine/vllm-cpu-idle-llama-${pair%%:*}/grid/"
done
"$PYTHON" -m qualification.engine.evidence_table
