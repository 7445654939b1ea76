"""Time numpy's float64 matmul (best of REPS, wall clock) at a few sizes; prints one JSON line per
size. Run it plainly and under LD_PRELOAD=libblas_ft.so with different BLASFT_HOST_BLAS settings
to compare the host BLAS that computes a protected numpy product (docs/bundled-blas.md).
usage: numpy_matmul_bench.py LABEL [SIZES (comma-separated)] [REPS]"""
import json
import sys
import time

import numpy as np

label = sys.argv[1] if len(sys.argv) > 1 else "run"
sizes = [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "64,256,1024,2048").split(",")]
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 10
rng = np.random.default_rng(3)
for n in sizes:
    a = rng.standard_normal((n, n))
    b = rng.standard_normal((n, n))
    c = a @ b  # warm-up: thread pools, caches
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        c = a @ b
        best = min(best, time.perf_counter() - t0)
    print(json.dumps({"label": label, "n": n, "ms": round(best * 1e3, 4)}), flush=True)
