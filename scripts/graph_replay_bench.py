#!/usr/bin/env python3
"""Host time per protected cuBLAS call through PyTorch, for the engine's own graphs
(BLASFT_GPU_GRAPHS, cuda/graph_cache.h): run it under LD_PRELOAD=libblas_ft.so once with
BLASFT_GPU_GRAPHS=on and once with =off, in the same session, and compare.

Usage: python3 graph_replay_bench.py [N] [DTYPE]   (default 256 float64)

Three loops of N x N x N products, each loop enqueued without synchronisation and timed on the
host (us per call), then synchronised; loops repeated 8 times, each repetition printed:
  same     one product, the same operands every call (a framework's steady state);
  cycle8   8 products of distinct operands, cycled (each key repeats every 8 calls);
  cycle96  96 products of distinct operands, cycled (more keys than a context keeps graphs).
Also the results against the unprotected products (bypass), and the report's protected count.
One JSON line per loop and repetition, and a summary line per loop (median of repetitions 3-8).
"""
import json
import statistics
import sys
import time

from bench_cublas import preloaded


def main():
    lib, graphs = preloaded()
    import torch
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    dtype = getattr(torch, sys.argv[2] if len(sys.argv) > 2 else "float64")
    g = torch.Generator(device="cuda").manual_seed(7)
    a = torch.rand((n, n), dtype=dtype, device="cuda", generator=g) * 2 - 1
    bs = [torch.rand((n, n), dtype=dtype, device="cuda", generator=g) * 2 - 1 for _ in range(96)]
    loops = {"same": [bs[0]] * 96, "cycle8": [bs[i % 8] for i in range(96)], "cycle96": bs}
    worst = 0.0
    for name, ops in loops.items():
        per_call = []
        for rep in range(8):
            torch.cuda.synchronize()
            keep = (0, len(ops) // 2, len(ops) - 1)
            outs = {}
            t0 = time.perf_counter()
            for i, b in enumerate(ops):
                c = a @ b
                if i in keep:
                    outs[i] = c
            us = (time.perf_counter() - t0) / len(ops) * 1e6
            torch.cuda.synchronize()
            per_call.append(us)
            print(json.dumps({"graphs": graphs, "loop": name, "rep": rep, "n": n,
                              "dtype": str(dtype), "host_us_per_call": round(us, 2)}), flush=True)
            # right: each product against the unprotected one (bypass), relative to its scale
            lib.blasft_cublas_bypass(1)
            for i in keep:
                ref = a @ ops[i]
                err = (outs[i] - ref).abs().max().item() / max(ref.abs().max().item(), 1e-300)
                worst = max(worst, err)
            lib.blasft_cublas_bypass(0)
            del outs, c
        print(json.dumps({"graphs": graphs, "loop": name, "n": n, "dtype": str(dtype),
                          "summary_host_us": round(statistics.median(per_call[2:]), 2),
                          "first": round(per_call[0], 2), "second": round(per_call[1], 2)}),
              flush=True)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    print(json.dumps({"graphs": graphs, "worst_relative_difference": worst, "ok": worst < tol}),
          flush=True)
    if worst >= tol:
        sys.exit(1)


if __name__ == "__main__":
    main()
