"""BLASFT_HOST_BLAS: the netlib reference BLAS works as the host; a nonsense value, and
libblas_ft itself, give one clear message and fall back to OpenBLAS.

usage: test_host_blas.py EXE   (EXE: gemm_app linked with the system BLAS; libblas_ft is preloaded)"""
import os
import sys
import tempfile

import harness

NETLIB = "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3"


def run_with(exe, host, work, failures, what):
    report_path = os.path.join(work, "report.json")
    if os.path.exists(report_path):
        os.remove(report_path)
    env = harness.preload_env(BLASFT_HOST_BLAS=host, BLASFT_REPORT=report_path)
    status, out, err = harness.run([exe], env, cwd=work)
    print(f"--- {what}\n{out}{err}")
    harness.check(status == 0 and "0 wrong" in out, f"{what}: the program failed (status {status})",
                  failures)
    report = harness.load_report(report_path)
    harness.check(harness.call_count(report, "cblas_dgemm") > 0,
                  f"{what}: no cblas_dgemm calls in the report", failures)
    return err, report


def check_fallback(exe, host, work, failures, what):
    err, report = run_with(exe, host, work, failures, what)
    lines = [l for l in err.splitlines() if "BLASFT_HOST_BLAS" in l]
    harness.check(len(lines) == 1, f"{what}: {len(lines)} messages name BLASFT_HOST_BLAS "
                  f"(expected one):\n{err}", failures)
    harness.check(len(err.splitlines()) == len(lines), f"{what}: more on stderr than the one "
                  f"message:\n{err}", failures)
    used = report["config"].get("host_blas", "")
    harness.check("openblas" in used, f"{what}: fell back to {used!r}, not OpenBLAS", failures)


def main():
    exe = os.path.abspath(sys.argv[1])
    failures = []
    with tempfile.TemporaryDirectory(prefix="blasft-hostblas-") as work:
        if os.path.exists(NETLIB):
            err, report = run_with(exe, NETLIB, work, failures, "netlib")
            harness.check(report["config"].get("host_blas") == NETLIB,
                          f"netlib: the report names host {report['config'].get('host_blas')!r}",
                          failures)
            harness.check("libblas_ft" not in err, f"netlib: unexpected messages:\n{err}", failures)
        else:
            print(f"note: {NETLIB} missing (libblas3), netlib case not run")
        check_fallback(exe, "/nonexistent/libnothing.so.1", work, failures, "nonsense path")
        check_fallback(exe, "libm.so.6", work, failures, "a library without BLAS")
        check_fallback(exe, os.path.abspath(harness.lib_path()), work, failures,
                       "libblas_ft itself")
    harness.finish(failures, "BLASFT_HOST_BLAS")


if __name__ == "__main__":
    main()
