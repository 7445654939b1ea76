"""torch.compile(mode="reduce-overhead") (CUDA graph trees) under LD_PRELOAD=libblas_ft.so: an
MLP's output against the eager model's, and libblas_ft's counters of protected and unprotected
GEMMs over the compiled calls (the graphs' replays included). Exits 0 when the outputs agree
(float64, so the products need no TF32 allowance), 1 otherwise; prints what it saw."""
import ctypes
import sys

import torch

from bench_cublas import Stats, blasft


def stats():
    torch.cuda.synchronize()
    s = Stats()
    lib = blasft()
    if lib is not None:
        lib.blasft_get_stats(ctypes.byref(s))
    return s


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(),
                            torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                            torch.nn.Linear(1024, 256)).cuda().double()
x = torch.randn(128, 512, device="cuda", dtype=torch.float64)
with torch.no_grad():
    ref = model(x)
    compiled = torch.compile(model, mode="reduce-overhead")
    for _ in range(3):  # warm-up, recording, first replays
        y = compiled(x)
    s0 = stats()
    for _ in range(10):
        y = compiled(x)
    s1 = stats()
err = float((y - ref).abs().max() / ref.abs().max())
prot = s1.protected_gemms - s0.protected_gemms
unprot = s1.unprotected_gemms - s0.unprotected_gemms
print(f"torch {torch.__version__}: 10 compiled calls, relative error {err:.3g}, "
      f"{prot} GEMMs protected, {unprot} unprotected")
sys.exit(0 if err < 1e-12 else 1)
