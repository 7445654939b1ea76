#!/usr/bin/env python3
"""Complex batched GEMMs through CuPy (cupy.matmul of stacked complex64 / complex128 arrays, which
reaches cuBLAS's strided batched GEMMs): time per call and the largest error against NumPy's
complex128 product, one JSON line per case. Run once with LD_PRELOAD=libblas_ft.so
BLASFT_CUBLAS=off (plain) and once without BLASFT_CUBLAS=off (protected; BLASFT_GPU_BATCHED as
set), each in a process of its own; the exit report (BLASFT_REPORT) counts the protected GEMMs.

usage: batched_complex_check.py TAG [N:BATCH ...]   (default 8:10000 32:1000 64:1000 128:256 256:64)
"""
import json
import os
import sys
import time

import cupy as cp
import numpy as np


def case(dtype, n, batch, tag):
    rng = np.random.default_rng(n * 7919 + batch)
    shape = (batch, n, n)
    a = (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(dtype)
    b = (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(dtype)
    da, db = cp.asarray(a), cp.asarray(b)
    c = cp.matmul(da, db)
    cp.cuda.runtime.deviceSynchronize()
    ref = np.matmul(a.astype(np.complex128), b.astype(np.complex128))
    # elementwise bound: 2 (2k + 2) u sum |a| |b| (both parts, worst case)
    u = 2.0 ** -24 if dtype == np.complex64 else 2.0 ** -53
    mass = np.matmul(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64))
    q = float(np.max(np.abs(cp.asnumpy(c).astype(np.complex128) - ref) / (2 * (2 * n + 2) * u * mass)))
    for _ in range(3):
        cp.matmul(da, db)
    cp.cuda.runtime.deviceSynchronize()
    times = []
    for _ in range(5):
        ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
        ev0.record()
        for _ in range(10):
            cp.matmul(da, db)
        ev1.record()
        ev1.synchronize()
        times.append(cp.cuda.get_elapsed_time(ev0, ev1) / 10)
    times.sort()
    return {"tag": tag, "dtype": np.dtype(dtype).name, "n": n, "batch": batch,
            "ms_per_call": times[2], "max_err_over_bound": q,
            "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode()}


def main():
    tag = sys.argv[1] if len(sys.argv) > 1 else "run"
    cases = [tuple(int(x) for x in s.split(":")) for s in sys.argv[2:]] or \
        [(8, 10000), (32, 1000), (64, 1000), (128, 256), (256, 64)]
    bad = 0
    for dtype in (np.complex128, np.complex64):
        for n, batch in cases:
            r = case(dtype, n, batch, tag)
            bad += r["max_err_over_bound"] > 1.0
            print(json.dumps(r), flush=True)
    print(f"{tag}: {bad} results off by more than the bound")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
