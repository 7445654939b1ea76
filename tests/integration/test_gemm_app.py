"""Runs gemm_app (an unmodified BLAS program) one of three ways and checks its results and, where
libblas_ft is in the path, that every GEMM it made appears in the exit report.

usage: test_gemm_app.py plain|preload|linked EXE
  plain    EXE is linked with the system -lblas; runs as it is (the oracle agrees with the host BLAS)
  preload  the same EXE under LD_PRELOAD=libblas_ft.so
  linked   EXE is the same source linked with -lblas_ft"""
import os
import re
import subprocess
import sys
import tempfile

import harness


def linked_libraries(exe):
    return subprocess.run(["ldd", exe], capture_output=True, text=True).stdout


def main():
    variant, exe = sys.argv[1], os.path.abspath(sys.argv[2])
    failures = []
    libs = linked_libraries(exe)
    if variant == "linked":
        harness.check("libblas_ft" in libs, f"{exe} is not linked with libblas_ft:\n{libs}", failures)
    else:
        harness.check("libblas_ft" not in libs and re.search(r"libblas\.so", libs),
                      f"{exe} should be linked with the system libblas only:\n{libs}", failures)

    with tempfile.TemporaryDirectory(prefix="blasft-gemm-app-") as work:
        report_path = os.path.join(work, "report.json")
        if variant == "preload":
            env = harness.preload_env(BLASFT_REPORT=report_path)
        else:
            env = harness.base_env(BLASFT_REPORT=report_path)
        for seed in ("20240601", "7"):  # the fixed seed and a second stream
            status, out, err = harness.run([exe, seed], env, cwd=work)
            print(out + err)
            harness.check(status == 0, f"gemm_app {seed} exited with status {status}", failures)
            harness.check(re.search(r"GEMMs checked, 0 wrong", out),
                          "gemm_app did not report a clean run", failures)
        made = {m.group(1): int(m.group(2)) for m in re.finditer(r"^calls (\S+) (\d+)$", out,
                                                                    re.MULTILINE)}
        harness.check(len(made) == 8, f"gemm_app listed {len(made)} routines, not 8", failures)

        if variant == "plain":
            harness.check(not os.path.exists(report_path),
                          "a report appeared although libblas_ft was not loaded", failures)
        else:
            report = harness.checked_report(report_path, "report", failures)  # of the last run
            for routine, count in made.items():
                got = harness.call_count(report, routine)
                harness.check(got == count,
                              f"report counts {got} calls of {routine}, the program made {count}",
                              failures)
    harness.finish(failures, f"gemm_app {variant}")


if __name__ == "__main__":
    main()
