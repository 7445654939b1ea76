#!/usr/bin/python3
"""Table and plot of scripts/bench_offload.sh output (JSON lines).

    scripts/bench_offload_plot.py <bench.jsonl> <out.png>

Prints a Markdown table (median ms per contender, n, type, operands) and the ratios against
NVBLAS (its best tile size per point) and OpenBLAS, and writes a two-panel PNG: time per call
and speed-up over NVBLAS, for D and S, fresh and repeated operands.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
ok = [r for r in rows if not r.get("failed")]
t = {}
for r in ok:
    t[(r["label"], r["type"], r["n"], r["operands"])] = r["median_ms"]
labels = sorted({r["label"] for r in ok})
nv_labels = [l for l in labels if l.startswith("nvblas")]
types = [x for x in ("d", "s") if any(r["type"] == x for r in ok)]
sizes = sorted({r["n"] for r in ok})


def nvbest(ty, n, ops):
    v = [(t[(l, ty, n, ops)], l) for l in nv_labels if (l, ty, n, ops) in t]
    return min(v) if v else (None, None)


def ms(v):
    return "%.2f" % v if v < 10 else "%.1f" % v


cols = ["openblas", "blas_ft-host", "nvblas (best tile)", "blas_ft-gpu-cache-off",
        "blas_ft-gpu-cache-hash", "blas_ft-auto"]
print("| type | n | operands | " + " | ".join(cols) + " |")
print("|" + "---|" * (3 + len(cols)))
for ty in types:
    for n in sizes:
        for ops in ("fresh", "repeat"):
            cells = []
            for c in cols:
                if c.startswith("nvblas"):
                    v, l = nvbest(ty, n, ops)
                    cells.append("" if v is None else "%s (%s)" % (ms(v), l.replace("nvblas-", "")))
                else:
                    key = (c, ty, n, ops if c not in ("openblas", "blas_ft-host") else "fresh")
                    cells.append(ms(t[key]) if key in t and (ops == "fresh" or c not in ("openblas", "blas_ft-host")) else "")
            print("| %s | %d | %s | %s |" % (ty.upper(), n, ops, " | ".join(cells)))
print()
print("| type | n | operands | NVBLAS / cache off | NVBLAS / cache hash | OpenBLAS / auto | auto / OpenBLAS |")
print("|---|---|---|---|---|---|---|")
for ty in types:
    for n in sizes:
        for ops in ("fresh", "repeat"):
            nv, _ = nvbest(ty, n, ops)
            ob = t.get(("openblas", ty, n, "fresh"))
            off = t.get(("blas_ft-gpu-cache-off", ty, n, ops))
            hs = t.get(("blas_ft-gpu-cache-hash", ty, n, ops))
            au = t.get(("blas_ft-auto", ty, n, ops))
            f = lambda a, b: "%.2f" % (a / b) if a and b else ""
            print("| %s | %d | %s | %s | %s | %s | %s |" % (ty.upper(), n, ops, f(nv, off), f(nv, hs),
                                                           f(ob, au), f(au, ob)))

fig, axes = plt.subplots(2, len(types), figsize=(6 * len(types), 9), squeeze=False)
style = {"fresh": "-", "repeat": "--"}
for i, ty in enumerate(types):
    ax = axes[0][i]
    for lab, name in (("openblas", "OpenBLAS 16 cores"), ("nv", "NVBLAS (best tile)"),
                      ("blas_ft-gpu-cache-off", "libblas_ft GPU, cache off"),
                      ("blas_ft-gpu-cache-hash", "libblas_ft GPU, cache hash"),
                      ("blas_ft-auto", "libblas_ft auto")):
        for ops in ("fresh", "repeat"):
            if lab == "openblas" and ops == "repeat":
                continue
            xs, ys = [], []
            for n in sizes:
                v = nvbest(ty, n, ops)[0] if lab == "nv" else t.get((lab, ty, n, ops))
                if v:
                    xs.append(n)
                    ys.append(v)
            if xs:
                ax.plot(xs, ys, style[ops], marker="o",
                        label="%s%s" % (name, "" if lab == "openblas" else ", " + ops))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n (square)")
    ax.set_ylabel("ms per call (median)")
    ax.set_title("%sGEMM from host memory" % ty.upper())
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    ax = axes[1][i]
    for lab, name in (("blas_ft-gpu-cache-off", "cache off"), ("blas_ft-gpu-cache-hash", "cache hash")):
        for ops in ("fresh", "repeat"):
            xs, ys = [], []
            for n in sizes:
                nv = nvbest(ty, n, ops)[0]
                v = t.get((lab, ty, n, ops))
                if nv and v:
                    xs.append(n)
                    ys.append(nv / v)
            if xs:
                ax.plot(xs, ys, style[ops], marker="o", label="%s, %s" % (name, ops))
    ax.axhline(2, color="k", lw=0.8, ls=":")
    ax.axhline(4, color="k", lw=0.8, ls="-.")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n (square)")
    ax.set_ylabel("NVBLAS time / libblas_ft time")
    ax.set_title("%sGEMM: speed-up over NVBLAS (protected vs unprotected)" % ty.upper())
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
