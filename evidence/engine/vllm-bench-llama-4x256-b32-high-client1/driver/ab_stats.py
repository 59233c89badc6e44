import json
import sys
from pathlib import Path

R = sys.argv[1]  # $ENGINE_ROOT/rec/ab-executor, where ab-executor.sh wrote


def val(path, name):
    for line in Path(path).read_text().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.split()[-1])
    return None


for mode in ("mp", "uni"):
    for rnd in (1, 2):
        try:
            b, a = f"{R}/m-{mode}-{rnd}-before.prom", f"{R}/m-{mode}-{rnd}-after.prom"
            out = []
            for k in ("vllm:inter_token_latency_seconds", "vllm:time_to_first_token_seconds"):
                s = val(a, k + "_sum") - val(b, k + "_sum")
                c = val(a, k + "_count") - val(b, k + "_count")
                out.append(f"{k.split(':')[1][:14]} {s / c * 1000:.3f} ms")
            r = json.loads(Path(f"{R}/bench-{mode}-{rnd}.json").read_text())
            tp = [
                (l - t) / (o - 1) * 1000
                for l, t, o in zip(r["latencies"], r["ttfts"], r["output_lens"])
            ]
            print(
                mode,
                rnd,
                *out,
                "client TPOT %.3f" % (sum(tp) / len(tp)),
                "E2E %.0f" % (sum(r["latencies"]) / len(tp) * 1000),
            )
        except Exception as e:
            print(mode, rnd, "n/a", e)
