"""R under LD_PRELOAD: R's %*% reaches the BLAS's dgemm_ and zgemm_ (through the libblas.so.3 it
links), so they must come to libblas_ft, be protected, and give what R's own BLAS-free product
(options(matprod = "internal"), long double sums) gives, also with faults planted in every
GEMM. Skips where Debian's R (r-base-core) is not installed."""
import os
import shutil
import sys
import tempfile

import harness

PROGRAM = r"""
set.seed(20261127)
worst <- 0
cases <- list(c(300, 200, 100), c(1, 97, 1), c(64, 1, 65), c(131, 67, 29), c(2, 3, 2))
for (cplx in c(FALSE, TRUE)) {
  for (s in cases) {
    draw <- function(r, c) {
      x <- matrix(rnorm(r * c), r)
      if (cplx) x <- x + 1i * matrix(rnorm(r * c), r)
      x
    }
    a <- draw(s[1], s[2])
    b <- draw(s[2], s[3])
    options(matprod = "internal")
    ref <- a %*% b
    options(matprod = "blas")
    for (got in list(a %*% b, t(t(b) %*% t(a)))) {
      err <- max(Mod(got - ref)) / max(1, max(Mod(ref)))
      worst <- max(worst, err / 1e-12)
    }
  }
}
cat("worst error/tolerance", worst, "\n")
quit(status = if (worst <= 1) 0 else 1)
"""


def main():
    rscript = shutil.which("Rscript")
    if not rscript:
        print("Debian's R (r-base-core) is not installed: skipped")
        sys.exit(harness.SKIP)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "products.R")
        with open(script, "w") as f:
            f.write(PROGRAM)
        for inject in ("", "faults=1,bits=40-51,seed=11"):
            what = "with faults planted" if inject else "fault-free"
            report_path = os.path.join(tmp, "report.json")
            extra = dict(BLASFT_MODE="correct", BLASFT_DEVICE="host", BLASFT_REPORT=report_path)
            if inject:
                extra["BLASFT_INJECT"] = inject
            rc, out, err = harness.run([rscript, "--vanilla", script], harness.preload_env(**extra))
            print(out, err, end="")
            harness.check(rc == 0, f"R {what}: products differ from R's own (rc {rc})", failures)
            report = harness.checked_report(report_path, f"R {what}", failures)
            dgemm = harness.call_count(report, "dgemm_")
            zgemm = harness.call_count(report, "zgemm_")
            abft = report["abft"]
            harness.check(dgemm > 0 and zgemm > 0,
                          f"R {what}: its products did not reach libblas_ft: {report['calls']}",
                          failures)
            harness.check(abft["protected_gemms"] == dgemm + zgemm,
                          f"R {what}: {abft['protected_gemms']} of {dgemm + zgemm} GEMMs protected",
                          failures)
            if inject:
                harness.check(harness.corrected_once(abft, dgemm + zgemm),
                              f"R {what}: planted faults not corrected once each: {abft}",
                              failures)
            else:
                harness.check(abft["errors_detected"] == 0,
                              f"R {what}: errors reported without faults: {abft}", failures)
    harness.finish(failures, "R")


if __name__ == "__main__":
    main()
