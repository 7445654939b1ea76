#!/usr/bin/env python3
"""cuSOLVER's factorizations through the cuBLAS interposer: CuPy's and PyTorch's linalg.

  gpu_solver_check.py cupy|torch [n ...]
      under LD_PRELOAD=libblas_ft.so: for solve (LU), cholesky, qr and eigh in float64 and
      float32, the GEMMs the factorization makes through cuBLAS (protected / unprotected, from
      blasft_get_stats), the result's residual against the inputs in long double on the host
      (numpy, no BLAS), the same with a fault planted in up to 16 of its GEMMs
      (blasft_cublas_plant_fault: every one detected and corrected, the residual unchanged in
      scale), and the median time per call; one JSON line per case, then ok/FAIL lines.
      Without libblas_ft preloaded: the times and residuals only (the baseline). With
      BLASFT_MODE=detect the planted faults must be reported and leave the residual far off
      (the residual check can fail). SOLVER_OPS=solve,qr (for example) runs those only.

Exit status: 0 all passed, 1 a check failed."""
import ctypes
import json
import os
import sys
import time

import numpy as np

# libblas_ft's statistics, its test hooks and the ok/FAIL lines: those of the cuBLAS checks
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cublas import FAILURES, Stats, blasft, check  # noqa: E402

# Scaled residual bound. LAPACK's testers allow 30 in the same units; fault-free, these
# well-conditioned matrices stay under 0.005 (H100, 2026-11-27), while one uncorrected fault of a
# quarter of an element's value in one GEMM gives 0.68-7.2 in float32 (and over 1e3 in float64):
# so the bound is tight enough to see such a fault.
BOUND = 0.1
STAT_FIELDS = [name for name, _ in Stats._fields_]


class Cupy:
    def __init__(self):
        import cupy
        self.m = cupy

    def dev(self, x):
        return self.m.asarray(x)

    def host(self, x):
        return self.m.asnumpy(x)

    def sync(self):
        self.m.cuda.Device().synchronize()

    def ops(self):
        la = self.m.linalg
        return {"solve": lambda a, b: la.solve(a, b), "cholesky": la.cholesky,
                "qr": lambda a: la.qr(a, mode="reduced"), "eigh": la.eigh}


class Torch:
    def __init__(self):
        import torch
        self.m = torch
        torch.backends.cuda.matmul.allow_tf32 = False

    def dev(self, x):
        return self.m.from_numpy(x).cuda()

    def host(self, x):
        return x.cpu().numpy()

    def sync(self):
        self.m.cuda.synchronize()

    def ops(self):
        la = self.m.linalg
        return {"solve": la.solve, "cholesky": la.cholesky, "qr": la.qr, "eigh": la.eigh}


def residual(op, a, out, b=None):
    """The result's scaled residual against the inputs, in long double (numpy's own loops, no
    BLAS): for the factorizations on a random probe z (O(n^2): L (L^T z) - A z, Q (R z) - A z,
    A (V z) - V (w z)), which a wrong element of a factor moves unless z is orthogonal to it."""
    A = a.astype(np.longdouble)
    n = A.shape[0]
    eps = float(np.finfo(a.dtype).eps)
    norm = float(np.max(np.sum(np.abs(A), axis=1)))
    mv = lambda M, v: np.einsum("ij,j->i", M, v)
    if op == "solve":
        x = out.astype(np.longdouble)
        r = np.einsum("ij,jk->ik", A, x) - b.astype(np.longdouble)
        return float(np.max(np.abs(r))) / (norm * float(np.max(np.abs(x))) * n * eps)
    z = np.random.default_rng(99).standard_normal(n).astype(np.longdouble)
    if op == "cholesky":
        L = out.astype(np.longdouble)
        r = mv(L, mv(L.T, z)) - mv(A, z)
    elif op == "qr":
        Q, R = (o.astype(np.longdouble) for o in out)
        r = mv(Q, mv(R, z)) - mv(A, z)
    else:  # eigh
        w, V = (o.astype(np.longdouble) for o in out)
        r = mv(A, mv(V, z)) - mv(V, w * z)
    return float(np.max(np.abs(r))) / (norm * float(np.max(np.abs(z))) * n * eps)


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("cupy", "torch"):
        sys.exit(__doc__)
    fw = Cupy() if sys.argv[1] == "cupy" else Torch()
    sizes = [int(s) for s in sys.argv[2:]] or [1024, 4096]
    lib = blasft()
    st = Stats()

    def stats():
        fw.sync()
        lib.blasft_get_stats(ctypes.byref(st))
        return {f: getattr(st, f) for f in STAT_FIELDS}

    ops = fw.ops()
    if os.environ.get("SOLVER_OPS"):
        ops = {k: v for k, v in ops.items() if k in os.environ["SOLVER_OPS"].split(",")}
    for dtype in (np.float64, np.float32):
        for n in sizes:
            for op, fn in ops.items():
                rng = np.random.default_rng(11)
                h = rng.standard_normal((n, n))
                if op in ("cholesky", "eigh"):
                    # symmetric; its spectrum lies within +-sqrt(2 n), so the shift makes it
                    # positive definite (no GEMM before the measured calls)
                    h = (h + h.T) / 2 + (3 * np.sqrt(n) * np.eye(n) if op == "cholesky" else 0)
                a = fw.dev(h.astype(dtype))
                b = fw.dev(rng.standard_normal((n, 4)).astype(dtype)) if op == "solve" else None
                call = (lambda: fn(a, b)) if op == "solve" else (lambda: fn(a))
                what = f"{sys.argv[1]} {op} {np.dtype(dtype).name} n={n}"
                out = call()  # warm (handles, workspaces)
                fw.sync()
                s0 = stats() if lib else None
                out = call()
                s1 = stats() if lib else None
                ah, bh = fw.host(a), (fw.host(b) if b is not None else None)
                oh = tuple(fw.host(o) for o in out) if isinstance(out, tuple) else fw.host(out)
                res = residual(op, ah, oh, bh)
                times = []
                for _ in range(5):
                    fw.sync()
                    t0 = time.perf_counter()
                    call()
                    fw.sync()
                    times.append(time.perf_counter() - t0)
                line = {"case": what, "residual": res, "ms": 1e3 * float(np.median(times)),
                        "preloaded": lib is not None}
                check(res < BOUND, f"{what}: residual {res:.3g}")
                if lib:
                    d = {f: s1[f] - s0[f] for f in STAT_FIELDS}
                    line["gemms"] = d
                    check(d["errors_detected"] == 0 and d["uncorrectable"] == 0,
                          f"{what}: nothing reported fault-free: {d}")
                    g = d["protected_gemms"]
                    if g:
                        plants = min(g, 16)
                        bit = 50 if dtype == np.float64 else 21
                        lib.blasft_cublas_plant_fault(plants, 5, 3, bit)
                        p0 = stats()
                        out = call()
                        p1 = stats()
                        oh = tuple(fw.host(o) for o in out) if isinstance(out, tuple) else fw.host(out)
                        fres = residual(op, ah, oh, bh)
                        pd = {f: p1[f] - p0[f] for f in STAT_FIELDS}
                        line["faults"] = pd
                        line["residual_faults"] = fres
                        if os.environ.get("BLASFT_MODE") == "detect":
                            check(pd["faults_injected"] == plants and pd["uncorrectable"] > 0,
                                  f"{what}: {plants} planted faults reported: {pd}")
                            check(not fres < BOUND, f"{what}: uncorrected faults seen in the "
                                  f"residual {fres:.3g}")
                        else:
                            check(pd["faults_injected"] == plants and
                                  pd["errors_corrected"] + pd["blocks_recomputed"] >= plants and
                                  pd["uncorrectable"] == 0,
                                  f"{what}: {plants} planted faults corrected: {pd}")
                            check(fres < BOUND, f"{what}: residual with faults {fres:.3g}")
                        lib.blasft_cublas_plant_fault(0, 0, 0, 0)
                print(json.dumps(line), flush=True)
    print(f"{len(FAILURES)} failed")
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
