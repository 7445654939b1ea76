"""A BLAS loaded and unloaded at run time (dlopen, dlclose, again; a fork after each close): the
library must stay loaded while its threads and exit handlers exist (it is linked -z nodelete),
every GEMM must be right, planted faults corrected, and the exit report written once at exit
with every round's calls (before: a hang or a segmentation fault at the second load).

usage: test_dlopen.py EXE   (EXE: dlopen_app, which links no BLAS)"""
import glob
import os
import sys
import tempfile

import harness

ROUNDS = 4


def main():
    exe = os.path.abspath(sys.argv[1])
    lib = os.path.abspath(harness.lib_path())
    failures = []
    with tempfile.TemporaryDirectory(prefix="blasft-dlopen-") as work:
        report_path = os.path.join(work, "report.json")
        runs = [("plain", {}),
                ("report", {"BLASFT_REPORT": report_path}),
                ("faults", {"BLASFT_REPORT": report_path, "BLASFT_MODE": "correct",
                            "BLASFT_INJECT": "faults=1,bits=40-51,seed=3"})]
        for what, extra in runs:
            for old in glob.glob(report_path + "*"):
                os.remove(old)
            env = harness.base_env(**extra)
            # an instrumented library needs its sanitizer runtimes loaded first
            runtimes = harness.sanitizer_runtimes(lib)
            if runtimes:
                env["LD_PRELOAD"] = " ".join(runtimes)
            status, out, err = harness.run([exe, lib, str(ROUNDS)], env, cwd=work, timeout=300)
            print(f"--- {what}: status {status}\n{out}{err}")
            harness.check(status == 0 and f"{ROUNDS} rounds, 0 wrong" in out,
                          f"{what}: status {status}", failures)
            # without a GPU, CUDA never started, so a child has nothing to be warned about
            if "could not run on the GPU" in err:
                harness.check("forked from one in which CUDA had started" not in err,
                              f"{what}: a child warned of CUDA, which never started", failures)
            if "BLASFT_REPORT" not in extra:
                continue
            report = harness.checked_report(report_path, what, failures)
            harness.check(harness.call_count(report, "dgemm_", "dgemm") == ROUNDS and
                          harness.call_count(report, "cblas_zgemm") == ROUNDS,
                          f"{what}: the report does not count every round's GEMMs: "
                          f"{report.get('calls')}", failures)
            abft = report["abft"]
            harness.check(abft["protected_gemms"] == 2 * ROUNDS,
                          f"{what}: {abft['protected_gemms']} protected GEMMs, not {2 * ROUNDS}",
                          failures)
            if "BLASFT_INJECT" in extra:
                harness.check(abft["faults_injected"] >= 2 * ROUNDS and
                              abft["errors_corrected"] >= 2 * ROUNDS and
                              abft["uncorrectable"] == 0,
                              f"{what}: planted faults not all corrected: {abft}", failures)
            children = glob.glob(report_path + ".*")
            harness.check(len(children) == ROUNDS,
                          f"{what}: {len(children)} child reports, not {ROUNDS}", failures)
            for path in children:
                harness.checked_report(path, f"{what}: {path}", failures)
    harness.finish(failures, "dlopen")


if __name__ == "__main__":
    main()
