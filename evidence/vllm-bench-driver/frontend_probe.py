"""Time fixed step shapes *through* a running `vllm serve` (serve.sh): the front-end probe.

One pass sends, over HTTP to /v1/completions (streamed, text prompts, ignore_eos,
temperature 0), for each repetition:

* decode: B simultaneous requests (B = 1, 2, 4, 8) of PROMPT tokens and OUTPUT tokens each;
  every streamed chunk's arrival is kept, so the inter-token gaps while all B decode together
  are served decode steps of B requests at a known context;
* ttft: one request alone of P prompt tokens (P = 16, 64, 128, 256) and 2 output tokens; the
  first chunk's arrival is the served prefill step plus everything before the engine sees it.

Every prompt is fresh random text of known token length (make_tokenizer.py's words; no
prefix-cache hit). Appends one CSV row per streamed
chunk to OUT (header written when new): pass, kind, rep, batch, prompt_tokens, max_tokens,
request, chunk, t_ms (ms since the request was sent), send_ms (ms since the pass started),
wall_start (the pass's UTC start). Run with the engine venv's python, pinned beside the server.

With ``--server-pid PID`` (the `vllm serve` process), the CPU time of that process and of each
of its descendants (engine core, worker), summed over their threads from
/proc/PID/task/*/schedstat (ns), is read before and after every decode batch and ttft request
and appended to OUT_CSV with the suffix ``-cpu.csv``: pass, kind, rep, batch, prompt_tokens,
process (its /proc comm), pid, cpu_ms, wall_ms (the batch's wall time from send to last chunk).

usage: python frontend_probe.py OUT_CSV PASS_NAME [--reps N] [--model NAME] [--port 8123]
       [--server-pid PID]
"""

import argparse
import asyncio
import contextlib
import csv
import datetime
import json
import os
import random
import time
from pathlib import Path

import aiohttp

BATCHES = (1, 2, 4, 8)
DECODE_PROMPT = 64
DECODE_OUTPUT = 32
TTFT_PROMPTS = (16, 64, 128, 256)
VOCAB = (100, 8000)
FIELDS = (
    "pass",
    "kind",
    "rep",
    "batch",
    "prompt_tokens",
    "max_tokens",
    "request",
    "chunk",
    "t_ms",
    "send_ms",
    "wall_start",
)


def processes(root):
    """{pid: comm} of ``root`` and its descendants (None: no accounting)."""
    if root is None:
        return {}
    children = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = {}, [root]
    while todo:
        pid = todo.pop()
        try:
            found[pid] = (Path("/proc") / str(pid) / "comm").read_text().strip()
        except OSError:
            continue
        todo.extend(children.get(pid, []))
    return found


def cpu_ns(pids):
    """Per pid, the CPU time (ns) summed over its threads."""
    out = {}
    for pid in pids:
        total = 0
        for task in (Path("/proc") / str(pid) / "task").glob("*"):
            with contextlib.suppress(OSError, ValueError, IndexError):  # a thread that ended
                total += int((task / "schedstat").read_text().split()[0])
        out[pid] = total
    return out


CPU_FIELDS = (
    "pass",
    "kind",
    "rep",
    "batch",
    "prompt_tokens",
    "process",
    "pid",
    "cpu_ms",
    "wall_ms",
)


async def one(session, url, model, prompt, max_tokens):
    """(send time, chunk arrival times in ms since send) of one streamed completion."""
    body = {
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    sent = time.perf_counter()
    times = []
    usage = {}
    async with session.post(url, json=body) as response:
        response.raise_for_status()
        async for raw in response.content:
            line = raw.decode().strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            chunk = json.loads(data)
            if chunk.get("choices"):
                times.append((time.perf_counter() - sent) * 1000.0)
            if chunk.get("usage"):
                usage = chunk["usage"]
    if len(times) != max_tokens:
        raise SystemExit(f"expected {max_tokens} streamed tokens, got {len(times)}")
    if usage.get("prompt_tokens") != len(prompt.split()):
        raise SystemExit(f"prompt of {len(prompt.split())} words counted as {usage} by the server")
    return sent, times


async def probe(args):
    url = f"http://127.0.0.1:{args.port}/v1/completions"
    rng = random.Random(f"{args.pass_name}-{args.seed}")
    rows = []
    cpu_rows = []
    procs = processes(args.server_pid)
    if procs:
        procs[os.getpid()] = "client"  # this probe: it shares the engine's core too
    wall = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    start = time.perf_counter()

    def prompt(length):
        # Text, as `vllm bench serve` sends it (the server tokenizes it before its own clock
        # starts): make_tokenizer.py's WordLevel words w<id>, one token each, no BOS.
        return " ".join(f"w{rng.randrange(*VOCAB)}" for _ in range(length))

    def account(kind, rep, batch, length, before, began):
        after = cpu_ns(procs)
        elapsed = (time.perf_counter() - began) * 1000.0
        for pid, name in sorted(procs.items()):
            cpu_rows.append(
                [
                    args.pass_name,
                    kind,
                    rep,
                    batch,
                    length,
                    name,
                    pid,
                    f"{(after[pid] - before[pid]) / 1e6:.3f}",
                    f"{elapsed:.3f}",
                ]
            )

    def keep(kind, rep, batch, length, max_tokens, request, sent, times):
        for index, t_ms in enumerate(times):
            rows.append(
                [
                    args.pass_name,
                    kind,
                    rep,
                    batch,
                    length,
                    max_tokens,
                    request,
                    index,
                    f"{t_ms:.3f}",
                    f"{(sent - start) * 1000.0:.3f}",
                    wall,
                ]
            )

    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        await one(session, url, args.model, prompt(16), 2)  # connection warm-up, not kept
        for rep in range(args.reps):
            for batch in BATCHES:
                prompts = [prompt(DECODE_PROMPT) for _ in range(batch)]
                before, began = cpu_ns(procs), time.perf_counter()
                done = await asyncio.gather(
                    *(one(session, url, args.model, p, DECODE_OUTPUT) for p in prompts)
                )
                account("decode", rep, batch, DECODE_PROMPT, before, began)
                for request, (sent, times) in enumerate(done):
                    keep("decode", rep, batch, DECODE_PROMPT, DECODE_OUTPUT, request, sent, times)
                await asyncio.sleep(0.2)
            for length in TTFT_PROMPTS:
                text = prompt(length)
                before, began = cpu_ns(procs), time.perf_counter()
                sent, times = await one(session, url, args.model, text, 2)
                account("ttft", rep, 1, length, before, began)
                keep("ttft", rep, 1, length, 2, 0, sent, times)
                await asyncio.sleep(0.2)
    out = Path(args.out)
    new = not out.exists()
    with out.open("a", newline="") as handle:
        writer = csv.writer(handle)
        if new:
            writer.writerow(FIELDS)
        writer.writerows(rows)
    if procs:
        cpu_out = out.with_name(out.stem + "-cpu.csv")
        new = not cpu_out.exists()
        with cpu_out.open("a", newline="") as handle:
            writer = csv.writer(handle)
            if new:
                writer.writerow(CPU_FIELDS)
            writer.writerows(cpu_rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("pass_name")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--model", default="llama-4x256")
    parser.add_argument("--port", type=int, default=8123)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--server-pid", type=int, default=None)
    asyncio.run(probe(parser.parse_args()))


if __name__ == "__main__":
    main()
