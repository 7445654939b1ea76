#!/usr/bin/env python3
"""CuPy and PyTorch through the cuBLAS interposer (issue 5): checks and benchmark.

  bench_cublas.py check torch|cupy   run under LD_PRELOAD=libblas_ft.so: results (float32/64,
                                     complex64/128) vs a host reference within the rounding bound,
                                     protected counts, a planted fault corrected, (torch) CUDA graph
                                     capture + replay; float16 / bfloat16 products:
                                     right, protected, a planted fault corrected, (torch)
                                     captured into a CUDA graph with a planted fault: protected
                                     and corrected at each replay; batches of
                                     them (torch.bmm / matmul on 3-D and 4-D tensors, CuPy's
                                     stacked matmul): right, one protected GEMM per matrix,
                                     planted faults corrected, not warned of; (torch) a
                                     float16 batch with 16-bit accumulation counted
                                     unprotected, warned of once
  bench_cublas.py bench torch|cupy   run under LD_PRELOAD: plain (interposer bypassed through
                                     blasft_cublas_bypass: the application's own cuBLAS call on its
                                     handle and stream) and protected bursts of products,
                                     interleaved in one process, CUDA events, medians; host time
                                     per call; prints JSON lines (BENCH_DTYPES, BENCH_SIZES:
                                     comma lists; BENCH_OP=linear or bmm; BENCH_GRAPH=1: torch CUDA
                                     graphs of a burst of products, plain and protected,
                                     replayed)
  bench_cublas.py table FILE...      ratio table (markdown) from the bench JSON lines
  bench_cublas.py report FILE        the cublas* calls of an exit report (BLASFT_REPORT)

Exit status of check: 0 all passed, 1 a check failed."""
import ctypes
import json
import os
import sys
import time

FAILURES = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILURES.append(what)


class Stats(ctypes.Structure):
    """blasft_stats (blas_ft.h), every field: the library writes all of them."""
    _fields_ = [(n, ctypes.c_uint64) for n in (
        "protected_gemms", "unprotected_gemms", "checks", "errors_detected", "errors_corrected",
        "blocks_recomputed", "uncorrectable", "encoder_faults", "faults_injected", "false_alarms")]


def blasft():
    """libblas_ft as preloaded into this process (None if it is not)."""
    lib = ctypes.CDLL(None)
    try:
        lib.blasft_get_stats.argtypes = [ctypes.POINTER(Stats)]
        lib.blasft_cublas_plant_fault.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64,
                                                  ctypes.c_int]
        lib.blasft_cublas_bypass.argtypes = [ctypes.c_int]
        lib.blasft_cublas_graph_counts.argtypes = [ctypes.POINTER(ctypes.c_uint64)] * 2
    except AttributeError:
        return None
    return lib


def preloaded():
    """libblas_ft as preloaded (exits where it is not) and the BLASFT_GPU_GRAPHS setting."""
    lib = blasft()
    if lib is None:
        sys.exit("needs LD_PRELOAD=libblas_ft.so")
    return lib, os.environ.get("BLASFT_GPU_GRAPHS", "on")


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
        if np.dtype(dtype).kind == "c":
            host = host + 1j * rng.uniform(-1, 1, shape).astype(np.float32)
            host = host.astype(dtype)
        if self.name == "torch":
            return self.m.from_numpy(host).cuda()
        return self.m.asarray(host)

    def host(self, x):
        import numpy as np
        h = x.detach().cpu().resolve_conj().numpy() if self.name == "torch" else self.m.asnumpy(x)
        return h.astype(np.complex128 if h.dtype.kind == "c" else np.float64)

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


def counted(s0, s1):
    """GEMMs counted protected and unprotected between two stats()."""
    return (s1.protected_gemms - s0.protected_gemms,
            s1.unprotected_gemms - s0.unprotected_gemms)


def within_bound(fw, a, b, c, dtype, bias=None):
    """|c - (a b + bias)| <= 2 (k+3) u (|a||b| + |bias|) elementwise (complex: 2 (k+5) u, moduli;
    a bias, added to each column, counts as two more roundings too), reference in float64 /
    complex128 on the host."""
    import numpy as np
    A, B, C = fw.host(a), fw.host(b), fw.host(c)
    ref = np.matmul(A, B)
    mag = np.matmul(np.abs(A), np.abs(B))
    k = A.shape[-1] + (2 if dtype.startswith("complex") else 0)
    if bias is not None:
        v = fw.host(bias)
        ref, mag, k = ref + v, mag + np.abs(v), k + 2
    u = 2.0 ** -24 if dtype in ("float32", "complex64") else 2.0 ** -53
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
    # the last two: every dimension >= 512, so FP32 and complex64 run promoted under BLASFT_PROMOTE=auto
    # on GPUs with fast FP64 (H100)
    shapes = [(1, 1, 1), (37, 53, 29), (300, 257, 129), (1024, 512, 768), (1030, 1100, 1024)]
    for dtype in ("float32", "float64", "complex64", "complex128"):
        dt = getattr(np, dtype)
        cplx = dtype.startswith("complex")
        seed = 1
        for (m, n, k) in shapes:
            ops = [("matmul", fw.mm), ("dot", fw.dot), ("transposed", None)]
            if cplx:
                ops.append(("conjugate-transposed", None))
            for op, f in ops:
                seed += 1
                if op == "transposed":
                    a = fw.rand((k, m), dt, seed).T
                    b = fw.rand((n, k), dt, seed + 100).T
                    f = fw.mm
                elif op == "conjugate-transposed":
                    a = fw.rand((k, m), dt, seed).conj().T
                    b = fw.rand((k, n), dt, seed + 100)
                    f = fw.mm
                else:
                    a = fw.rand((m, k), dt, seed)
                    b = fw.rand((k, n), dt, seed + 100)
                s0 = stats(lib, fw)
                c = f(a, b)
                s1 = stats(lib, fw)
                ok, q = within_bound(fw, a, b, c, dtype)
                dp, du = counted(s0, s1)
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
        # a planted fault (exponent bit of one element of C) must be found and corrected; the
        # second shape is promoted under auto on a GPU with fast FP64
        for (m, k, n, i, j) in ((300, 200, 260, 10, 20), (1100, 1024, 1030, 1000, 1010)):
            a = fw.rand((m, k), dt, 77)
            b = fw.rand((k, n), dt, 78)
            s0 = stats(lib, fw)
            # the real part's exponent for complex types
            lib.blasft_cublas_plant_fault(1, i, j, 29 if dtype in ("float32", "complex64") else 61)
            c = fw.mm(a, b)
            s1 = stats(lib, fw)
            ok, q = within_bound(fw, a, b, c, dtype)
            what = f"{name} {dtype} {m}x{n}x{k}"
            check(s1.faults_injected - s0.faults_injected == 1, f"{what} fault planted")
            check(s1.errors_detected > s0.errors_detected, f"{what} planted fault detected")
            check(s1.errors_corrected + s1.blocks_recomputed > s0.errors_corrected + s0.blocks_recomputed,
                  f"{what} planted fault corrected")
            check(ok, f"{what} planted fault: result error {q:.3g} x bound")
    if name == "torch":
        torch = fw.m
        # nn.Linear's addmm with a bias vector goes to cublasLtMatmul (CUBLASLT_EPILOGUE_BIAS)
        for dtype in ("float32", "float64"):
            dt = getattr(np, dtype)
            for (m, n, k) in ((64, 48, 33), (512, 768, 1024)):
                x = fw.rand((m, k), dt, 31)
                w = fw.rand((n, k), dt, 32)
                bias = fw.rand((n,), dt, 33)
                s0 = stats(lib, fw)
                y = torch.nn.functional.linear(x, w, bias)
                s1 = stats(lib, fw)
                ok, q = within_bound(fw, x, w.t(), y, dtype, bias)
                dp, du = counted(s0, s1)
                check(ok, f"torch linear+bias {dtype} {m}x{n}x{k}: error {q:.3g} x bound")
                check(dp == 1 and du == 0, f"torch linear+bias {dtype} {m}x{n}x{k}: {dp} protected, "
                      f"{du} unprotected")
            x = fw.rand((300, 260), dt, 41)
            w = fw.rand((200, 260), dt, 42)
            bias = fw.rand((200,), dt, 43)
            s0 = stats(lib, fw)
            lib.blasft_cublas_plant_fault(1, 10, 20, 29 if dtype == "float32" else 61)
            y = torch.nn.functional.linear(x, w, bias)
            s1 = stats(lib, fw)
            ok, q = within_bound(fw, x, w.t(), y, dtype, bias)
            check(s1.errors_detected > s0.errors_detected and
                  s1.errors_corrected + s1.blocks_recomputed > s0.errors_corrected + s0.blocks_recomputed,
                  f"torch linear+bias {dtype}: planted fault detected and corrected")
            check(ok, f"torch linear+bias {dtype}: planted fault: result error {q:.3g} x bound")
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
            # cold: the capture stream's context is made during the capture (since 2026-11-27)
            check(dp == 2, f"torch graph replay (warm stream {warm}): {dp} protected")
        # a linear layer with a bias (cublasLtMatmul) captured on a warmed side stream
        x = fw.rand((256, 192), np.float32, 51)
        w = fw.rand((320, 192), np.float32, 52)
        bias = fw.rand((320,), np.float32, 53)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                y = torch.nn.functional.linear(x, w, bias)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            y = torch.nn.functional.linear(x, w, bias)
        s0 = stats(lib, fw)
        x.copy_(fw.rand((256, 192), np.float32, 54))
        g.replay()
        g.replay()
        s1 = stats(lib, fw)
        ok, q = within_bound(fw, x, w.t(), y, "float32", bias)
        dp = s1.protected_gemms - s0.protected_gemms
        check(ok, f"torch graph replay of linear + bias: error {q:.3g} x bound")
        check(dp == 2, f"torch graph replay of linear + bias: {dp} protected")
        # a larger product on the capture stream after the capture: the graph keeps its own
        # engine context (before 8b5dfb4 its workspace was reallocated under it and the replay
        # failed); once the graph is gone, its context is released by the next product there
        a = fw.rand((256, 192), np.float32, 61)
        b = fw.rand((192, 320), np.float32, 62)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                out = a @ b
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            out = a @ b
        big_a = fw.rand((1500, 1300), np.float32, 63)
        big_b = fw.rand((1300, 1100), np.float32, 64)
        s0 = stats(lib, fw)
        with torch.cuda.stream(s):
            big = big_a @ big_b
        torch.cuda.current_stream().wait_stream(s)
        a.copy_(fw.rand((256, 192), np.float32, 65))
        g.replay()
        g.replay()
        s1 = stats(lib, fw)
        ok_big, q_big = within_bound(fw, big_a, big_b, big, "float32")
        ok, q = within_bound(fw, a, b, out, "float32")
        dp = s1.protected_gemms - s0.protected_gemms
        check(ok_big and ok, f"torch graph replay after a larger product on its stream: errors "
              f"{q_big:.3g}, {q:.3g} x bound")
        check(dp == 3, f"torch graph replay after a larger product on its stream: {dp} protected")
        del g
        torch.cuda.synchronize()
        held = torch.cuda.mem_get_info()[0]
        back = 0
        for _ in range(50):  # CUDA tells the library of the graph's end asynchronously
            with torch.cuda.stream(s):
                out = a @ b
            torch.cuda.synchronize()
            back = torch.cuda.mem_get_info()[0] - held
            if back > 64 << 20:
                break
            time.sleep(0.02)
        check(back > 64 << 20, f"torch graph destroyed: {back / 2**20:.1f} MiB of the engine's "
              "context given back")
        for dtype in ("float32", "float64"):
            check_batch_graph(lib, fw, dtype, 8, 96, 64, 80)
            check_batch_graph(lib, fw, dtype, 16, 512, 512, 512)


def check_batch_graph(lib, fw, dtype, batch, m, k, n):
    """torch.bmm of `batch` float32 or float64 products (one cublas{S,D}gemmStridedBatched,
    checked as a whole; float32 promoted on a GPU with fast FP64, 16 x 512^3 then in two chunks of
    copies) captured into a CUDA graph with a fault planted at the capture, on one side stream for
    all calls (a thread's ninth stream captured has no context: it passes through) after one
    product there (the warm-up PyTorch's documentation asks for; a graph of an earlier call
    holds that stream's context, so the product there gets a context of its own): each of two
    replays protects every product and corrects the fault, the result right."""
    import numpy as np
    torch = fw.m
    q = fw.rand((batch, m, k), getattr(np, dtype), 81)
    kt = fw.rand((batch, k, n), getattr(np, dtype), 82)
    if not hasattr(check_batch_graph, "stream"):
        check_batch_graph.stream = torch.cuda.Stream()
    s = check_batch_graph.stream
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch.bmm(q, kt)
    torch.cuda.current_stream().wait_stream(s)
    s0 = stats(lib, fw)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        lib.blasft_cublas_plant_fault(1, 10, 20, 29 if dtype == "float32" else 61)
        c = torch.bmm(q, kt)
    lib.blasft_cublas_plant_fault(0, 0, 0, 0)
    g.replay()
    g.replay()
    torch.cuda.synchronize()
    s1 = stats(lib, fw)
    ok, err = within_bound(fw, q, kt, c, dtype)
    what = f"torch {dtype} graph of bmm ({batch} x {m}x{n}x{k}) replayed twice"
    check(ok, f"{what}: error {err:.3g} x bound")
    dp, du = counted(s0, s1)
    check(dp == 2 * batch and du == 0,
          f"{what}: {dp} protected, {du} unprotected (capture and replays; want {2 * batch}, 0)")
    dd = s1.errors_detected - s0.errors_detected
    dc = s1.errors_corrected + s1.blocks_recomputed - s0.errors_corrected - s0.blocks_recomputed
    check(dd == 2 and dc >= 2, f"{what}: planted fault {dd} times detected, {dc} corrected (want 2)")
    del g
    torch.cuda.synchronize()


def within_lowp_bound(fw, a, b, c, out_u, acc_u=2.0 ** -24):
    """|c - a b| <= u_o |a b| + (k + 4) 4 acc_u |a||b| + 2^-24 elementwise (C rounded once to its
    type, accumulation in FP32 (acc_u 2^-24; float16's 2^-11 for 16-bit compute) with truncation,
    half's subnormals), reference in float64; a and b stacked alike (batches: every matrix)."""
    import numpy as np
    A, B = fw.host(a.float() if fw.name == "torch" else a), fw.host(b.float() if fw.name == "torch" else b)
    C = fw.host(c.float() if fw.name == "torch" else c)
    ref, mag = np.matmul(A, B), np.matmul(np.abs(A), np.abs(B))
    bound = out_u * np.abs(ref) + (A.shape[-1] + 4) * 4 * acc_u * mag + 2.0 ** -24
    q = float(np.max(np.abs(C - ref) / bound)) if C.size else 0.0
    return q <= 1.0, q


def run_lowp_checks(name):
    """float16 (and, with torch, bfloat16) products: cublasGemmEx with FP32 compute, protected
    (cuda/gpu_lowp.cu): right within the bound, counted protected, a planted fault in an exponent
    bit of C corrected; with torch also F.linear with a bias (cublasLtMatmul's bias epilogue);
    and batches of them (run_lowp_batch_checks)."""
    lib = blasft()
    fw = Framework(name)
    types = [("float16", 2.0 ** -11)] + ([("bfloat16", 2.0 ** -8)] if name == "torch" else [])
    for dtype, out_u in types:
        def cast(x):
            if name == "torch":
                return x.to(getattr(fw.m, dtype))
            return x.astype(dtype)
        for (m, k, n) in ((128, 96, 64), (257, 129, 333), (1024, 1024, 1024)):
            a = cast(fw.rand((m, k), "float32", 91))
            b = cast(fw.rand((k, n), "float32", 92))
            s0 = stats(lib, fw)
            c = fw.mm(a, b)
            s1 = stats(lib, fw)
            ok, q = within_lowp_bound(fw, a, b, c, out_u)
            what = f"{name} {dtype} {m}x{n}x{k}"
            check(ok, f"{what}: error {q:.3g} x bound")
            dp, du = counted(s0, s1)
            check(dp == 1 and du == 0, f"{what}: {dp} protected, {du} unprotected")
            check(s1.errors_detected == s0.errors_detected, f"{what}: nothing detected")
        if name == "torch":  # F.linear with a bias: cublasLtMatmul with the bias epilogue
            import numpy as np
            x = cast(fw.rand((512, 384), "float32", 95))
            w = cast(fw.rand((640, 384), "float32", 96))
            bias = cast(fw.rand((640,), "float32", 97))
            s0 = stats(lib, fw)
            y = fw.m.nn.functional.linear(x, w, bias)
            s1 = stats(lib, fw)
            X, W, Bv, Y = (fw.host(t.float()) for t in (x, w, bias, y))
            ref = X @ W.T + Bv
            bound = out_u * np.abs(ref) + (384 + 4) * 2.0 ** -22 * (np.abs(X) @ np.abs(W.T) + np.abs(Bv)) + 2.0 ** -24
            q = float(np.max(np.abs(Y - ref) / bound))
            dp, du = counted(s0, s1)
            check(q <= 1.0, f"torch linear+bias {dtype}: error {q:.3g} x bound")
            check(dp == 1 and du == 0, f"torch linear+bias {dtype}: {dp} protected, {du} unprotected")
        if name == "torch":
            check_lowp_graph(lib, fw, dtype, out_u, cast)
            check_lowp_replayed(lib, fw, dtype, out_u, cast)
        if name == "torch" and dtype == "bfloat16":
            # bfloat16's range is FP32's: op(A) tiny, op(B) huge (the reference's pieces must be
            # scaled so that its FP32 products stay finite), then no flag and the result right
            a = cast(fw.rand((1024, 1024), "float32", 98) * 2.0 ** -100)
            b = cast(fw.rand((1024, 1024), "float32", 99) * 2.0 ** 110)
            s0 = stats(lib, fw)
            c = fw.mm(a, b)
            s1 = stats(lib, fw)
            ok, q = within_lowp_bound(fw, a, b, c, out_u)
            fa = s1.false_alarms - s0.false_alarms
            check(ok and fa == 0 and s1.errors_detected == s0.errors_detected,
                  f"torch bfloat16 2^-100 x 2^110: error {q:.3g} x bound, {fa} false alarms")
        # Inf in the operands (a loss scaler's overflow): the blocks they reach flag; the second
        # tier skips what cannot be judged, so the call stays cheap and C is cuBLAS's
        a = cast(fw.rand((2048, 2048), "float32", 90))
        a[::64, 5] = float("inf")  # cuBLAS's op(B) for a row-major product: every 64th column
        b = cast(fw.rand((2048, 2048), "float32", 89))
        b[7, ::512] = float("-inf")  # cuBLAS's op(A): four rows
        lib.blasft_cublas_bypass(1)
        plain = fw.mm(a, b)
        fw.sync()
        lib.blasft_cublas_bypass(0)
        s0 = stats(lib, fw)
        t0 = time.time()
        c = fw.mm(a, b)
        fw.sync()
        dt = time.time() - t0
        s1 = stats(lib, fw)
        import numpy as np
        C, P = fw.host(c.float() if name == "torch" else c), fw.host(plain.float() if name == "torch" else plain)
        fin = np.isfinite(P)
        same = bool(np.array_equal(np.isfinite(C), fin) and np.array_equal(np.isnan(C), np.isnan(P)) and
                    np.all(np.abs(C[fin] - P[fin]) <= 4 * out_u * np.abs(P[fin]) + 1e-3))
        check(same and s1.errors_detected == s0.errors_detected,
              f"{name} {dtype} Inf in A and B: C as plain cuBLAS's, nothing corrected, "
              f"{(s1.false_alarms - s0.false_alarms)} false alarms, {dt * 1e3:.1f} ms")
        a = cast(fw.rand((300, 200), "float32", 93))
        b = cast(fw.rand((200, 260), "float32", 94))
        s0 = stats(lib, fw)
        lib.blasft_cublas_plant_fault(1, 10, 20, 14)  # the highest exponent bit of half and bf16
        c = fw.mm(a, b)
        s1 = stats(lib, fw)
        ok, q = within_lowp_bound(fw, a, b, c, out_u)
        what = f"{name} {dtype} 300x260x200 planted fault"
        check(s1.faults_injected - s0.faults_injected == 1, f"{what}: planted")
        check(s1.errors_detected > s0.errors_detected and s1.errors_corrected > s0.errors_corrected,
              f"{what}: detected and corrected")
        check(ok, f"{what}: result error {q:.3g} x bound")
        run_lowp_batch_checks(lib, fw, dtype, out_u, cast)


def graph_counts(lib):
    """The engine's own graphs made and replayed so far on this thread's contexts."""
    c, r = ctypes.c_uint64(), ctypes.c_uint64()
    lib.blasft_cublas_graph_counts(ctypes.byref(c), ctypes.byref(r))
    return c.value, r.value


def check_lowp_replayed(lib, fw, dtype, out_u, cast):
    """An eager loop as a framework runs it: a linear layer with a bias (addmm, which F.linear
    calls) and a product (cublasGemmEx) on the same tensors refilled with fresh data each step,
    into the same outputs (out=: the addresses of every step the same, as a framework's allocator
    gives them back): from the second step on the engine replays its own graphs of the two
    calls. Every step's results right within the bound, each call
    protected; the fourth step plants a fault in the product (run directly), corrected; the
    graphs made and replayed counted (BLASFT_GPU_GRAPHS on or exact)."""
    import numpy as np
    torch = fw.m
    x = cast(fw.rand((384, 256), "float32", 71))
    w = cast(fw.rand((320, 256), "float32", 72))
    bias = cast(fw.rand((320,), "float32", 73))
    b = cast(fw.rand((256, 200), "float32", 74))
    y = torch.empty((384, 320), dtype=x.dtype, device=x.device)
    z = torch.empty((384, 200), dtype=x.dtype, device=x.device)
    c0, r0 = graph_counts(lib)
    steps, bad = 6, []
    for step in range(steps):
        x.copy_(cast(fw.rand((384, 256), "float32", 100 + step)))
        s0 = stats(lib, fw)
        torch.addmm(bias, x, w.t(), out=y)
        if step == 3:
            lib.blasft_cublas_plant_fault(1, 10, 20, 14)  # the highest exponent bit
        torch.mm(x, b, out=z)
        s1 = stats(lib, fw)
        X, W, Bv, Y = (fw.host(t.float()) for t in (x, w, bias, y))
        ref = X @ W.T + Bv
        bound = out_u * np.abs(ref) + (256 + 4) * 2.0 ** -22 * (np.abs(X) @ np.abs(W.T) + np.abs(Bv)) + 2.0 ** -24
        ql = float(np.max(np.abs(Y - ref) / bound))
        ok, qm = within_lowp_bound(fw, x, b, z, out_u)
        dp, du = counted(s0, s1)
        fixed = s1.errors_corrected - s0.errors_corrected
        if not (ql <= 1.0 and ok and dp == 2 and du == 0 and (fixed >= 1 if step == 3 else fixed == 0)):
            bad.append(f"step {step}: linear {ql:.3g}, mm {qm:.3g} x bound, {dp} protected, "
                       f"{du} unprotected, {fixed} corrected")
    c1, r1 = graph_counts(lib)
    check(not bad, f"torch {dtype} eager loop of linear+bias and mm, {steps} steps: " +
          ("; ".join(bad) if bad else "every step right and protected, the planted fault corrected"))
    if os.environ.get("BLASFT_GPU_GRAPHS", "on").lower() != "off":
        # per call: seen, captured, then replayed but at the planted step (the product)
        check(c1 - c0 >= 2 and r1 - r0 >= 2 * (steps - 2) - 1,
              f"torch {dtype} eager loop: {c1 - c0} graphs made, {r1 - r0} replays "
              f"(expected 2, {2 * (steps - 2) - 1})")


def check_lowp_graph(lib, fw, dtype, out_u, cast):
    """A product, a batch of 4 and a linear layer with a bias (cublasGemmEx,
    cublasGemmStridedBatchedEx, cublasLtMatmul) captured into one CUDA graph on a warmed side
    stream, as torch.cuda.graphs and torch.compile's reduce-overhead mode do, with a fault planted
    in the product at the capture: each of two replays protects all 6 GEMMs and corrects the
    fault, the results right within the bound."""
    import numpy as np
    torch = fw.m
    a, b = cast(fw.rand((300, 200), "float32", 71)), cast(fw.rand((200, 260), "float32", 72))
    q, kt = cast(fw.rand((4, 128, 64), "float32", 73)), cast(fw.rand((4, 64, 96), "float32", 74))
    x, w = cast(fw.rand((256, 192), "float32", 75)), cast(fw.rand((320, 192), "float32", 76))
    bias = cast(fw.rand((320,), "float32", 77))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            c, cb, y = a @ b, torch.bmm(q, kt), torch.nn.functional.linear(x, w, bias)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        lib.blasft_cublas_plant_fault(1, 10, 20, 14)  # the highest exponent bit of half and bf16
        c, cb, y = a @ b, torch.bmm(q, kt), torch.nn.functional.linear(x, w, bias)
    lib.blasft_cublas_plant_fault(0, 0, 0, 0)
    s0 = stats(lib, fw)
    g.replay()
    g.replay()
    torch.cuda.synchronize()
    s1 = stats(lib, fw)
    ok1, q1 = within_lowp_bound(fw, a, b, c, out_u)
    ok2, q2 = within_lowp_bound(fw, q, kt, cb, out_u)
    X, W, Bv, Y = (fw.host(t.float()) for t in (x, w, bias, y))
    ref = X @ W.T + Bv
    mag = np.abs(X) @ np.abs(W.T) + np.abs(Bv)
    bound = out_u * np.abs(ref) + (192 + 4) * 2.0 ** -22 * mag + 2.0 ** -24
    q3 = float(np.max(np.abs(Y - ref) / bound))
    what = f"torch {dtype} graph of mm, bmm and linear+bias replayed twice"
    check(ok1 and ok2 and q3 <= 1.0, f"{what}: errors {q1:.3g}, {q2:.3g}, {q3:.3g} x bound")
    dp, du = counted(s0, s1)
    check(dp == 12 and du == 0, f"{what}: {dp} protected, {du} unprotected (want 12, 0)")
    dd, dc = s1.errors_detected - s0.errors_detected, s1.errors_corrected - s0.errors_corrected
    check(dd == 2 and dc == 2,
          f"{what}: planted fault {dd} times detected, {dc} corrected (want 2)")
    del g
    torch.cuda.synchronize()


def swap_last(fw, x):
    """x with its last two axes swapped, a view: cuBLAS gets the batch's operand transposed."""
    return x.transpose(-1, -2) if fw.name == "torch" else x.swapaxes(-1, -2)


def lowp_batch(lib, fw, what, f, a, b, out_u, matrices, acc_u=2.0 ** -24, protected=True):
    """One batched product c = f(a, b) of `matrices` float16 / bfloat16 matrices: c right within
    the bound (acc_u: the accumulation's unit), the counters moved by `matrices` protected GEMMs
    and no unprotected one (protected=False: the other way round), nothing detected. c."""
    s0 = stats(lib, fw)
    c = f(a, b)
    s1 = stats(lib, fw)
    ok, q = within_lowp_bound(fw, a, b, c, out_u, acc_u)
    dp, du = counted(s0, s1)
    want_p, want_u = (matrices, 0) if protected else (0, matrices)
    check(ok, f"{what}: error {q:.3g} x bound")
    check(dp == want_p and du == want_u, f"{what}: {dp} protected, {du} unprotected (want "
          f"{want_p}, {want_u})")
    check(s1.errors_detected == s0.errors_detected and s1.false_alarms == s0.false_alarms,
          f"{what}: nothing detected, {s1.false_alarms - s0.false_alarms} false alarms")
    return c


def run_lowp_batch_checks(lib, fw, dtype, out_u, cast):
    """Batches of float16 (and, with torch, bfloat16) products, one protected GEMM per matrix:
    torch.bmm and torch.matmul on 3-D tensors and torch.matmul on 4-D ones (attention's
    (B, H, S, D) @ (B, H, D, S), and q @ k^T: a transposed operand) call one
    cublasGemmStridedBatchedEx (or a cublasLtMatmul batch where cublasLt is torch's preferred
    library); CuPy's matmul of stacked arrays calls that or cublasGemmEx per matrix: either way
    as many protected GEMMs as matrices, right within the bound, nothing unprotected, nothing
    detected. Planted faults (exponent bit 14 of C in two matrices of a batch, op(B) plain and
    transposed) detected and corrected. With torch also a float C (torch.bmm's out_dtype, where
    this torch has it) protected, and float16 with 16-bit accumulation
    (torch.backends.cuda.matmul.allow_fp16_accumulation, where it has it) passed through:
    counted unprotected, one per matrix."""
    name = fw.name
    ops = [("bmm", fw.bmm)] + ([("matmul", fw.mm)] if name == "torch" else [])
    seed = 110
    for (bt, m, k, n) in ((4, 128, 96, 64), (3, 257, 129, 333), (16, 64, 64, 64)):
        seed += 2
        a = cast(fw.rand((bt, m, k), "float32", seed))
        b = cast(fw.rand((bt, k, n), "float32", seed + 1))
        for op, f in ops:
            lowp_batch(lib, fw, f"{name} {op} {dtype} {bt}x{m}x{n}x{k}", f, a, b, out_u, bt)
        b_nk = cast(fw.rand((bt, n, k), "float32", seed + 50))
        lowp_batch(lib, fw, f"{name} bmm {dtype} {bt}x{m}x{n}x{k} op(B) transposed", fw.bmm, a,
                   swap_last(fw, b_nk), out_u, bt)
    # attention-like products of 4-D tensors (B, H, S, D): B H matrices each
    for (B, H, S, D) in ((2, 4, 128, 64), (1, 8, 200, 80)):
        seed += 3
        q = cast(fw.rand((B, H, S, D), "float32", seed))
        kk = cast(fw.rand((B, H, S, D), "float32", seed + 1))
        v = cast(fw.rand((B, H, S, D), "float32", seed + 2))
        kt = cast(fw.rand((B, H, D, S), "float32", seed + 3))
        shape = f"({B},{H},{S},{D})"
        lowp_batch(lib, fw, f"{name} {dtype} {shape} @ ({B},{H},{D},{S})", fw.mm, q, kt, out_u,
                   B * H)
        scores = lowp_batch(lib, fw, f"{name} {dtype} q @ k^T {shape}", fw.mm, q,
                            swap_last(fw, kk), out_u, B * H)
        p = cast(scores * (1.0 / S))  # softmax-sized weights
        lowp_batch(lib, fw, f"{name} {dtype} scores @ v {shape}", fw.mm, p, v, out_u, B * H)
    # planted faults: two flips (matrices 0 and 1 of the batch, or the first two of CuPy's
    # cublasGemmEx per matrix), each corrected
    for label, tr in (("", False), (" op(B) transposed", True)):
        bt = 4
        a = cast(fw.rand((bt, 300, 200), "float32", 131))
        b = swap_last(fw, cast(fw.rand((bt, 260, 200), "float32", 132))) if tr else \
            cast(fw.rand((bt, 200, 260), "float32", 132))
        s0 = stats(lib, fw)
        lib.blasft_cublas_plant_fault(2, 10, 20, 14)  # the highest exponent bit of half and bf16
        c = fw.bmm(a, b)
        s1 = stats(lib, fw)
        lib.blasft_cublas_plant_fault(0, 0, 0, 0)  # disarm what the call did not take
        ok, q = within_lowp_bound(fw, a, b, c, out_u)
        what = f"{name} bmm {dtype} 4x300x260x200{label} planted faults"
        dp = s1.protected_gemms - s0.protected_gemms
        check(s1.faults_injected - s0.faults_injected == 2,
              f"{what}: {s1.faults_injected - s0.faults_injected} planted (want 2)")
        check(dp == bt, f"{what}: {dp} protected (want {bt})")
        check(s1.errors_detected - s0.errors_detected >= 2 and
              s1.errors_corrected - s0.errors_corrected >= 2,
              f"{what}: {s1.errors_detected - s0.errors_detected} detected, "
              f"{s1.errors_corrected - s0.errors_corrected} corrected (want 2 each)")
        check(ok, f"{what}: result error {q:.3g} x bound")
    if name != "torch":
        return
    torch = fw.m
    a = cast(fw.rand((4, 128, 96), "float32", 141))
    b = cast(fw.rand((4, 96, 64), "float32", 142))
    # a float C: cublasGemmStridedBatchedEx with C in CUDA_R_32F (torch.bmm's out_dtype, 2.8 on)
    has_out_dtype = False
    try:
        torch.bmm(a, b, out_dtype=torch.float32)
        has_out_dtype = True
    except TypeError as e:  # no such argument
        print(f"note torch.bmm {dtype} with out_dtype=float32 skipped: {str(e)[:120]}", flush=True)
    except RuntimeError as e:  # this torch's limits: a note; cuBLAS's (or ours) failing: a failure
        check("CUBLAS" not in str(e).upper(), f"torch bmm {dtype} out_dtype=float32: {str(e)[:200]}")
        print(f"note torch.bmm {dtype} with out_dtype=float32 skipped: {str(e)[:120]}", flush=True)
    if has_out_dtype:
        lowp_batch(lib, fw, f"torch bmm {dtype} 4x128x64x96 into float32",
                   lambda x, y: torch.bmm(x, y, out_dtype=torch.float32), a, b, 2.0 ** -24, 4)
    # 16-bit accumulation (float16 only; torch uses it from compute capability 7 on):
    # CUBLAS_COMPUTE_16F, no protected path
    flags = torch.backends.cuda.matmul
    if dtype == "float16" and hasattr(flags, "allow_fp16_accumulation") and \
            torch.cuda.get_device_capability()[0] >= 7:
        old = flags.allow_fp16_accumulation
        flags.allow_fp16_accumulation = True
        try:
            lowp_batch(lib, fw, "torch bmm float16 4x128x64x96 with 16-bit accumulation", fw.bmm,
                       a, b, out_u, 4, acc_u=2.0 ** -11, protected=False)
        finally:
            flags.allow_fp16_accumulation = old
    elif dtype == "float16":
        print("note torch bmm float16 with 16-bit accumulation skipped: this torch has no "
              "torch.backends.cuda.matmul.allow_fp16_accumulation (or the GPU is older than "
              "compute capability 7)", flush=True)


HALF_PROGRAM = """
import sys
name = sys.argv[1]
fw = __import__(name)
if name == "torch":
    g = fw.Generator(device="cuda").manual_seed(7)
    pairs = [(fw.randn(4, 128, 96, device="cuda", generator=g).to(t),
              fw.randn(4, 96, 64, device="cuda", generator=g).to(t)) for t in (fw.float16, fw.bfloat16)]
else:
    r = fw.random.default_rng(7)
    pairs = [(r.standard_normal((4, 128, 96), dtype=fw.float32).astype(fw.float16),
              r.standard_normal((4, 96, 64), dtype=fw.float32).astype(fw.float16))]
err = 0.0
for a, b in pairs:
    for _ in range(3):
        c = a @ b
    if name == "torch":
        ref, c = a.double() @ b.double(), c.double()
    else:
        ref, c = a.astype(fw.float64) @ b.astype(fw.float64), c.astype(fw.float64)
    err = max(err, float(abs(c - ref).max() / abs(ref).max()))
print("error", err, "matrices", 3 * 4 * len(pairs))
# then a batch with 16-bit accumulation (torch's allow_fp16_accumulation, where it has it): it
# passes through unprotected; its warning comes after this line
sys.stderr.write("--- 16-bit accumulation ---\\n")
sys.stderr.flush()
n16 = 0
if name == "torch" and hasattr(fw.backends.cuda.matmul, "allow_fp16_accumulation") and \\
        fw.cuda.get_device_capability()[0] >= 7:
    fw.backends.cuda.matmul.allow_fp16_accumulation = True
    c = pairs[0][0] @ pairs[0][1]
    fw.cuda.synchronize()
    n16 = 4
print("fp16_accumulation", n16)
"""


def check_half(name):
    """Batches of half-precision products (and, with torch, bfloat16), in a process of its own
    (the warning is once per process): right, protected and not warned of. PyTorch computes each
    by one cublasGemmStridedBatchedEx, protected since the half batches' path (one protected GEMM
    per matrix); CuPy by that or by cublasGemmEx per matrix: protected either way. Then (torch,
    where it has torch.backends.cuda.matmul.allow_fp16_accumulation) a float16 batch with 16-bit
    accumulation: counted unprotected, one per matrix, warned of once."""
    import subprocess
    import tempfile
    marker = "--- 16-bit accumulation ---"
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        env = {k: v for k, v in os.environ.items() if k not in ("BLASFT_LOG", "BLASFT_LOG_FILE")}
        env["BLASFT_REPORT"] = report
        p = subprocess.run([sys.executable, "-c", HALF_PROGRAM, name], env=env,
                           capture_output=True, text=True, timeout=300)
        out = {}
        for line in p.stdout.splitlines():
            f = line.split()
            if len(f) >= 2 and f[0] in ("error", "fp16_accumulation"):
                out[f[0]] = float(f[1])
                if len(f) >= 4 and f[2] == "matrices":
                    out["matrices"] = int(f[3])
        err = out.get("error", 1.0) if p.returncode == 0 else 1.0
        matrices, n16 = out.get("matrices", 0), int(out.get("fp16_accumulation", 0))
        what = f"{name} {'float16 and bfloat16' if name == 'torch' else 'float16'} batched matmul"
        check(p.returncode == 0 and err < 1e-2 and matrices > 0,
              f"{what}: relative error {err:.3g} (status {p.returncode})" +
              ("" if p.returncode == 0 else f"; stderr: {p.stderr[-400:]!r}"))
        before, _, after = p.stderr.partition(marker)
        warned = before.count("passes through unprotected")
        check(warned == 0, f"{what}: warned {warned} times (want 0)" +
              ("" if warned == 0 else f"; stderr: {before[-400:]!r}"))
        abft = json.load(open(report))["abft"] if os.path.exists(report) else {}
        # the products' matrices and their float64 references' (protected too)
        ok = abft.get("protected_gemms", 0) >= matrices and abft.get("unprotected_gemms", -1) == n16
        check(ok and abft.get("errors_detected", 1) == 0,
              f"{what}: {matrices} matrices protected, {n16} unprotected: {abft}")
        if n16:
            warned16 = after.count("passes through unprotected")
            check(warned16 == 1, f"{name} float16 batch with 16-bit accumulation: warned "
                  f"{warned16} times (want 1)" +
                  ("" if warned16 == 1 else f"; stderr: {after[-400:]!r}"))
        elif name == "torch":
            print("note torch float16 batch with 16-bit accumulation skipped: no "
                  "torch.backends.cuda.matmul.allow_fp16_accumulation (or compute capability "
                  "below 7)", flush=True)


def timed(fw, f, burst):
    """ms per product of a burst of `burst` products f(), by CUDA events on the current stream."""
    if fw.name == "torch":
        e0, e1 = fw.m.cuda.Event(enable_timing=True), fw.m.cuda.Event(enable_timing=True)
    else:
        e0, e1 = fw.m.cuda.Event(), fw.m.cuda.Event()
    e0.record()
    for _ in range(burst):
        c = f()
    e1.record()
    e1.synchronize()
    del c
    ms = e0.elapsed_time(e1) if fw.name == "torch" else fw.m.cuda.get_elapsed_time(e0, e1)
    return ms / burst


def run_bench(name):
    import numpy as np
    import statistics
    fw = Framework(name)
    lib = blasft()
    if lib is None:
        sys.exit("bench needs LD_PRELOAD=libblas_ft.so (plain runs bypass the interposer)")
    sizes = {"float32": (1024, 2048, 4096, 8192, 16384), "float64": (1024, 2048, 4096, 8192, 16384),
             "complex64": (1024, 4096, 8192), "complex128": (1024, 4096, 8192),
             "float16": (256, 512, 1024, 2048, 4096, 8192, 16384)}
    # BENCH_DTYPES / BENCH_SIZES (comma lists) narrow the run, e.g. to compare two settings
    if os.environ.get("BENCH_DTYPES"):
        sizes = {d: sizes[d] for d in os.environ["BENCH_DTYPES"].split(",")}
    if os.environ.get("BENCH_SIZES"):
        keep = {int(x) for x in os.environ["BENCH_SIZES"].split(",")}
        sizes = {d: tuple(n for n in ns if n in keep) for d, ns in sizes.items()}
    s0 = stats(lib, fw)
    # host time per call (no synchronisation inside the loop): what the interposer and the engine
    # cost the calling thread, at a size where the GPU is not the limit of a short loop
    for dtype in ("float32", "float64"):
        a, b = fw.rand((256, 256), getattr(np, dtype), 3), fw.rand((256, 256), getattr(np, dtype), 4)
        res = {}
        for prot in (False, True, False, True, False, True):
            lib.blasft_cublas_bypass(0 if prot else 1)
            fw.mm(a, b)
            fw.sync()
            t0 = time.perf_counter()
            for _ in range(20):
                fw.mm(a, b)
            res.setdefault(prot, []).append((time.perf_counter() - t0) / 20 * 1e6)
            fw.sync()
        rec = {"framework": name, "dtype": dtype, "n": 256, "host_us_plain": min(res[False]),
               "host_us_protected": min(res[True])}
        print(json.dumps(rec), flush=True)
    # BENCH_OP=linear (torch): F.linear(a, b, bias), i.e. cublasLtMatmul with the bias epilogue;
    # BENCH_OP=bmm (torch): a batch of 32 products of n x n matrices, n = 64 .. 512
    op_name = os.environ.get("BENCH_OP", "mm")
    if op_name == "bmm":
        sizes = {d: tuple(n for n in (64, 128, 256, 512) if not os.environ.get("BENCH_SIZES") or
                          str(n) in os.environ["BENCH_SIZES"].split(","))
                 for d in sizes}
    # BENCH_GRAPH=1 (torch): a burst of products captured into a CUDA graph on a warmed side
    # stream, once plain (interposer bypassed during the capture) and once protected; the graphs'
    # replays are timed, per product
    graph = os.environ.get("BENCH_GRAPH") == "1" and name == "torch"
    for dtype, ns in sizes.items():
        dt = getattr(np, dtype)
        for n in ns:
            a, b = fw.rand((n, n), dt, 1), fw.rand((n, n), dt, 2)
            if op_name == "bmm":
                a, b = fw.rand((32, n, n), dt, 1), fw.rand((32, n, n), dt, 2)
                op = lambda: fw.m.bmm(a, b)
            elif op_name == "linear":
                bias = fw.rand((n,), dt, 3)
                op = lambda: fw.m.nn.functional.linear(a, b, bias)
            else:
                op = lambda: fw.mm(a, b)
            pairs, burst = (5, 2) if n >= 8192 else (9, 3)
            run = {0: op, 1: op}
            if graph:
                burst = 8 if n < 8192 else 4
                for prot in (0, 1):
                    lib.blasft_cublas_bypass(1 - prot)
                    torch = fw.m
                    s = torch.cuda.Stream()
                    s.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(s):
                        for _ in range(2):
                            op()
                    torch.cuda.current_stream().wait_stream(s)
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g, stream=s):
                        for _ in range(burst):
                            op()
                    run[prot] = g.replay
            for prot in (0, 1):  # warm-up of both (the engine's context and workspace)
                lib.blasft_cublas_bypass(1 - prot)
                timed(fw, run[prot], 1 if graph else 2)
            t = {0: [], 1: []}
            for _ in range(pairs):
                for prot in (0, 1):
                    lib.blasft_cublas_bypass(1 - prot)
                    t[prot].append(timed(fw, run[prot], 1) / burst if graph
                                   else timed(fw, run[prot], burst))
            lib.blasft_cublas_bypass(0)
            mp, mq = statistics.median(t[0]), statistics.median(t[1])
            rec = {"framework": name, "op": op_name + ("+graph" if graph else ""), "dtype": dtype,
                   "n": n, "plain_ms": mp, "protected_ms": mq,
                   "ratio": mq / mp, "pairs": pairs, "burst": burst,
                   "plain_all": t[0], "protected_all": t[1]}
            print(json.dumps(rec), flush=True)
            del a, b
    s1 = stats(lib, fw)
    print(json.dumps({"framework": name,
                      "protected_gemms": s1.protected_gemms - s0.protected_gemms,
                      "unprotected_gemms": s1.unprotected_gemms - s0.unprotected_gemms,
                      "errors_detected": s1.errors_detected - s0.errors_detected}), flush=True)


def table(files):
    rows, host = [], []
    for fn in files:
        for line in open(fn):
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if "ratio" in r:
                rows.append(r)
            elif "host_us_plain" in r:
                host.append(r)
    order = {"float32": 0, "float64": 1, "complex64": 2, "complex128": 3, "float16": 4}
    print("| framework | op | type | n (m=n=k) | plain ms | protected ms | ratio | pairs x burst |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in sorted(rows, key=lambda r: (r["framework"], r.get("op", "mm"),
                                         order.get(r["dtype"], 9), r["n"])):
        print(f"| {r['framework']} | {r.get('op', 'mm')} | {r['dtype']} | {r['n']} | "
              f"{r['plain_ms']:.3f} | "
              f"{r['protected_ms']:.3f} | {r['ratio']:.3f} | {r['pairs']} x {r['burst']} |")
    if host:
        print()
        print("| framework | type | n | host us per call, plain | host us per call, protected |")
        print("| --- | --- | ---: | ---: | ---: |")
        for r in host:
            print(f"| {r['framework']} | {r['dtype']} | {r['n']} | {r['host_us_plain']:.1f} | "
                  f"{r['host_us_protected']:.1f} |")


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
        run_lowp_checks(arg)
        check_half(arg)
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
