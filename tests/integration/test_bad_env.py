"""Malformed BLASFT_* values: the program still runs correctly, stderr names each bad variable
with its accepted values, and the exit report shows the documented default in effect.

usage: test_bad_env.py EXE   (EXE: gemm_app linked with the system BLAS; libblas_ft is preloaded)"""
import os
import re
import sys
import tempfile

import harness

# variable, bad value, what the message must mention as accepted, report key, default in effect
CASES = [
    ("BLASFT_BLOCK_SIZE", "abc", [r"\d+ to \d+"], "block_size", 128),
    ("BLASFT_BLOCK_SIZE", "0", [r"\d+ to \d+"], "block_size", 128),
    ("BLASFT_BLOCK_SIZE", "99999999999999999999999", [r"\d+ to \d+"], "block_size", 128),
    ("BLASFT_BLOCK_SIZE", "64kb", [r"\d+ to \d+"], "block_size", 128),
    ("BLASFT_BLOCK_SIZE", "64kb", [r"\d+ to \d+"], "gpu_block_size", 256),
    ("BLASFT_OMEGA", "-1", [r"from"], "omega", 3),
    ("BLASFT_OMEGA", "nan", [r"from"], "omega", 3),
    ("BLASFT_MODE", "fix", ["correct", "detect", "off"], "mode", "correct"),
    ("BLASFT_DEVICE", "cpu", ["auto", "gpu", "host"], "device", "auto"),
    ("BLASFT_LOG", "loud", ["off", "error", "warn", "info", "debug"], "log", "warn"),
    ("BLASFT_GPU_GRAPHS", "fixed", ["off", "on", "exact"], "gpu_graphs", "on"),
    ("BLASFT_GPU_BATCHED", "batch", ["fused", "each"], "gpu_batched", "fused"),
]


def main():
    exe = os.path.abspath(sys.argv[1])
    failures = []
    with tempfile.TemporaryDirectory(prefix="blasft-badenv-") as work:
        report_path = os.path.join(work, "report.json")
        for var, value, accepted, key, default in CASES:
            env = harness.preload_env(**{var: value, "BLASFT_REPORT": report_path})
            status, out, err = harness.run([exe], env, cwd=work)
            what = f"{var}={value!r}"
            harness.check(status == 0 and "0 wrong" in out,
                          f"{what}: the program failed (status {status}):\n{out}{err}", failures)
            lines = [l for l in err.splitlines() if var in l]
            harness.check(len(lines) == 1, f"{what}: {len(lines)} stderr lines name {var} "
                          f"(expected 1):\n{err}", failures)
            if lines:
                line = lines[0]
                print(f"{what}: {line}")
                harness.check(value in line, f"{what}: the message does not quote the value",
                              failures)
                for a in accepted:
                    harness.check(re.search(a, line), f"{what}: the message does not mention "
                                  f"the accepted {a!r}: {line}", failures)
            report = harness.load_report(report_path)
            harness.check(report["config"].get(key) == default,
                          f"{what}: config.{key} is {report['config'].get(key)!r}, expected the "
                          f"default {default!r}", failures)

        # Several at once: each named exactly once, the valid one among them still honoured.
        env = harness.preload_env(BLASFT_MODE="fix", BLASFT_BLOCK_SIZE="abc", BLASFT_OMEGA="5",
                                  BLASFT_REPORT=report_path)
        status, out, err = harness.run([exe], env, cwd=work)
        harness.check(status == 0, f"combined: status {status}", failures)
        for var in ("BLASFT_MODE", "BLASFT_BLOCK_SIZE"):
            n = sum(var in l for l in err.splitlines())
            harness.check(n == 1, f"combined: {var} named {n} times", failures)
        harness.check("BLASFT_OMEGA" not in err, "combined: the valid BLASFT_OMEGA was reported",
                      failures)
        report = harness.load_report(report_path)
        harness.check(report["config"].get("omega") == 5, "combined: BLASFT_OMEGA=5 not in effect",
                      failures)
        # A value beyond off/on, and a choice's other value, reported by their own names, with
        # no message.
        for var, value, key in (("BLASFT_GPU_GRAPHS", "exact", "gpu_graphs"),
                                ("BLASFT_GPU_BATCHED", "each", "gpu_batched")):
            env = harness.preload_env(**{var: value}, BLASFT_REPORT=report_path)
            status, out, err = harness.run([exe], env, cwd=work)
            harness.check(status == 0 and var not in err, f"{var}={value}: status {status}:\n{err}",
                          failures)
            report = harness.load_report(report_path)
            harness.check(report["config"].get(key) == value,
                          f"{var}={value}: config.{key} is {report['config'].get(key)!r}", failures)
        # A misspelt variable: named once as ignored, with the one it is near; the default holds.
        env = harness.preload_env(BLASFT_TRESHOLD="proj", BLASFT_REPORT=report_path)
        status, out, err = harness.run([exe], env, cwd=work)
        harness.check(status == 0 and "0 wrong" in out, f"misspelt: status {status}", failures)
        lines = [l for l in err.splitlines() if "BLASFT_TRESHOLD" in l]
        harness.check(len(lines) == 1 and "ignored" in lines[0] and "BLASFT_THRESHOLD" in lines[0],
                      "misspelt: expected one line naming BLASFT_TRESHOLD and BLASFT_THRESHOLD:\n"
                      + err, failures)
        if lines:
            print(f"misspelt: {lines[0]}")
        report = harness.load_report(report_path)
        harness.check(report["config"].get("threshold") == "pea",
                      f"misspelt: config.threshold is {report['config'].get('threshold')!r}",
                      failures)
    harness.finish(failures, "bad environment values")


if __name__ == "__main__":
    main()
