"""Copy the public GPU measurements aisim scores into this folder (stdlib only).

Run once, by hand, from the repository root, with the folder that holds the extracted public
files (``inferencex_dsr1_latest.json``, ``inferencex_dsr1_history.json``,
``speculators_qwen3_8_27b_b200_vllm_sd.json``, see README.md):

    python3 evidence/public-gpu/tools/filter_public_gpu.py SOURCE_DIR

Nothing in aisim reads SOURCE_DIR at run time; it reads the files this writes.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

HARDWARE = ("h100", "h200", "b200")
#: The metrics kept per row (scored or shown); the rest of the source's metrics are dropped.
METRICS = (
    "median_ttft",
    "mean_ttft",
    "p99_ttft",
    "median_tpot",
    "mean_tpot",
    "p99_tpot",
    "median_e2el",
    "mean_e2el",
    "tput_per_gpu",
    "input_tput_per_gpu",
    "output_tput_per_gpu",
    "median_intvty",
    "mean_intvty",
)
KEYS = (
    "hardware",
    "framework",
    "precision",
    "spec_method",
    "disagg",
    "is_multinode",
    "prefill_tp",
    "prefill_ep",
    "prefill_dp_attention",
    "prefill_num_workers",
    "decode_tp",
    "decode_ep",
    "decode_dp_attention",
    "decode_num_workers",
    "num_prefill_gpu",
    "num_decode_gpu",
    "isl",
    "osl",
    "conc",
    "image",
    "date",
    "run_url",
)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rows(path: Path, file_name: str) -> tuple[list[dict[str, object]], dict[str, object]]:
    data = json.loads(path.read_text("utf-8"))
    kept: list[dict[str, object]] = []
    sources: set[str] = set()
    for index, row in enumerate(data["rows"]):
        if row["hardware"] not in HARDWARE:
            continue
        out: dict[str, object] = {"file": file_name, "source_index": index}
        out.update({key: row.get(key) for key in KEYS})
        out["metrics"] = {k: row["metrics"][k] for k in METRICS if k in row["metrics"]}
        if "_also_in_latest_fixture" in row:
            out["also_in_latest"] = row["_also_in_latest_fixture"]
        kept.append(out)
        sources.add(json.dumps(row["_source"], sort_keys=True))
    # Every row of one fixture cites the same repository, path and commit: kept once per file.
    assert len(sources) == 1, sources
    return kept, {"source": json.loads(sources.pop()), **data["meta"]}


def main(source_dir: str) -> None:
    source = Path(source_dir)
    here = Path(__file__).resolve().parent.parent
    rows: list[dict[str, object]] = []
    metas = {}
    for name in ("latest", "history"):
        path = source / f"inferencex_dsr1_{name}.json"
        kept, meta = _rows(path, name)
        rows.extend(kept)
        metas[name] = {
            "extracted_file_sha256": _sha256(path),
            "rows_in_source": len(json.loads(path.read_text("utf-8"))["rows"]),
            "rows_kept": len(kept),
            "source_meta": meta,
        }
    out = {
        "what": "InferenceX DeepSeek-R1 runs on H100/H200/B200 (every engine, single-node and "
        "disaggregated), filtered from the extracted latest and history fixtures; see README.md",
        "hardware": list(HARDWARE),
        "metrics_kept": list(METRICS),
        "units": {
            "*_ttft, *_tpot, *_e2el": "s",
            "*tput_per_gpu": "tokens/s per GPU",
            "*_intvty": "tokens/s per user",
        },
        "files": metas,
        "rows": rows,
    }
    target = here / "inferencex_dsr1_h100_h200_b200.json"
    target.write_text(json.dumps(out, sort_keys=True, separators=(",", ":")) + "\n", "utf-8")
    speculators = source / "speculators_qwen3_8_27b_b200_vllm_sd.json"
    copy = here / "speculators_qwen3_8_27b_b200_vllm_sd.json"
    copy.write_bytes(speculators.read_bytes())
    print(f"{target.name}: {len(rows)} rows, {target.stat().st_size} bytes")
    print(f"{copy.name}: {copy.stat().st_size} bytes, sha256 {_sha256(copy)}")


if __name__ == "__main__":
    main(sys.argv[1])
