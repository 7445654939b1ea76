"""LAPACK under LD_PRELOAD: the reference LAPACK (Debian's liblapack3) calls dgemm_ and zgemm_ by
name, so its blocked factorizations reach libblas_ft and are protected. LU (dgesv, sgesv, zgesv:
the recursive dgetrf2 makes hundreds of narrow rank-k updates), Cholesky (dposv) and QR least
squares (dgels) must solve their systems to LAPACK's own residual bound, fault-free and with a
fault planted in every GEMM; with the same faults under BLASFT_MODE=detect the residual must be
far off (so the oracle sees an uncorrected fault). The residual is computed here in Python, from
the inputs, without any BLAS. Also the README's recipe for programs linked with OpenBLAS's LAPACK
(whose LU never calls dgemm_): R's solve() with the reference LAPACK preloaded after libblas_ft.
Skips where the reference LAPACK is not installed (R's case where R is not)."""
import glob
import os
import shutil
import sys
import tempfile

import harness

PYTHON = "/usr/bin/python3"

# Runs one routine on random data with a fixed seed, prints the scaled residual
# |A x - b|_inf / (|A|_inf |x|_inf n eps) (for dgels: of the normal equations, A^T (A x - b)).
DRIVER = r"""
import ctypes, random, sys
lapack = ctypes.CDLL(sys.argv[1])
routine, n = sys.argv[2], int(sys.argv[3])
random.seed(20261127)
cplx = routine[0] == "z"
eps = {"s": 2.0 ** -24, "d": 2.0 ** -53, "z": 2.0 ** -53}[routine[0]]
if routine[0] == "s":
    el = ctypes.c_float
elif cplx:
    class el(ctypes.Structure):
        _fields_ = [("re", ctypes.c_double), ("im", ctypes.c_double)]
else:
    el = ctypes.c_double

def draw():
    return complex(random.uniform(-1, 1), random.uniform(-1, 1)) if cplx else random.uniform(-1, 1)

m = n + n // 3 if routine == "dgels" else n
A = [[draw() for _ in range(n)] for _ in range(m)]  # A[i][j]
if routine == "dposv":  # symmetric, positive diagonal over the row's sum: positive definite
    A = [[A[max(i, j)][min(i, j)] + (n if i == j else 0) for j in range(n)] for i in range(n)]
b = [draw() for _ in range(m)]

def store(vals):
    arr = (el * len(vals))()
    for q, v in enumerate(vals):
        if cplx:
            arr[q].re, arr[q].im = v.real, v.imag
        else:
            arr[q] = v
    return arr

def load(arr, count):
    return [complex(arr[q].re, arr[q].im) if cplx else arr[q] for q in range(count)]

a = store([A[i][j] for j in range(n) for i in range(m)])  # column-major
x = store(b)
I = lambda v: ctypes.byref(ctypes.c_int(v))
info = ctypes.c_int(0)
if routine in ("dgesv", "sgesv", "zgesv"):
    ipiv = (ctypes.c_int * n)()
    getattr(lapack, routine + "_")(I(n), I(1), a, I(n), ipiv, x, I(n), ctypes.byref(info))
elif routine == "dposv":
    lapack.dposv_(ctypes.c_char_p(b"L"), I(n), I(1), a, I(n), x, I(n), ctypes.byref(info),
                  ctypes.c_size_t(1))
else:
    lwork = 64 * (m + n)
    work = (el * lwork)()
    lapack.dgels_(ctypes.c_char_p(b"N"), I(m), I(n), I(1), a, I(m), x, I(m), work, I(lwork),
                  ctypes.byref(info), ctypes.c_size_t(1))
if info.value != 0:
    print("info", info.value)
    raise SystemExit(2)
xs = load(x, n)
r = [sum(A[i][j] * xs[j] for j in range(n)) - b[i] for i in range(m)]
if routine == "dgels":  # the least-squares solution makes A^T r vanish
    r = [sum(A[i][j] * r[i] for i in range(m)) for j in range(n)]
    scale = max(sum(abs(A[i][j]) for i in range(m)) for j in range(n)) * \
        max(sum(abs(v) for v in row) for row in A) * max(abs(v) for v in xs)
else:
    scale = max(sum(abs(v) for v in row) for row in A) * max(abs(v) for v in xs)
print("scaled residual", max(abs(v) for v in r) / (scale * n * eps))
"""

# LAPACK's testers pass a residual ratio under 30
BOUND = 30.0
CASES = (("dgesv", 300, "40-51"), ("sgesv", 200, "19-22"), ("zgesv", 160, "40-51"),
         ("dposv", 200, "40-51"), ("dgels", 150, "40-51"))


# R's solve() and the check of its solution; A %*% x is a GEMM of libblas_ft's too (protected)
R_SOLVE = r"""
set.seed(20261127)
n <- 300
A <- matrix(rnorm(n * n), n)
b <- rnorm(n)
x <- solve(A, b)
r <- max(abs(A %*% x - b)) / (norm(A, "I") * max(abs(x)) * n * .Machine$double.eps)
cat("scaled residual", r, "\n")
"""


def r_solve(lapack, tmp, failures):
    """R's solve() with the reference LAPACK preloaded after libblas_ft: its LU's GEMMs reach
    libblas_ft (with OpenBLAS's LAPACK, what Debian's R links, none do) and faults in them are
    corrected."""
    rscript = shutil.which("Rscript")
    if not rscript:
        print("Debian's R (r-base-core) is not installed: R's solve() skipped")
        return
    script = os.path.join(tmp, "solve.R")
    with open(script, "w") as f:
        f.write(R_SOLVE)
    report_path = os.path.join(tmp, "r_report.json")
    for inject in ("", "faults=1,bits=40-51,seed=5"):
        what = "R solve() with the reference LAPACK" + (" and faults" if inject else "")
        env = harness.preload_env(BLASFT_MODE="correct", BLASFT_DEVICE="host",
                                  BLASFT_REPORT=report_path, BLASFT_LOG="error")
        env["LD_PRELOAD"] += " " + lapack
        if inject:
            env["BLASFT_INJECT"] = inject
        rc, out, err = harness.run([rscript, "--vanilla", script], env)
        res = residual(out)
        print(f"{what}: residual {res}, rc {rc}")
        harness.check(rc == 0 and res is not None and res <= BOUND,
                      f"{what}: residual {res} over {BOUND} (rc {rc}) {err[-500:]}", failures)
        report = harness.load_report(report_path)
        abft = report["abft"]
        gemm = harness.call_count(report, "dgemm_")
        # n = 300: the blocked LU's trailing updates and the recursive panels, besides A %*% x
        harness.check(gemm > 100 and abft["protected_gemms"] == gemm,
                      f"{what}: {abft['protected_gemms']} of {gemm} GEMMs protected", failures)
        if inject:
            harness.check(harness.corrected_once(abft, gemm),
                          f"{what}: planted faults not corrected once each: {abft}", failures)


def reference_lapack():
    for path in sorted(glob.glob("/usr/lib/*/lapack/liblapack.so.3")):
        return path
    return None


def residual(out):
    for line in out.splitlines():
        if line.startswith("scaled residual "):
            try:
                return float(line.split()[-1])
            except ValueError:
                return None
    return None


def main():
    lapack = reference_lapack()
    if not lapack:
        print("the reference LAPACK (liblapack3) is not installed: skipped")
        sys.exit(harness.SKIP)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        report_path = os.path.join(tmp, "report.json")
        for routine, n, bits in CASES:
            worst_detect = 0.0
            for mode, inject in (("correct", ""), ("correct", f"faults=1,bits={bits},seed=5"),
                                 ("detect", f"faults=1,bits={bits},seed=5")):
                what = f"{routine} n={n} {mode}" + (" with faults" if inject else "")
                extra = dict(BLASFT_MODE=mode, BLASFT_DEVICE="host", BLASFT_REPORT=report_path,
                             BLASFT_LOG="error")
                if inject:
                    extra["BLASFT_INJECT"] = inject
                rc, out, err = harness.run([PYTHON, "-c", DRIVER, lapack, routine, str(n)],
                                           harness.preload_env(**extra))
                res = residual(out)
                print(f"{what}: residual {res}, rc {rc}")
                report = harness.checked_report(report_path, what, failures)
                abft = report["abft"]
                gemm = harness.call_count(report, routine[0] + "gemm_")
                if mode == "detect":
                    # uncorrected faults must show in the solution (inf/nan count as far off)
                    worst_detect = float("inf") if res is None or res != res else res
                    harness.check(abft["faults_injected"] == abft["protected_gemms"] > 0 and
                                  abft["uncorrectable"] > 0,
                                  f"{what}: faults not planted or not reported: {abft}", failures)
                    continue
                harness.check(rc == 0 and res is not None and res <= BOUND,
                              f"{what}: residual {res} over {BOUND} (rc {rc}) {err[-500:]}",
                              failures)
                # every GEMM with a product protected (dpotrf's first has k = 0: C = beta C)
                harness.check(abft["protected_gemms"] > 0 and
                              abft["protected_gemms"] + abft["unprotected_gemms"] == gemm and
                              abft["unprotected_gemms"] <= 1,
                              f"{what}: {abft['protected_gemms']} of {gemm} GEMMs protected, "
                              f"calls {sorted(report['calls'])}", failures)
                if inject:
                    # every fault corrected, none twice
                    harness.check(harness.corrected_once(abft, abft["protected_gemms"]),
                                  f"{what}: planted faults not corrected once each: {abft}",
                                  failures)
                else:
                    harness.check(abft["errors_detected"] + abft["false_alarms"] == 0,
                                  f"{what}: errors reported without faults: {abft}", failures)
            harness.check(worst_detect > 10 * BOUND,
                          f"{routine}: uncorrected faults left the residual at {worst_detect}",
                          failures)
        r_solve(lapack, tmp, failures)
    harness.finish(failures, "LAPACK")


if __name__ == "__main__":
    main()
