#!/usr/bin/env python3
"""A PyTorch training step under LD_PRELOAD=libblas_ft.so: time per step unprotected (the
interposer bypassed) and protected, in one process; run it once with BLASFT_GPU_GRAPHS=on and
once with =off to see what the engine's own graphs give a real loop.

Usage: python3 torch_train_bench.py [WIDTH] [BATCH] [DTYPE]   (default 1024 256 float32)

A multilayer perceptron of three linear layers (WIDTH wide, 10 classes), cross-entropy, SGD;
the same initial weights and data for both runs. Prints one JSON line per setting: ms per step
(median of 5 timings of 20 steps, CUDA events), the final loss, the protected and unprotected
GEMMs the library counted, and at the end the largest relative difference between the
protected and unprotected runs' weights after the same steps (FP32 is computed in double when
protected, so they differ by rounding only).
"""
import ctypes
import json
import statistics
import sys

from bench_cublas import Stats, preloaded


def main():
    lib, graphs = preloaded()
    import torch
    width = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 256
    dtype = getattr(torch, sys.argv[3] if len(sys.argv) > 3 else "float32")

    def stats():
        s = Stats()
        torch.cuda.synchronize()
        lib.blasft_get_stats(ctypes.byref(s))
        return s

    def make():
        torch.manual_seed(3)
        model = torch.nn.Sequential(
            torch.nn.Linear(width, width), torch.nn.ReLU(),
            torch.nn.Linear(width, width), torch.nn.ReLU(),
            torch.nn.Linear(width, 10)).to(device="cuda", dtype=dtype)
        return model, torch.optim.SGD(model.parameters(), lr=1e-3)

    g = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randn((batch, width), device="cuda", dtype=dtype, generator=g)
    y = torch.randint(0, 10, (batch,), device="cuda", generator=g)
    loss_fn = torch.nn.CrossEntropyLoss()
    results = {}
    for protected in (False, True):
        lib.blasft_cublas_bypass(0 if protected else 1)
        model, opt = make()

        def step():
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            return loss

        for _ in range(5):
            step()
        s0 = stats()
        times = []
        for _ in range(5):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(20):
                loss = step()
            e1.record()
            e1.synchronize()
            times.append(e0.elapsed_time(e1) / 20)
        s1 = stats()
        results[protected] = [p.detach().clone() for p in model.parameters()]
        print(json.dumps({"graphs": graphs, "protected": protected, "width": width,
                          "batch": batch, "dtype": str(dtype),
                          "ms_per_step": round(statistics.median(times), 4),
                          "all_ms": [round(t, 4) for t in times], "loss": loss.item(),
                          "protected_gemms": s1.protected_gemms - s0.protected_gemms,
                          "unprotected_gemms": s1.unprotected_gemms - s0.unprotected_gemms,
                          "errors_detected": s1.errors_detected - s0.errors_detected}),
              flush=True)
    lib.blasft_cublas_bypass(0)
    worst = max(((a - b).abs().max() / b.abs().max()).item()
                for a, b in zip(results[True], results[False]))
    ok = worst < (1e-4 if dtype == torch.float32 else 1e-12)
    print(json.dumps({"graphs": graphs, "weights_relative_difference": worst, "ok": ok}),
          flush=True)
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
