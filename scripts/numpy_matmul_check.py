"""numpy's matmul (S, D, C, Z; C and Fortran order) against numpy's BLAS-free einsum in long double.
Run it under LD_PRELOAD=libblas_ft.so with BLASFT_REPORT set to see which BLAS names numpy calls
(a pip wheel: scipy_cblas_?gemm64_, docs/bundled-blas.md). Prints each error relative to
k u |A||B| and exits 1 if one exceeds 1."""
import numpy as np
rng = np.random.default_rng(7)
worst = 0.0
for m, k, n, dt in [(300, 200, 100, np.float64), (257, 129, 63, np.float32),
                    (64, 96, 80, np.complex128), (100, 50, 70, np.complex64),
                    (1200, 900, 700, np.float64)]:
    a = rng.standard_normal((m, k)).astype(dt)
    b = rng.standard_normal((k, n)).astype(dt)
    if np.iscomplexobj(a):
        a = a + 1j * rng.standard_normal((m, k)).astype(dt)
        b = b + 1j * rng.standard_normal((k, n)).astype(dt)
    for x, y in [(a, b), (np.asfortranarray(a), b)]:  # C order, and A in Fortran order (a transpose)
        c = x @ y
        hi = np.clongdouble if np.iscomplexobj(a) else np.longdouble
        ref = np.einsum('ik,kj->ij', x.astype(hi), y.astype(hi))
        scale = np.einsum('ik,kj->ij', np.abs(x).astype(np.longdouble), np.abs(y).astype(np.longdouble))
        u = np.finfo(dt).eps
        q = float(np.max(np.abs(c - ref) / (k * u * scale + 1e-300)))
        worst = max(worst, q)
        print(f"{dt.__name__} {m}x{k}x{n}: error / (k u |A||B|) = {q:.3g}")
print("worst", worst, "OK" if worst <= 1 else "WRONG")
raise SystemExit(0 if worst <= 1 else 1)
