#!/usr/bin/env python3
"""The GPU work of one protected product, kernel by kernel (torch.profiler, which traces every
kernel of the process through CUPTI, the library's and cuBLAS's included).

  LD_PRELOAD=libblas_ft.so kernel_timeline.py [DTYPE] [N ...]

DTYPE: float16 (default), bfloat16, float32 or float64; N: square sizes (default 1024 2048
4096). Per size: torch.mm of fresh N x N operands, a few warm-up products, then PROFILE_CALLS
(default 3) profiled ones, each after a synchronisation, so that each call's kernels start on an
idle GPU. For the last profiled call it prints each kernel, copy and memset: its start after the
call's first one, its duration, its stream and its name; then the call's GPU span (first start to
last end), the sum of the durations per stream, and the host time of the torch.mm. The same with
the interposer bypassed (blasft_cublas_bypass) gives plain cuBLAS's. One JSON line per size and
mode at the end."""
import ctypes
import json
import os
import sys
import tempfile


def call_events(trace):
    """The GPU events of the last call: those from its host range's start on (the calls are
    separated by synchronisations), sorted by start."""
    ev = [e for e in trace["traceEvents"]
          if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    ev.sort(key=lambda e: e["ts"])
    marks = sorted(e["ts"] for e in trace["traceEvents"]
                   if e.get("ph") == "X" and e.get("name") == "call_mark")
    last = marks[-1] if marks else 0
    return [e for e in ev if e["ts"] >= last]


def main():
    import torch
    lib = ctypes.CDLL(None)
    try:
        bypass = lib.blasft_cublas_bypass
        bypass.argtypes = [ctypes.c_int]
    except AttributeError:
        bypass = None
    args = sys.argv[1:]
    dtype = getattr(torch, args.pop(0)) if args and not args[0].isdigit() else torch.float16
    sizes = [int(x) for x in args] or [1024, 2048, 4096]
    calls = int(os.environ.get("PROFILE_CALLS", "3"))
    torch.backends.cuda.matmul.allow_tf32 = False
    lines = []
    for n in sizes:
        a = torch.rand(n, n, device="cuda", dtype=dtype) * 2 - 1
        b = torch.rand(n, n, device="cuda", dtype=dtype) * 2 - 1
        for mode in ("plain", "protected") if bypass else ("protected",):
            if bypass:
                bypass(mode == "plain")
            for _ in range(3):
                torch.mm(a, b)
            torch.cuda.synchronize()
            with torch.profiler.profile(
                    activities=[torch.profiler.ProfilerActivity.CPU,
                                torch.profiler.ProfilerActivity.CUDA]) as prof:
                for _ in range(calls):
                    torch.cuda.synchronize()
                    with torch.profiler.record_function("call_mark"):
                        torch.mm(a, b)
                    torch.cuda.synchronize()
            with tempfile.NamedTemporaryFile(suffix=".json") as f:
                prof.export_chrome_trace(f.name)
                trace = json.load(open(f.name))
            ev = call_events(trace)
            marks = [e for e in trace["traceEvents"]
                     if e.get("ph") == "X" and e.get("name") == "call_mark"]
            host_us = max(marks, key=lambda e: e["ts"])["dur"] if marks else None
            if not ev:
                print(f"{mode} n={n}: no GPU events traced")
                continue
            t0 = ev[0]["ts"]
            span = max(e["ts"] + e["dur"] for e in ev) - t0
            per_stream = {}
            print(f"\n{dtype} n={n} {mode}: {len(ev)} GPU events, span {span:.1f} us, "
                  f"host {host_us} us")
            for e in ev:
                s = e.get("args", {}).get("stream", "?")
                per_stream[s] = per_stream.get(s, 0.0) + e["dur"]
                print(f"  {e['ts'] - t0:8.1f} {e['dur']:7.1f}  s{s:<4} {e['name'][:90]}")
            print("  busy per stream:", {k: round(v, 1) for k, v in per_stream.items()})
            lines.append({"dtype": str(dtype).replace("torch.", ""), "n": n, "mode": mode,
                          "events": len(ev), "span_us": round(span, 1), "host_us": host_us,
                          "busy_us": {str(k): round(v, 1) for k, v in per_stream.items()},
                          "device": torch.cuda.get_device_name()})
        if bypass:
            bypass(0)
    for line in lines:
        print(json.dumps(line))


if __name__ == "__main__":
    main()
