#!/usr/bin/env python3
"""LU through a LAPACK that calls dgemm_ by name (the reference LAPACK), with or without
libblas_ft preloaded: time and residual of dgesv.

  lapack_lu_check.py LIBLAPACK N [N ...]

For each N: A (N x N) and B (N x 4) standard normal (fixed seeds); dgesv_ of LIBLAPACK through
ctypes on a fresh copy, best time of three, and the scaled residual
|A X - B|_inf / (|A|_inf |X|_inf N eps) computed from the inputs with numpy's einsum in long
double (no BLAS). Where libblas_ft is preloaded, also its counters for the last call
(blasft_get_stats). One JSON line per N. Exit status 1 where a residual is over 0.1 (fault-free,
these stay far under it) or dgesv reports an error.

Its GEMMs are blocked LU's updates: sub-matrices of one array, updated in place between calls,
which is what the offload path's change check (BLASFT_DEVICE=gpu or auto, BLASFT_CACHE) must
follow."""
import ctypes
import json
import os
import sys
import time

import numpy as np

# libblas_ft's statistics struct: the cuBLAS checks' (a host-only build has none of their hooks,
# so the library is found by blasft_get_stats here)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cublas import Stats  # noqa: E402

STATS = [name for name, _ in Stats._fields_]


def stats(lib):
    if lib is None:
        return None
    s = Stats()
    lib.blasft_get_stats(ctypes.byref(s))
    return {f: getattr(s, f) for f in STATS}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    lapack = ctypes.CDLL(sys.argv[1])
    me = ctypes.CDLL(None)
    lib = me if hasattr(me, "blasft_get_stats") else None
    if lib is not None:
        lib.blasft_get_stats.argtypes = [ctypes.POINTER(Stats)]
    failed = 0
    for n in (int(v) for v in sys.argv[2:]):
        rng = np.random.default_rng(n)
        A = np.asfortranarray(rng.standard_normal((n, n)))
        B = np.asfortranarray(rng.standard_normal((n, 4)))
        best, info = float("inf"), ctypes.c_int(0)
        for _ in range(3):
            a, x = A.copy(order="F"), B.copy(order="F")
            ipiv = np.zeros(n, dtype=np.int32)
            N, NR = ctypes.c_int(n), ctypes.c_int(4)
            s0 = stats(lib)
            t0 = time.perf_counter()
            lapack.dgesv_(ctypes.byref(N), ctypes.byref(NR), a.ctypes.data_as(ctypes.c_void_p),
                          ctypes.byref(N), ipiv.ctypes.data_as(ctypes.c_void_p),
                          x.ctypes.data_as(ctypes.c_void_p), ctypes.byref(N), ctypes.byref(info))
            best = min(best, time.perf_counter() - t0)
            s1 = stats(lib)
        Al, Xl = A.astype(np.longdouble), x.astype(np.longdouble)
        r = np.einsum("ij,jk->ik", Al, Xl) - B.astype(np.longdouble)
        res = float(np.max(np.abs(r)) / (np.max(np.sum(np.abs(Al), axis=1)) *
                                          np.max(np.abs(Xl)) * n * np.finfo(np.float64).eps))
        line = {"n": n, "seconds": best, "residual": res, "info": info.value,
                "preloaded": lib is not None}
        if lib is not None:
            line["last_call"] = {f: s1[f] - s0[f] for f in STATS}
        print(json.dumps(line), flush=True)
        failed += info.value != 0 or not res < 0.1
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
