"""numpy under LD_PRELOAD: numpy loads its BLAS privately, so dlsym(RTLD_NEXT) would find nothing
there. Its matmul must still go through libblas_ft (protected, counted in the report) and give
the same result as numpy's own BLAS-free einsum. Skips where Debian's numpy is not installed."""
import os
import subprocess
import sys
import tempfile

import harness

PYTHON = "/usr/bin/python3"

PROGRAM = r"""
import numpy as np
rng = np.random.default_rng(20261122)
worst = 0.0
for dtype, tol in ((np.float64, 1e-12), (np.float32, 1e-4), (np.complex128, 1e-12)):
    for m, k, n in ((300, 200, 100), (1, 97, 1), (64, 1, 65), (131, 67, 29)):
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        if np.iscomplexobj(a):
            a = a + 1j * rng.standard_normal((m, k))
            b = b + 1j * rng.standard_normal((k, n))
        ref = np.einsum("ik,kj->ij", a, b)
        for got in (a @ b, (b.T @ a.T).T):
            err = float(np.max(np.abs(got - ref)) / max(1.0, float(np.max(np.abs(ref)))))
            worst = max(worst, err / tol)
print("worst error/tolerance", worst)
raise SystemExit(0 if worst <= 1.0 else 1)
"""


def main():
    have = subprocess.run([PYTHON, "-c", "import numpy"], capture_output=True)
    if have.returncode != 0:
        print("Debian's numpy (python3-numpy) is not installed: skipped")
        sys.exit(harness.SKIP)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        report_path = os.path.join(tmp, "report.json")
        env = harness.preload_env(BLASFT_MODE="correct", BLASFT_REPORT=report_path)
        rc, out, err = harness.run([PYTHON, "-c", PROGRAM], env)
        print(out, err, end="")
        harness.check(rc == 0, f"numpy matmul under LD_PRELOAD gave wrong results (rc {rc})",
                      failures)
        report = harness.load_report(report_path)
        gemms = sum(harness.call_count(report, name)
                    for name in ("cblas_dgemm", "cblas_sgemm", "cblas_zgemm", "dgemm_", "sgemm_",
                                 "zgemm_"))
        harness.check(gemms > 0, f"numpy's GEMMs did not reach libblas_ft: calls {report['calls']}",
                      failures)
        harness.check(report["abft"]["protected_gemms"] > 0,
                      f"numpy's GEMMs were not protected: {report['abft']}", failures)
    harness.finish(failures, "numpy")


if __name__ == "__main__":
    main()
