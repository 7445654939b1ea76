"""Shared helpers of the integration tests: how to preload libblas_ft, run a program, read the
exit report. Every test script exits 0 (pass), 1 (fail) or 77 (skip), as meson expects."""
import json
import os
import re
import subprocess
import sys

SKIP = 77
REPORT_ABFT_KEYS = ("protected_gemms", "errors_detected", "errors_corrected",
                    "blocks_recomputed", "uncorrectable")


def lib_path():
    """The built libblas_ft.so: meson's test_env sets LIBBLAS_FT_SO."""
    path = os.environ.get("LIBBLAS_FT_SO")
    if not path or not os.path.exists(path):
        sys.exit(f"LIBBLAS_FT_SO does not name the built library: {path!r}")
    return path


def sanitizer_runtimes(lib):
    """The ASan/UBSan runtimes an instrumented libblas_ft needs ahead of it in LD_PRELOAD.

    A sanitized shared library cannot be preloaded into an uninstrumented program on its own:
    the ASan runtime must come first in the initial library list. Asking ldd keeps the normal
    build free of any special case."""
    out = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout
    found = []
    for name in ("libasan", "libubsan"):
        m = re.search(r"\s(" + name + r"\.so\S*) => (\S+)", out)
        if m:
            found.append(m.group(2))
    return found


def preload_env(lib=None, **extra):
    """Environment for running a program with libblas_ft preloaded, plus BLASFT_* settings."""
    lib = lib or lib_path()
    env = base_env(**extra)
    env["LD_PRELOAD"] = " ".join(sanitizer_runtimes(lib) + [os.path.abspath(lib)])
    return env


def base_env(**extra):
    """The caller's environment without any BLASFT_* left over, plus extra settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLASFT_")}
    env.pop("LD_PRELOAD", None)
    # Foreign programs (the Fortran testers, the system BLAS) are not ours to leak-check, and
    # OpenBLAS threads on 2 CI cores only slow the many small GEMMs down.
    env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    env.setdefault("OPENBLAS_NUM_THREADS", "2")
    for k, v in extra.items():
        env[k] = str(v)
    return env


def run(cmd, env, cwd=None, stdin_path=None, timeout=600):
    """Runs cmd; returns (exit status, stdout, stderr)."""
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, stdin=stdin, capture_output=True,
                           timeout=timeout)
    finally:
        if stdin_path:
            stdin.close()
    return (p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"))


def _no_constant(name):
    raise json.JSONDecodeError(f"{name} is not JSON", name, 0)


def load_report(path):
    """The exit report as a dict; fails the test with a clear message if it is missing or bad."""
    try:
        with open(path, encoding="utf-8") as f:
            # strict JSON: Python would otherwise accept NaN and Infinity, which JSON has not
            return json.load(f, parse_constant=_no_constant)
    except FileNotFoundError:
        fail(f"no exit report was written to {path}")
    except json.JSONDecodeError as e:
        fail(f"the exit report {path} is not valid JSON: {e}")
    return None


def report_problems(report):
    """The ways the report misses the documented format (empty list: it is complete)."""
    problems = []
    for key in ("version", "config", "calls", "abft"):
        if key not in report:
            problems.append(f"missing key '{key}'")
    if not isinstance(report.get("version"), str) or not re.fullmatch(
            r"\d+\.\d+\.\d+", str(report.get("version"))):
        problems.append(f"version is not 'major.minor.patch': {report.get('version')!r}")
    config = report.get("config", {})
    for key in ("block_size", "gpu_block_size", "omega", "mode", "device", "host_blas", "report"):
        if key not in config:
            problems.append(f"config lacks '{key}'")
    calls = report.get("calls", {})
    if not isinstance(calls, dict):
        problems.append("calls is not an object")
    else:
        for name, entry in calls.items():
            for key in ("count", "where", "seconds"):
                if key not in entry:
                    problems.append(f"calls.{name} lacks '{key}'")
    abft = report.get("abft", {})
    for key in REPORT_ABFT_KEYS:
        if not isinstance(abft.get(key), int) or abft.get(key) < 0:
            problems.append(f"abft.{key} is not a count: {abft.get(key)!r}")
    return problems


def checked_report(path, what, failures):
    """The exit report at path, each way it misses the documented format a failure of `what`."""
    report = load_report(path)
    for p in report_problems(report):
        check(False, f"{what}: {p}", failures)
    return report


def corrected_once(abft, planted):
    """Whether the report's counters say that `planted` faults were planted and each was
    corrected once (an element or its block recomputed, none counted twice, none left)."""
    return (abft["faults_injected"] == planted and
            abft["errors_corrected"] <= planted and
            abft["errors_corrected"] + abft["blocks_recomputed"] >= planted and
            abft["uncorrectable"] == 0)


def call_count(report, *names):
    """Calls recorded for the first of names the report lists (0 if none)."""
    calls = report.get("calls", {})
    for name in names:
        if name in calls:
            return int(calls[name].get("count", 0))
    return 0


def fail(message):
    print(f"FAIL: {message}", flush=True)
    sys.exit(1)


def check(condition, message, failures):
    """Records message as a failure when condition is false; returns condition."""
    if not condition:
        failures.append(message)
        print(f"FAIL: {message}", flush=True)
    return condition


def finish(failures, what):
    if failures:
        print(f"{what}: {len(failures)} check(s) failed", flush=True)
        sys.exit(1)
    print(f"{what}: all checks passed", flush=True)
    sys.exit(0)
