"""Runs gemm_threads (16 concurrent GEMM threads, then a fork with GEMMs on both sides) with
libblas_ft preloaded or linked, and checks the results, the child's exit status (the program
does) and that parent and child each wrote their own exit report.

usage: test_threads_fork.py preload|linked EXE"""
import glob
import os
import sys
import tempfile

import harness


def main():
    variant, exe = sys.argv[1], os.path.abspath(sys.argv[2])
    failures = []
    with tempfile.TemporaryDirectory(prefix="blasft-threads-") as work:
        report_path = os.path.join(work, "report.json")
        for mode in ("correct", "off"):
            for old in glob.glob(report_path + "*"):
                os.remove(old)
            extra = {"BLASFT_REPORT": report_path, "BLASFT_MODE": mode}
            env = harness.preload_env(**extra) if variant == "preload" else harness.base_env(**extra)
            status, out, err = harness.run([exe], env, cwd=work)
            print(out + err)
            harness.check(status == 0, f"mode {mode}: gemm_threads exited with status {status}",
                          failures)
            harness.check("child exited 0" in out, f"mode {mode}: the forked child failed", failures)
            parent = harness.load_report(report_path)
            total = sum(int(c["count"]) for c in parent["calls"].values())
            # 16 threads x 40 GEMMs before the fork and 20 after it in the parent.
            harness.check(total == 16 * 40 + 20, f"mode {mode}: parent report counts {total} "
                          f"GEMMs, expected {16 * 40 + 20}", failures)
            children = glob.glob(report_path + ".*")
            harness.check(len(children) == 1, f"mode {mode}: {len(children)} child reports",
                          failures)
            if children:
                child = harness.load_report(children[0])
                ctotal = sum(int(c["count"]) for c in child["calls"].values())
                # The child inherits the parent's 640 counts and adds its own 20.
                harness.check(ctotal == 16 * 40 + 20, f"mode {mode}: child report counts "
                              f"{ctotal} GEMMs, expected {16 * 40 + 20}", failures)
    harness.finish(failures, f"threads and fork ({variant})")


if __name__ == "__main__":
    main()
