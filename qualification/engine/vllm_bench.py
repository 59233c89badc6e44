"""A served run recorded by vLLM's own client, ``vllm bench serve``, into the plain layout.

``vllm bench serve ... --save-result --save-detailed`` writes one JSON file per run whose
per-request lists (``vllm/benchmarks/serve.py``, ``benchmark()``: the ``result`` dict) are, in
the order the requests were sampled: ``start_times`` (``time.perf_counter()`` when the request
was sent, seconds), ``ttfts`` (first streamed chunk - start, s), ``itls`` (the gaps between
streamed chunks, s), ``input_lens`` (the server's ``usage.prompt_tokens``), ``output_lens``
(``usage.completion_tokens``) and ``errors`` (``""`` when it succeeded). This module writes the
plain layout's ``served-N/requests.csv`` from that file (docs/evidence.md, "Bring your own
engine"); a client sees no engine steps, so no ``steps.csv`` is written.

Per request: ``request_id`` ``req-{i}`` (i: the sampled order; ``vllm bench serve`` with the
same ``--seed`` samples the same lengths and arrival gaps every run, so ``req-i`` is the same
request in every repeat); ``arrival_ms`` = (start - the earliest start) x 1000 (the send time:
the arrival as the server's front end sees it, client and loopback included);
``first_token_ms`` = arrival + ttft; then one time per streamed chunk. vLLM's streaming front
end may carry several tokens in one chunk when the client reads slower than the engine steps
(``vllm/v1/engine/output_processor.py``, ``RequestOutputCollector.put`` merges outputs the
consumer has not taken yet), so a request can have fewer chunks than tokens: its remaining
tokens are given its last chunk's time (``token_times_ms`` then has exact first and last entries,
which is all TTFT, TPOT and E2E use; ``coalesced`` in the returned counts says how many requests
this touched). Everything is checked before anything is written: a failed request, a missing
list or a list of the wrong length is one ``DataIntegrityError`` line naming the file, the
request and the field.

Usage: ``python -m qualification.engine.vllm_bench RESULT.json --out PLAIN/served-1``
(``RESULT.json.gz``: read gzip-compressed).
"""

from __future__ import annotations

import gzip
import io
import math
import sys
import zlib
from pathlib import Path
from typing import Any

from aisim.cli import OneLineParser
from aisim.errors import AisimError, DataIntegrityError
from aisim.files import (
    MAX_TRACE_BYTES,
    atomic_write_text,
    check_output_file,
    input_file_problem,
    parse_json_text,
)

_LISTS = ("start_times", "ttfts", "itls", "input_lens", "output_lens", "errors")


def _number(where: str, index: int, field: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise DataIntegrityError(
            f"{where}: request {index}: {field}: expected a finite number, got {value!r}"
        )
    return float(value)


def bench_requests(result: dict[str, Any], where: str) -> tuple[list[dict[str, Any]], int]:
    """The requests of one ``vllm bench serve`` result as plain-layout rows, and how many
    requests had fewer streamed chunks than output tokens."""
    for field in _LISTS:
        if not isinstance(result.get(field), list):
            raise DataIntegrityError(
                f"{where}: {field}: missing; run vllm bench serve with --save-result "
                "--save-detailed"
            )
    count = len(result["start_times"])
    if count == 0:
        raise DataIntegrityError(f"{where}: start_times: no requests")
    for field in _LISTS:
        if len(result[field]) != count:
            raise DataIntegrityError(
                f"{where}: {field}: {len(result[field])} entries, start_times has {count}"
            )
    starts = [_number(where, i, "start_times", v) for i, v in enumerate(result["start_times"])]
    origin = min(starts)
    rows, coalesced = [], 0
    for index in range(count):
        if result["errors"][index]:
            raise DataIntegrityError(
                f"{where}: request {index}: errors: {str(result['errors'][index])[:120]!r} "
                "(a failed request cannot be scored)"
            )
        outputs = result["output_lens"][index]
        prompt = result["input_lens"][index]
        for field, value in (("output_lens", outputs), ("input_lens", prompt)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise DataIntegrityError(
                    f"{where}: request {index}: {field}: expected a positive integer, got {value!r}"
                )
        arrival = (starts[index] - origin) * 1000.0
        ttft = _number(where, index, "ttfts", result["ttfts"][index])
        if ttft <= 0:  # the first token before (or as) the request was sent
            raise DataIntegrityError(
                f"{where}: request {index}: ttfts: {result['ttfts'][index]!r}; expected a "
                "time > 0 s"
            )
        gaps = result["itls"][index]
        if not isinstance(gaps, list):
            raise DataIntegrityError(f"{where}: request {index}: itls: expected a list")
        times = [arrival + ttft * 1000.0]
        for position, gap in enumerate(gaps):
            value = _number(where, index, f"itls[{position}]", gap)
            if value < 0:
                raise DataIntegrityError(
                    f"{where}: request {index}: itls[{position}]: {gap!r} is negative"
                )
            times.append(times[-1] + value * 1000.0)
        if len(times) > outputs:
            raise DataIntegrityError(
                f"{where}: request {index}: itls: {len(times)} streamed chunks for "
                f"{outputs} output tokens (output_lens)"
            )
        if len(times) < outputs:
            coalesced += 1
            times += [times[-1]] * (outputs - len(times))
        rows.append(
            {
                "request_id": f"req-{index}",
                "prompt_tokens": prompt,
                "output_tokens": outputs,
                "arrival_ms": arrival,
                "first_token_ms": times[0],
                "finish_ms": times[-1],
                "token_times_ms": times,
            }
        )
    return rows, coalesced


_COLUMNS = (
    "request_id",
    "prompt_tokens",
    "output_tokens",
    "arrival_ms",
    "first_token_ms",
    "finish_ms",
    "token_times_ms",
)


def requests_csv(rows: list[dict[str, Any]]) -> str:
    """``requests.csv`` text (floats by repr, ``token_times_ms`` ';'-joined)."""
    lines = [",".join(_COLUMNS)]
    for row in rows:
        cells = [
            ";".join(repr(float(t)) for t in row[name])
            if name == "token_times_ms"
            else repr(float(row[name]))
            if isinstance(row[name], float)
            else str(row[name])
            for name in _COLUMNS
        ]
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


def convert(source: str | Path, out: str | Path, *, overwrite: bool = False) -> dict[str, Any]:
    """Write ``out/requests.csv`` from the ``vllm bench serve`` result ``source`` (a ``.gz``
    name: gzip-compressed); returns counts (requests, coalesced)."""
    path = Path(source)
    where = repr(str(path))
    # Before the result is read: an existing requests.csv (without --overwrite), a folder in
    # its place or an --out under a file.
    target = check_output_file(Path(out) / "requests.csv", overwrite, "--out")
    problem = input_file_problem(path, MAX_TRACE_BYTES)  # a FIFO would block the read
    if problem is not None and problem != "file not found":
        raise DataIntegrityError(f"{where}: {problem}")
    try:
        raw = path.read_bytes()
        if path.suffix == ".gz":
            # At most the trace limit decompressed: gzip.decompress of a small bomb filled
            # memory.
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as unzipped:
                raw = unzipped.read(MAX_TRACE_BYTES + 1)
            if len(raw) > MAX_TRACE_BYTES:
                raise DataIntegrityError(
                    f"{where}: decompresses to more than {MAX_TRACE_BYTES} bytes, the limit"
                )
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise DataIntegrityError(f"{where}: missing") from None
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
        raise DataIntegrityError(f"{where}: not a readable JSON file ({exc})") from None
    # parse_json_text refuses a key given twice (json.loads kept the last silently) and
    # bounds the nesting.
    result = parse_json_text(text, where)
    if not isinstance(result, dict):
        raise DataIntegrityError(f"{where}: expected a JSON object")
    rows, coalesced = bench_requests(result, where)
    atomic_write_text(target, requests_csv(rows), overwrite=overwrite)
    return {"requests": len(rows), "coalesced": coalesced, "file": str(target)}


def main(argv: list[str] | None = None) -> int:
    """Bad input is one line ``error: ...`` on stderr (it was printed on stdout), exit 2."""
    parser = OneLineParser(
        prog="python -m qualification.engine.vllm_bench",
        description=__doc__.split("\n", 1)[0],
    )
    parser.add_argument("result", help="a vllm bench serve --save-detailed result JSON")
    parser.add_argument("--out", required=True, help="the plain layout's served-N folder")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing requests.csv")
    args = parser.parse_args(argv)
    try:
        counts = convert(args.result, args.out, overwrite=args.overwrite)
    except AisimError as exc:
        print(f"error: {' '.join(str(exc).splitlines())}", file=sys.stderr)
        return 2
    print(
        f"wrote {counts['file']}: {counts['requests']} requests, {counts['coalesced']} with "
        "fewer streamed chunks than tokens"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
