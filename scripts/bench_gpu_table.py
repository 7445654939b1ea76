#!/usr/bin/env python3
"""Ratio table (time protected / time plain cuBLAS) from bench_gpu_gemm's JSON lines, as
Markdown: one row per (type, checksums, shape), one column per block size."""
import json
import sys


def main(paths):
    rows = {}
    blocks = set()
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                r = json.loads(line)
                if r.get("skip", 0):
                    continue  # breakdown runs, not protected
                key = (r["type"], r["checksums"], r["m"], r["n"], r["k"])
                rows.setdefault(key, {})[r["bs"]] = r
                blocks.add(r["bs"])
    blocks = sorted(blocks)
    head = "| type | R | m x n x k | plain ms | plain TFLOP/s | " + " | ".join(
        f"BS {b}" for b in blocks) + " | workspace MiB (largest BS) |"
    print(head)
    print("|" + "---|" * (5 + len(blocks) + 1))
    for key in sorted(rows):
        t, r, m, n, k = key
        byb = rows[key]
        any_r = next(iter(byb.values()))
        cells = [f"{byb[b]['ratio']:.3f}" if b in byb else "-" for b in blocks]
        ws = byb[max(byb)]["workspace_bytes"] / 2**20
        print(f"| {t} | {r} | {m} x {n} x {k} | {any_r['plain_ms']:.3f} | "
              f"{any_r['plain_tflops']:.1f} | " + " | ".join(cells) + f" | {ws:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
