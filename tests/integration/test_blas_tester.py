"""Runs one reference BLAS test program of Debian's libblas-test under LD_PRELOAD of libblas_ft
and checks that it passed every routine it tests, and that those calls went through libblas_ft
(the exit report lists each routine with count > 0).

usage: test_blas_tester.py TESTER MODE     e.g. xblat3d correct, xdcblat1 off"""
import glob
import os
import re
import sys
import tempfile

import harness

TESTER_DIR = "/usr/lib/x86_64-linux-gnu/blas"

# The level-1 testers read no input; these are the routines each one reports on.
LEVEL1 = {
    "s": "SDOT SAXPY SROTG SROT SCOPY SSWAP SNRM2 SASUM SSCAL ISAMAX SROTMG SROTM SDSDOT",
    "d": "DDOT DAXPY DROTG DROT DCOPY DSWAP DNRM2 DASUM DSCAL IDAMAX DROTMG DROTM DSDOT",
    "c": "CDOTC CDOTU CAXPY CCOPY CSWAP SCNRM2 SCASUM CSCAL CSSCAL ICAMAX",
    "z": "ZDOTC ZDOTU ZAXPY ZCOPY ZSWAP DZNRM2 DZASUM ZSCAL ZDSCAL IZAMAX",
}
LEVEL1_CBLAS = {  # the CBLAS level-1 testers skip ?rotm, ?rotmg and ?sdot
    t: " ".join(r for r in names.split() if not re.fullmatch(r"[SD]ROTMG?|SDSDOT|DSDOT", r))
    for t, names in LEVEL1.items()
}

# Anything of this kind in a tester's output is a failure, whatever else it says.
BAD_LINE = re.compile(r"FAIL|FATAL|SUSPECT|\*{5}|NOT CALLED|ABANDONED|ERROR(?!-EXITS)|"
                      r"Segmentation|Abort|Sanitizer|runtime error", re.IGNORECASE)


def parse_tester(name):
    """(cblas?, level, type letter) from e.g. xblat3d or xdcblat2."""
    m = re.fullmatch(r"xblat([123])([sdcz])", name)
    if m:
        return False, int(m.group(1)), m.group(2)
    m = re.fullmatch(r"x([sdcz])cblat([123])", name)
    if m:
        return True, int(m.group(2)), m.group(1)
    sys.exit(f"unknown tester {name}")


def input_file(cblas, level, t):
    if level == 1:
        return None
    return os.path.join(TESTER_DIR, f"{t}in{level}" if cblas else f"{t}blat{level}.in")


def tested_routines(cblas, level, t, in_path):
    """Routine names (as the tester prints them) the tester will exercise."""
    if level == 1:
        names = (LEVEL1_CBLAS if cblas else LEVEL1)[t].split()
        return ["CBLAS_" + n for n in names] if cblas else names
    routines = []
    with open(in_path) as f:
        for line in f:
            m = re.match(r"\s*((?:cblas_)?[A-Za-z][A-Za-z0-9]+)\s+([TF])\s+PUT", line)
            if m and m.group(2) == "T":
                routines.append(m.group(1))
    return routines


def symbol_names(printed, cblas):
    """The exported names a call of the printed routine may be recorded under."""
    low = printed.lower()
    if cblas:
        # Complex dots are cblas_?dot?_sub in CBLAS; Debian's CBLAS level-1 tester checks ?scal
        # through the Fortran routine.
        return [low, low + "_sub", low[len("cblas_"):] + "_"]
    return [low + "_", low]


# Netlib's CBLAS level-2 testers print the error-exit result of ?gerc under the name ?geru.
ERROR_EXIT_NAME = {"cblas_cgerc": "cblas_cgeru", "cblas_zgerc": "cblas_zgeru"}


def error_exits_tested(in_path):
    if not in_path:
        return False
    with open(in_path) as f:
        return any(re.match(r"\s*T\s+LOGICAL FLAG, T TO TEST ERROR EXITS", line) for line in f)


def main():
    tester, mode = sys.argv[1], sys.argv[2]
    exe = os.path.join(TESTER_DIR, tester)
    if not os.path.exists(exe):
        print(f"SKIP: {exe} is not installed (Debian package libblas-test)")
        sys.exit(harness.SKIP)
    cblas, level, t = parse_tester(tester)
    in_path = input_file(cblas, level, t)
    routines = tested_routines(cblas, level, t, in_path)
    failures = []

    with tempfile.TemporaryDirectory(prefix=f"blasft-{tester}-") as work:
        report_path = os.path.join(work, "report.json")
        env = harness.preload_env(BLASFT_MODE=mode, BLASFT_REPORT=report_path)
        # The .in files name their summary files; the temp dir keeps them out of the tree.
        status, out, err = harness.run([exe], env, cwd=work, stdin_path=in_path)
        for summary in sorted(glob.glob(os.path.join(work, "*.out"))):
            with open(summary, errors="replace") as f:
                out += f.read()
        text = out + err
        print(text)
        harness.check(status == 0, f"{tester} exited with status {status}", failures)
        for line in text.splitlines():
            harness.check(not BAD_LINE.search(line), f"{tester} printed: {line.strip()}", failures)

        if level == 1:
            passes = len(re.findall(r"-+ PASS -+", text))
            harness.check(passes == len(routines),
                          f"{passes} PASS lines for {len(routines)} routines", failures)
            for r in routines:
                harness.check(re.search(r"Test of subprogram number\s+\d+\s+" + r + r"\s", text),
                              f"{r} was not tested", failures)
        else:
            harness.check("END OF TESTS" in text, "the tester did not reach END OF TESTS", failures)
            check_exits = error_exits_tested(in_path)
            for r in routines:
                harness.check(re.search(r"^\s*" + re.escape(r) + r"\s+PASSED THE .*COMPUTATIONAL TESTS",
                                        text, re.MULTILINE | re.IGNORECASE),
                              f"{r} did not pass its computational tests", failures)
                if check_exits:
                    printed = ERROR_EXIT_NAME.get(r, r)
                    harness.check(re.search(r"^\s*" + re.escape(printed) +
                                            r"\s+PASSED THE TESTS OF ERROR-EXITS",
                                            text, re.MULTILINE | re.IGNORECASE),
                                  f"{r} did not pass its error-exit tests", failures)

        # Proof that the calls went through libblas_ft, not straight to the system BLAS.
        report = harness.checked_report(report_path, "report", failures)
        harness.check(report["config"].get("mode") == mode,
                      f"report config.mode is {report['config'].get('mode')!r}, not {mode!r}",
                      failures)
        for r in routines:
            names = symbol_names(r, cblas)
            harness.check(harness.call_count(report, *names) > 0,
                          f"the report has no calls of {' / '.join(names)}", failures)
        gemms = [r for r in routines if r.lower().endswith("gemm")]
        protected = report["abft"]["protected_gemms"]
        if mode == "off":
            harness.check(protected == 0, f"mode off, yet {protected} protected GEMMs", failures)
        elif gemms:
            harness.check(protected > 0, f"mode {mode}: no GEMM ran under ABFT "
                          f"(abft.protected_gemms = 0)", failures)
    harness.finish(failures, f"{tester} (BLASFT_MODE={mode})")


if __name__ == "__main__":
    main()
