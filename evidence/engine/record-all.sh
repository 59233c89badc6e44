#!/usr/bin/env bash
# Re-record every committed engine recording in evidence/engine/ (the commands in their sidecars),
# then re-score them and rewrite the evidence/README.md table and every generated block of engine
# figures (evidence/README.md, qualification/plan.yaml, docs/replay.md: the lines between
# `evidence:NAME begin` and `evidence:NAME end`). Run on an IDLE host: the
# recordings measure wall-clock time, and other work on the machine becomes the engine's noise.
# Needs vLLM: `tox -e engine-evidence` installs it and runs this script; by hand, with vLLM
# installed in the Python that runs it: PYTHON=.tox/engine/bin/python evidence/engine/record-all.sh
set -euo pipefail
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
"$PYTHON" -m qualification.engine.evidence_table
