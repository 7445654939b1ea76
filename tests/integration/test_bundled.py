"""GEMMs under the names of a privately bundled BLAS (numpy's and scipy's wheels carry OpenBLAS
as scipy_cblas_dgemm64_ and the like, ILP64 OpenBLAS uses the suffix 64_), called from an
extension module that the program loads with RTLD_LOCAL. Without libblas_ft every call reaches
the bundled library; under LD_PRELOAD every valid one must be taken, right and protected
(planted faults corrected), while invalid calls and one whose leading dimension exceeds
2^31 - 1 reach the bundled library unchanged (before: no call was taken at all). With
BLASFT_HOST_BLAS=none the protected products are computed by the bundled library's own GEMM, as on
a machine that has no system BLAS.

The module linked against libblas_ft instead of the bundled library (a program built for those
names): every call computed and protected there, and under BLASFT_MODE=off computed unprotected
(there is no other routine to pass it to); an invalid call reported through xerbla as the
reference BLAS reports it.

usage: test_bundled.py APP USER_LIBRARY USER_LIBRARY_LINKED_TO_LIBBLAS_FT"""
import os
import re
import sys
import tempfile

import harness

NAMES = 24


def summary(out):
    m = re.search(r"(\d+) names, (\d+) GEMMs with elements, (\d+) wrong; valid calls that reached "
                  r"the bundled BLAS: (\d+) of \d+; invalid calls reported by it: (\d+) (\d+); "
                  r"the call with lda = 2\^31 \+ 5 reached it: (\d+)", out)
    return [int(x) for x in m.groups()] if m else None


def main():
    app, user = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    failures = []
    with tempfile.TemporaryDirectory(prefix="blasft-bundled-") as work:
        report_path = os.path.join(work, "report.json")
        runs = [("without libblas_ft", None),
                ("preloaded, BLASFT_MODE=off", {"BLASFT_MODE": "off"}),
                ("preloaded", {"BLASFT_REPORT": report_path}),
                ("preloaded, BLASFT_HOST_BLAS=none", {"BLASFT_REPORT": report_path,
                                                      "BLASFT_HOST_BLAS": "none"}),
                ("preloaded, planted faults", {"BLASFT_REPORT": report_path,
                                               "BLASFT_MODE": "correct",
                                               "BLASFT_INJECT": "faults=1,bits=20-30,seed=5"})]
        for what, extra in runs:
            if os.path.exists(report_path):
                os.remove(report_path)
            env = harness.base_env() if extra is None else harness.preload_env(**extra)
            status, out, err = harness.run([app, user], env, cwd=work, timeout=300)
            print(f"--- {what}: status {status}\n{out}{err}")
            s = summary(out)
            if not harness.check(status == 0 and s is not None, f"{what}: status {status}",
                                 failures):
                continue
            names, nontrivial, wrong, reached, inv_m, inv_lda, big = s
            harness.check(names == NAMES and wrong == 0 and (inv_m, inv_lda) == (3, 8) and
                          big == 1, f"{what}: {s}", failures)
            if extra is None or extra.get("BLASFT_MODE") == "off":
                harness.check(reached == NAMES, f"{what}: {reached} of {NAMES} calls reached "
                              "the bundled BLAS", failures)
                continue
            if extra.get("BLASFT_HOST_BLAS") == "none":
                # the products are the bundled library's own GEMM (scipy_?gemm_64_)
                harness.check(reached >= nontrivial, f"{what}: the bundled GEMM computed "
                              f"{reached} products, fewer than the {nontrivial} GEMMs", failures)
            else:
                harness.check(reached == 0, f"{what}: {reached} valid calls were not taken",
                              failures)
            harness.check("above 2^31 - 1 does not fit the host BLAS" in err,
                          f"{what}: no warning for the ILP64 call passed on", failures)
            report = harness.checked_report(report_path, what, failures)
            calls = report["calls"]
            missing = [n for n in ("scipy_cblas_dgemm64_", "scipy_zgemm_64_", "dgemm_64_",
                                   "cblas_cgemm64_", "scipy_sgemm_", "scipy_cblas_zgemm")
                       if harness.call_count(report, n) < 1]
            harness.check(not missing, f"{what}: the report lacks {missing}: {sorted(calls)}",
                          failures)
            abft = report["abft"]
            # empty products (m or n = 0) count as unprotected, as they do by the usual names
            unprotected = 1 + names - nontrivial
            harness.check(abft["protected_gemms"] == nontrivial and
                          abft["unprotected_gemms"] == unprotected,
                          f"{what}: {abft['protected_gemms']} protected ({nontrivial} expected), "
                          f"{abft['unprotected_gemms']} unprotected ({unprotected} expected)",
                          failures)
            if "BLASFT_INJECT" in extra:
                harness.check(abft["faults_injected"] >= nontrivial // 2 and
                              abft["errors_corrected"] + abft["blocks_recomputed"] >= 1 and
                              abft["uncorrectable"] == 0,
                              f"{what}: planted faults not all corrected: {abft}", failures)
        user_ft = os.path.abspath(sys.argv[3])
        for what, extra in [("linked against libblas_ft", {"BLASFT_REPORT": report_path}),
                            ("linked against libblas_ft, BLASFT_MODE=off",
                             {"BLASFT_REPORT": report_path, "BLASFT_MODE": "off"})]:
            if os.path.exists(report_path):
                os.remove(report_path)
            env = harness.base_env(**extra)
            runtimes = harness.sanitizer_runtimes(harness.lib_path())
            if runtimes:
                env["LD_PRELOAD"] = " ".join(runtimes)
            status, out, err = harness.run([app, user_ft], env, cwd=work, timeout=300)
            print(f"--- {what}: status {status}\n{out}{err}")
            m = re.search(r"(\d+) names, (\d+) GEMMs with elements, (\d+) wrong; linked", out)
            if not harness.check(status == 0 and m is not None, f"{what}: status {status}",
                                 failures):
                continue
            names, nontrivial, wrong = (int(x) for x in m.groups())
            harness.check(names == NAMES and wrong == 0, f"{what}: {wrong} wrong", failures)
            report = harness.load_report(report_path)
            abft = report["abft"]
            want = 0 if extra.get("BLASFT_MODE") == "off" else nontrivial
            harness.check(abft["protected_gemms"] == want,
                          f"{what}: {abft['protected_gemms']} protected, {want} expected", failures)
            harness.check(harness.call_count(report, "scipy_cblas_dgemm64_") == 1,
                          f"{what}: the report lacks the calls: {sorted(report['calls'])}",
                          failures)
        # invalid calls with no other routine of the name: reported as the reference reports them
        # (XERBLA's message and STOP, exit 0; CBLAS's message in CBLAS's numbering, exit -1),
        # where libblas_ft used to abort
        for name, case, status_want, text in [
                ("scipy_dgemm_64_", "m", 0,
                 " ** On entry to DGEMM parameter number  3 had an illegal value"),
                ("scipy_sgemm_", "lda", 0,
                 " ** On entry to SGEMM parameter number  8 had an illegal value"),
                ("scipy_cblas_dgemm64_", "lda", 255,
                 "Parameter 9 to routine scipy_cblas_dgemm64_ was incorrect"),
                ("scipy_cblas_sgemm", "lda-row", 255,
                 "Parameter 9 to routine scipy_cblas_sgemm was incorrect"),
                ("cblas_dgemm64_", "m", 255, "Parameter 4 to routine cblas_dgemm64_ was incorrect")]:
            env = harness.base_env()
            runtimes = harness.sanitizer_runtimes(harness.lib_path())
            if runtimes:
                env["LD_PRELOAD"] = " ".join(runtimes)
            status, out, err = harness.run([app, user_ft, name, case], env, cwd=work, timeout=60)
            print(f"--- linked against libblas_ft, invalid {name} ({case}): status {status}\n"
                  f"{out}{err}")
            harness.check(status == status_want and text in out + err,
                          f"invalid {name} ({case}): status {status}, expected {status_want} and "
                          f"'{text}'", failures)
    harness.finish(failures, "bundled BLAS names")


if __name__ == "__main__":
    main()
