#!/usr/bin/env python3
"""Plot of bench_gpu_gemm's JSON lines: time protected / time plain cuBLAS over n (square
shapes, one checksum per block, per-vector PEA lists: the default configuration), one line per
type, block size and row side (on demand, "flagged", or for every block, "all"; lines without
the field are from before the choice existed: "all"); the median where a point was measured more
than once. Usage: bench_gpu_plot.py OUT.png IN.jsonl..."""
import json
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(out, paths):
    series = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                if not line.startswith("{"):
                    continue
                r = json.loads(line)
                if r.get("skip", 0) or not (r["m"] == r["n"] == r["k"]):
                    continue
                if r.get("checksums", 1) != 1 or r.get("lists", "vector") != "vector":
                    continue
                key = (r["type"], r["bs"], r.get("rows", "all"))
                series.setdefault(key, {}).setdefault(r["n"], []).append(r["ratio"])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (t, bs, rows), by_n in sorted(series.items()):
        pts = sorted((n, statistics.median(v)) for n, v in by_n.items())
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                linestyle="-" if t == "D" else "--", label=f"{t}GEMM, BS {bs}, rows {rows}")
    for n, target in ((4096, 1.10), (8192, 1.06), (16384, 1.04)):
        ax.plot([n], [target], marker="_", markersize=20, color="black")
    ax.set_xscale("log", base=2)
    ax.set_ylim(0.95, 1.5)
    ax.set_xlabel("n (square GEMM)")
    ax.set_ylabel("time protected / time plain cuBLAS")
    ax.set_title("GPU ABFT GEMM overhead (black bars: required ratios)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
