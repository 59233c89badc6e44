#!/usr/bin/env bash
# From one record.sh recording to a committed one (how the vllm-bench-idle-* recordings were made):
# assemble.py (grids pooled) -> aisim qualify engine-import -> package_probe.py -> the wake model
# copied in -> python -m qualification.engine.frontend -> driver/ (the client's results gzipped,
# the host log, the server's metrics per run as a reproducible tar).
# usage: ENGINE_ROOT=DIR [PYTHON=python] [HOST_NOTE_SERVED=...] package.sh NAME WAKE_MODEL_JSON
set -euo pipefail
ENGINE=${ENGINE_ROOT:?set ENGINE_ROOT to the folder holding venv/, models/ and rec/}
HERE=$(cd "$(dirname "$0")" && pwd)
NAME=$1; WAKE=$2
REC=$ENGINE/rec/$NAME; PLAIN=$REC/plain
cd "$HERE/../.."; OUT=evidence/engine/$NAME
PY=${PYTHON:-python}
POOL_GRIDS=1 "$PY" "$HERE/assemble.py" "$REC" "$PLAIN"
"$PY" -m aisim qualify engine-import "$PLAIN" --out "$OUT"
"$PY" "$HERE/package_probe.py" "$REC" "$OUT"
cp "$WAKE" "$OUT/grid/wake_model.json"
"$PY" -m qualification.engine.frontend "$OUT"
mkdir -p "$OUT/driver"
for f in "$REC"/raw/bench-[0-9]*.json; do gzip -n -9 -c "$f" > "$OUT/driver/$(basename "$f").gz"; done
cp "$REC/raw/host.log" "$OUT/driver/host.log"
tar --sort=name --mtime='2026-12-03 00:00Z' --owner=0 --group=0 --numeric-owner -C "$REC/raw" \
  -czf "$OUT/driver/server-metrics-per-run.tar.gz" $(cd "$REC/raw" && ls metrics-*.prom)
