#!/usr/bin/env python3
"""CuPy and PyTorch through the cuBLAS interposer (issue 5): checks and benchmark.

  bench_cublas.py check torch|cupy   run under LD_PRELOAD=libblas_ft.so: results vs a float64 host
                                     reference within the rounding bound, protected counts, a
                                     planted fault corrected, (torch) CUDA graph capture + replay
  bench_cublas.py bench torch|cupy   time GEMMs (CUDA events); prints JSON lines; run once with
                                     and once without LD_PRELOAD
  bench_cublas.py table FILE...      ratio table (markdown) from the bench JSON lines
  bench_cublas.py report FILE        the cublas* calls of an exit report (BLASFT_REPORT)

Exit status of check: 0 all passed, 1 a check failed."""
import ctypes
import json
import sys
import time

FAILURES = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILURES.append(what)


class Stats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in (
        "protected_gemms", "unprotected_gemms", "checks", "errors_detected", "errors_corrected",
        "blocks_recomputed", "uncorrectable", "encoder_faults", "faults_injected")]


def blasft():
    """libblas_ft as preloaded into this process (None if it is not)."""
    lib = ctypes.CDLL(None)
    try:
        lib.blasft_get_stats.argtypes = [ctypes.POINTER(Stats)]
        lib.blasft_cublas_plant_fault.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64,
                                                  ctypes.c_int]
    except AttributeError:
        return None
    return lib


class Framework:
    """The few operations the checks need, for torch or cupy."""

    def __init__(self, name):
        self.name = name
        if name == "torch":
            import torch
            self.m = torch
            torch.backends.cuda.matmul.allow_tf32 = False
        else:
            import cupy
            self.m = cupy

    def rand(self, shape, dtype, seed):
        import numpy as np
        rng = np.random.default_rng(seed)
        host = rng.uniform(-1, 1, shape).astype(np.float32).astype(dtype)
        if self.name == "torch":
            return self.m.from_numpy(host).cuda()
        return self.m.asarray(host)

    def host(self, x):
        import numpy as np
        if self.name == "torch":
            return x.detach().cpu().numpy().astype(np.float64)
        return self.m.asnumpy(x).astype(np.float64)

    def sync(self):
        if self.name == "torch":
            self.m.cuda.synchronize()
        else:
            self.m.cuda.Device().synchronize()

    def mm(self, a, b):
        if self.name == "torch":
            return a @ b
        return self.m.matmul(a, b)

    def dot(self, a, b):
        return self.m.mm(a, b) if self.name == "torch" else self.m.dot(a, b)

    def bmm(self, a, b):
        return self.m.bmm(a, b) if self.name == "torch" else self.m.matmul(a, b)


def stats(lib, fw):
    fw.sync()
    s = Stats()
    lib.blasft_get_stats(ctypes.byref(s))
    return s


def within_bound(fw, a, b, c, dtype):
    """|c - a b| <= 2 (k+3) u |a||b| elementwise, reference in float64 on the host."""
    import numpy as np
    A, B, C = fw.host(a), fw.host(b), fw.host(c)
    ref = np.matmul(A, B)
    mag = np.matmul(np.abs(A), np.abs(B))
    u = 2.0 ** -24 if dtype == "float32" else 2.0 ** -53
    k = A.shape[-1]
    q = np.max(np.abs(C - ref) / (2 * (k + 3) * u * mag + 1e-300)) if C.size else 0.0
    return q <= 1.0, q


def run_checks(name):
    import numpy as np
    lib = blasft()
    if lib is None:
        check(False, "libblas_ft is preloaded")
        return
    fw = Framework(name)
    print(name, "version", fw.m.__version__, flush=True)
    with open("/proc/self/maps") as f:
        libs = sorted({l.split()[-1] for l in f if "cublas" in l or "blas_ft" in l})
    print("loaded:", *libs, sep="\n  ", flush=True)
    shapes = [(1, 1, 1), (37, 53, 29), (300, 257, 129), (1024, 512, 768)]
    for dtype in ("float32", "float64"):
        dt = getattr(np, dtype)
        seed = 1
        for (m, n, k) in shapes:
            for op, f in (("matmul", fw.mm), ("dot", fw.dot), ("transposed", None)):
                seed += 1
                if op == "transposed":
                    a = fw.rand((k, m), dt, seed).T
                    b = fw.rand((n, k), dt, seed + 100).T
                    f = fw.mm
                else:
                    a = fw.rand((m, k), dt, seed)
                    b = fw.rand((k, n), dt, seed + 100)
                s0 = stats(lib, fw)
                c = f(a, b)
                s1 = stats(lib, fw)
                ok, q = within_bound(fw, a, b, c, dtype)
                dp = s1.protected_gemms - s0.protected_gemms
                du = s1.unprotected_gemms - s0.unprotected_gemms
                check(ok, f"{name} {op} {dtype} {m}x{n}x{k}: error {q:.3g} x bound")
                if m * n * k == 1 and dp + du == 0:
                    # CuPy computes a 1x1x1 product without cuBLAS (seen on the device)
                    print(f"note {name} {op} {dtype} 1x1x1: no cuBLAS GEMM called", flush=True)
                    continue
                check(dp >= 1 and du == 0 and s1.errors_detected == s0.errors_detected,
                      f"{name} {op} {dtype} {m}x{n}x{k}: {dp} protected, {du} unprotected")
        for (bt, m, n, k) in ((4, 65, 33, 47), (3, 200, 130, 129)):
            a = fw.rand((bt, m, k), dt, seed + 7)
            b = fw.rand((bt, k, n), dt, seed + 8)
            s0 = stats(lib, fw)
            c = fw.bmm(a, b)
            s1 = stats(lib, fw)
            ok, q = within_bound(fw, a, b, c, dtype)
            dp = s1.protected_gemms - s0.protected_gemms
            check(ok, f"{name} bmm {dtype} {bt}x{m}x{n}x{k}: error {q:.3g} x bound")
            check(dp == bt, f"{name} bmm {dtype} {bt}x{m}x{n}x{k}: {dp} protected (want {bt})")
        # a planted fault (exponent bit of one element of C) must be found and corrected
        a = fw.rand((300, 200), dt, 77)
        b = fw.rand((200, 260), dt, 78)
        s0 = stats(lib, fw)
        lib.blasft_cublas_plant_fault(1, 10, 20, 29 if dtype == "float32" else 61)
        c = fw.mm(a, b)
        s1 = stats(lib, fw)
        ok, q = within_bound(fw, a, b, c, dtype)
        check(s1.faults_injected - s0.faults_injected == 1, f"{name} {dtype} fault planted")
        check(s1.errors_detected > s0.errors_detected, f"{name} {dtype} planted fault detected")
        check(s1.errors_corrected + s1.blocks_recomputed > s0.errors_corrected + s0.blocks_recomputed,
              f"{name} {dtype} planted fault corrected")
        check(ok, f"{name} {dtype} planted fault: result error {q:.3g} x bound")
    if name == "torch":
        torch = fw.m
        for warm in (True, False):
            a = fw.rand((256, 192), np.float32, 5)
            b = fw.rand((192, 320), np.float32, 6)
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                if warm:  # the engine's context and workspace for this stream, before capture
                    for _ in range(2):
                        out = a @ b
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=s if warm else None):
                out = a @ b
            s0 = stats(lib, fw)
            a.copy_(fw.rand((256, 192), np.float32, 9))
            g.replay()
            g.replay()
            s1 = stats(lib, fw)
            ok, q = within_bound(fw, a, b, out, "float32")
            dp = s1.protected_gemms - s0.protected_gemms
            check(ok, f"torch graph replay (warm stream {warm}): error {q:.3g} x bound")
            check(dp == (2 if warm else 0), f"torch graph replay (warm stream {warm}): {dp} protected")


def run_bench(name):
    import numpy as np
    fw = Framework(name)
    lib = blasft()
    out = []
    for dtype in ("float32", "float64"):
        dt = getattr(np, dtype)
        for n in (1024, 2048, 4096, 8192):
            a, b = fw.rand((n, n), dt, 1), fw.rand((n, n), dt, 2)
            for _ in range(3):
                c = fw.mm(a, b)
            fw.sync()
            reps = 10
            if name == "torch":
                e0, e1 = fw.m.cuda.Event(enable_timing=True), fw.m.cuda.Event(enable_timing=True)
            else:
                e0, e1 = fw.m.cuda.Event(), fw.m.cuda.Event()
            e0.record()
            for _ in range(reps):
                c = fw.mm(a, b)
            e1.record()
            e1.synchronize()
            ms = (e0.elapsed_time(e1) if name == "torch"
                  else fw.m.cuda.get_elapsed_time(e0, e1)) / reps
            del c
            rec = {"framework": name, "dtype": dtype, "n": n, "ms": ms,
                   "protected": lib is not None}
            print(json.dumps(rec), flush=True)
            out.append(rec)
    if lib is not None:
        s = stats(lib, fw)
        print(json.dumps({"framework": name, "protected_gemms": s.protected_gemms,
                          "unprotected_gemms": s.unprotected_gemms,
                          "errors_detected": s.errors_detected}), flush=True)


def table(files):
    rows = {}
    for fn in files:
        for line in open(fn):
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if "ms" in r:
                rows.setdefault((r["framework"], r["dtype"], r["n"]), {})[r["protected"]] = r["ms"]
    print("| framework | type | n (m=n=k) | plain ms | protected ms | ratio |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for (fw, dt, n), v in sorted(rows.items()):
        if True in v and False in v:
            print(f"| {fw} | {dt} | {n} | {v[False]:.3f} | {v[True]:.3f} | {v[True] / v[False]:.3f} |")


def report(fn):
    r = json.load(open(fn))
    for name, c in r.get("calls", {}).items():
        print(name, c)
    print("abft", r.get("abft"))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    mode, arg = sys.argv[1], sys.argv[2]
    if mode == "check":
        t0 = time.time()
        run_checks(arg)
        print(f"{arg}: {len(FAILURES)} failures ({time.time() - t0:.1f} s)")
        sys.exit(1 if FAILURES else 0)
    elif mode == "bench":
        run_bench(arg)
    elif mode == "table":
        table(sys.argv[2:])
    elif mode == "report":
        report(arg)
    else:
        sys.exit(__doc__)
