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
# numpy.linalg through its bundled LAPACK, whose blocked routines may call the GEMM by its
# exported name: residuals of a solve and an inverse (an independent check of the whole routine)
n = 600
a = rng.standard_normal((n, n)) + n ** 0.5 * np.eye(n)
b = rng.standard_normal((n, 7))
x = np.linalg.solve(a, b)
inv = np.linalg.inv(a)
eps = np.finfo(np.float64).eps
r_solve = np.linalg.norm(a @ x - b) / (np.linalg.norm(a) * np.linalg.norm(x) * n * eps)
r_inv = np.linalg.norm(a @ inv - np.eye(n)) / (np.linalg.norm(a) * np.linalg.norm(inv) * n * eps)
print(f"linalg: solve residual {r_solve:.3g}, inverse residual {r_inv:.3g} (units of n eps |A| |X|)")
worst = max(worst, r_solve, r_inv)
print("worst", worst, "OK" if worst <= 1 else "WRONG")
raise SystemExit(0 if worst <= 1 else 1)
