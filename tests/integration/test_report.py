"""The exit report: written at exit, valid JSON (checked with python3 -m json.tool as well as
json), with version, config, calls and abft{protected_gemms, errors_detected, errors_corrected,
blocks_recomputed, uncorrectable}; also for a process that never calls BLAS, for events whose
syndrome is infinite or NaN (written as strings), and a report path that cannot be opened or
written (a missing directory, a full disk) does not break the program and is named with the
reason; a wrapper process that calls no BLAS (timeout) leaves the report of the program it ran;
and BLASFT_LOG=debug writes one line per GEMM.

usage: test_report.py EXE   (EXE: gemm_app linked with the system BLAS; libblas_ft is preloaded)"""
import os
import subprocess
import sys
import tempfile

import harness


def check_file(path, what, failures):
    tool = subprocess.run([sys.executable, "-m", "json.tool", path], capture_output=True, text=True)
    harness.check(tool.returncode == 0, f"{what}: json.tool rejects the report: {tool.stderr}",
                  failures)
    return harness.checked_report(path, what, failures)


def main():
    exe = os.path.abspath(sys.argv[1])
    failures = []
    with tempfile.TemporaryDirectory(prefix="blasft-report-") as work:
        path = os.path.join(work, "report.json")
        status, out, err = harness.run([exe], harness.preload_env(BLASFT_REPORT=path), cwd=work)
        harness.check(status == 0, f"gemm_app: status {status}\n{out}{err}", failures)
        report = check_file(path, "gemm_app", failures)
        print(open(path).read())
        harness.check(report["config"].get("report") == path, "config.report is not the path",
                      failures)
        for name, entry in report["calls"].items():
            harness.check(entry["count"] > 0 and entry["where"] in ("host", "gpu", "host+gpu"),
                          f"calls.{name}: {entry}", failures)
            harness.check(entry["seconds"] >= 0, f"calls.{name}: negative seconds", failures)

        # BLASFT_LOG=debug: one line per GEMM, as many "protected" as the report counts
        debug = os.path.join(work, "debug.json")
        status, out, err = harness.run([exe], harness.preload_env(
            BLASFT_REPORT=debug, BLASFT_LOG="debug", BLASFT_DEVICE="host"), cwd=work)
        lines = [ln for ln in err.splitlines() if ln.startswith("libblas_ft: debug: ") and
                 "gemm" in ln and ln.endswith(": host, protected")]
        counted = harness.load_report(debug)["abft"]["protected_gemms"]
        harness.check(status == 0 and counted > 0 and len(lines) == counted,
                      f"BLASFT_LOG=debug: {len(lines)} GEMM lines, {counted} protected GEMMs "
                      f"(status {status})\n{err[-400:]}", failures)

        # exponent flips of bit 62 make infinite and NaN syndromes: still valid JSON (as strings)
        flips = os.path.join(work, "flips.json")
        status, out, err = harness.run([exe], harness.preload_env(
            BLASFT_REPORT=flips, BLASFT_MODE="correct", BLASFT_INJECT="faults=1,bits=62-62,seed=1"),
            cwd=work)
        harness.check(status == 0 and "0 wrong" in out, f"bit 62 flips: status {status}\n{out}{err}",
                      failures)
        report = check_file(flips, "bit 62 flips", failures)
        ab = report["abft"]
        # (bit 62 clamps to the sign bit in single precision: a flipped zero is no error)
        harness.check(ab["faults_injected"] > 0 and ab["errors_detected"] > 0 and
                      ab["errors_corrected"] == ab["errors_detected"] and ab["uncorrectable"] == 0,
                      f"bit 62 flips through BLASFT_INJECT: {ab}", failures)
        values = [e[k] for e in report["events"] for k in ("syndrome", "threshold")]
        harness.check(report["events"] and all(
            isinstance(v, (int, float)) or v in ("inf", "-inf", "nan") for v in values),
            f"bit 62 flips: events' syndromes and thresholds {values[:8]}", failures)
        harness.check(any(isinstance(v, str) for v in values),
                      "bit 62 flips: no infinite or NaN syndrome among the events (the case this "
                      "run exists for)", failures)
        # host GEMMs are no batch: every event's matrix is -1
        matrices = {e.get("matrix") for e in report["events"]}
        harness.check(matrices == {-1}, f"bit 62 flips: events' matrices {matrices}", failures)

        quiet = os.path.join(work, "true.json")
        status, _, err = harness.run(["/bin/true"], harness.preload_env(BLASFT_REPORT=quiet))
        harness.check(status == 0 and not err, f"/bin/true: status {status}, stderr {err!r}",
                      failures)
        report = check_file(quiet, "/bin/true", failures)
        harness.check(report["calls"] == {}, f"/bin/true: calls {report['calls']}", failures)
        harness.check(report["abft"]["protected_gemms"] == 0, "/bin/true: protected GEMMs",
                      failures)

        # a wrapper (here timeout, as mpirun) inherits LD_PRELOAD and BLASFT_REPORT, calls no
        # BLAS and exits after the program: the program's report stays
        wrapped = os.path.join(work, "wrapped.json")
        status, out, err = harness.run(["timeout", "300", exe],
                                       harness.preload_env(BLASFT_REPORT=wrapped), cwd=work)
        report = check_file(wrapped, "under timeout", failures)
        harness.check(status == 0 and report["abft"]["protected_gemms"] > 0,
                      f"under timeout: its empty report replaced the program's "
                      f"(status {status}, {report['abft']})", failures)

        bad = os.path.join(work, "no-such-dir", "report.json")
        status, out, err = harness.run([exe], harness.preload_env(BLASFT_REPORT=bad), cwd=work)
        harness.check(status == 0 and "0 wrong" in out,
                      f"unwritable report: the program failed (status {status})", failures)
        harness.check("BLASFT_REPORT" in err and "No such file or directory" in err,
                      f"unwritable report: no message naming BLASFT_REPORT and the reason:\n{err}",
                      failures)
        # a full disk: the write fails at the end (the file opens)
        if os.path.exists("/dev/full"):
            status, out, err = harness.run([exe], harness.preload_env(BLASFT_REPORT="/dev/full"),
                                           cwd=work)
            harness.check(status == 0 and "0 wrong" in out,
                          f"full disk: the program failed (status {status})", failures)
            harness.check("BLASFT_REPORT" in err and "failed" in err,
                          f"full disk: no message that writing BLASFT_REPORT failed:\n{err}",
                          failures)
    harness.finish(failures, "exit report")


if __name__ == "__main__":
    main()
