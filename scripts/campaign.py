#!/usr/bin/python3
"""Fault-injection campaign for the host ABFT engine (issue 3, item 9).

Runs tests/campaign/campaign (built by meson) over a grid of data sets, block sizes and types,
collects its JSON lines and prints / writes:
  * false positives as x/N with the exact 95 % upper bound (Clopper-Pearson; 3/N for x = 0),
  * the distribution of q = threshold / true rounding error by powers of two (thesis Abb. 7.1),
  * detection per flipped bit position (FP32, FP64) and per significance class
    (err_abs strict, err_erw, err_prob loose), per injection site,
  * correction outcomes,
and, with --doc, docs/campaign-host.md and PNG plots under docs/ (matplotlib from Debian's
python3-matplotlib: run it with /usr/bin/python3).

  /usr/bin/python3 scripts/campaign.py --build build-campaign              # quick grid
  /usr/bin/python3 scripts/campaign.py --build build-campaign --grid docs --doc
  /usr/bin/python3 scripts/campaign.py --from results.jsonl --doc          # re-aggregate
"""
import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (series, params, n, block sizes, injections per (type, block size))
GRIDS = {
    # CI-sized: seconds
    "quick": [
        ("full", [0], 96, [32, 64], 16),
        ("orth", [65536], 96, [32, 64], 16),
        ("cancel", [6], 96, [32], 16),
    ],
    # n = 256 of the documented run's series with a third of its injections: for a second
    # configuration (e.g. -- --checksums 2 --weights linear, extended localization)
    "n256": [
        ("pos", [0, 3], 256, [32, 64, 128, 256], 64),
        ("full", [0, 3], 256, [32, 64, 128, 256], 64),
        ("orth", [2, 1024, 65536], 256, [32, 64, 128, 256], 64),
        ("heavy", [12], 256, [32, 64, 128, 256], 64),
        ("cancel", [6], 256, [32, 64, 128, 256], 64),
    ],
    # the documented run: about 3000 CPU-seconds (a few minutes with --jobs 16)
    "docs": [
        ("pos", [0, 1, 2, 3, 4, 5], 256, [32, 64, 128, 256], 192),
        ("full", [0, 1, 2, 3, 4, 5], 256, [32, 64, 128, 256], 192),
        ("orth", [2, 16, 128, 1024, 8192, 65536], 256, [32, 64, 128, 256], 192),
        ("heavy", [12], 256, [32, 64, 128, 256], 192),
        ("cancel", [6], 256, [32, 64, 128, 256], 192),
        ("pos", [0, 1, 2, 3, 4, 5], 512, [32, 64, 128, 256], 64),
        ("full", [0, 1, 2, 3, 4, 5], 512, [32, 64, 128, 256], 64),
        ("orth", [2, 16, 128, 1024, 8192, 65536], 512, [32, 64, 128, 256], 64),
        ("heavy", [12], 512, [32, 64, 128, 256], 64),
        ("cancel", [6], 512, [32, 64, 128, 256], 64),
        ("orth", [2, 16, 128, 1024, 8192, 65536], 1024, [32, 64, 128, 256], 32),
        ("pos", [0], 1024, [32, 64, 128, 256], 32),
        ("full", [0], 1024, [32, 64, 128, 256], 32),
        ("heavy", [12], 1024, [32, 64, 128, 256], 32),
        ("cancel", [6], 1024, [32, 64, 128, 256], 32),
    ],
}


def run_grid(binary, grid, seed, extra, out, jobs):
    """One campaign process per data set, `jobs` at a time, each with a single-threaded OpenBLAS
    (parallel processes use the cores better than OpenBLAS threads on small GEMMs)."""
    import concurrent.futures
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1" if jobs > 1 else os.environ.get("OPENBLAS_NUM_THREADS", ""))
    tasks = [(series, p, n, bss, inject) for series, params, n, bss, inject in GRIDS[grid] for p in params]

    def one(task):
        series, p, n, bss, inject = task
        cmd = [binary, "--series", series, "--param", str(p), "--n", str(n), "--bs",
               ",".join(map(str, bss)), "--inject", str(inject), "--types", "sd",
               "--seed", str(seed)] + extra
        t = time.time()
        res = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env)
        print(f"  {series:6s} param={p:<6g} n={n:<5d} {time.time() - t:6.1f} s"
              + ("" if res.returncode == 0 else f"  (exit {res.returncode})"), file=sys.stderr)
        return res.stdout

    t0 = time.time()
    # the largest data sets first, so that the pool ends evenly
    tasks.sort(key=lambda x: -x[2])
    with open(out, "w") as f, concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as ex:
        for text in ex.map(one, tasks):
            f.write(text)
    return time.time() - t0


def load(path):
    import gzip
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


# ---- statistics ----------------------------------------------------------------------------------

def binom_cdf(x, n, p):
    """P(X <= x) for X ~ Binomial(n, p), summed in log space."""
    if p <= 0:
        return 1.0
    if p >= 1:
        return 0.0 if x < n else 1.0
    s = 0.0
    for k in range(x + 1):
        lg = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
        s += math.exp(lg + k * math.log(p) + (n - k) * math.log1p(-p))
    return s


def upper95(x, n):
    """Exact one-sided 95 % upper confidence bound (Clopper-Pearson) of a rate x/n."""
    if n == 0:
        return 1.0
    if x == 0:
        return 1.0 - 0.05 ** (1.0 / n)  # ~ 3/n, the rule of three
    lo, hi = x / n, 1.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if binom_cdf(x, n, mid) > 0.05:
            lo = mid
        else:
            hi = mid
    return hi


def pct(a, b):
    return f"{100.0 * a / b:.1f} %" if b else "n/a"


# ---- aggregation ---------------------------------------------------------------------------------

def significant(r, cls):
    e = r["effect"]
    bound = r["err_" + cls]
    return e is None or bound is None or e > bound


def masked(r):
    """The fault left C as the fault-free run did (its effect absorbed by later rounding)."""
    return bool(r.get("unchanged"))


def restored(r):
    """The element after the engine is within omega * BS * err_prob of the exact value: a correction
    by syndrome subtraction inherits the rounding errors of the checksums of a block vector of BS
    elements (they add up linearly when all elements have one sign, as in T_pos)."""
    res = r["residual"]
    return res is not None and r["err_prob"] is not None and \
        res <= r["omega"] * r["bs"] * r["err_prob"]


def aggregate(rows):
    clean = [r for r in rows if r["kind"] == "clean" and r.get("rc") == 0]
    inj = [r for r in rows if r["kind"] == "inject" and r.get("fired") == 1]
    failed = [r for r in rows if r.get("rc", 0) != 0 or (r["kind"] == "inject" and r.get("fired") != 1)]
    return clean, inj, failed


def md_table(head, body):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in body]
    return "\n".join(out)


def fp_section(clean):
    body = []
    for t in ("S", "D"):
        cs = [r for r in clean if r["type"] == t]
        g, gx = len(cs), sum(1 for r in cs if r["flagged"] > 0)
        c, cx = sum(r["checks"] for r in cs), sum(r["flagged"] for r in cs)
        nan = sum(r["nan_in_c"] for r in cs)
        worst = max((r["worst_syndrome_over_threshold"] or 0) for r in cs) if cs else 0
        body.append([t, f"{gx}/{g}", f"{upper95(gx, g):.2e}", f"{cx}/{c}", f"{upper95(cx, c):.2e}",
                     nan, f"{worst:.3f}"])
    return md_table(["type", "GEMMs with a false positive", "95 % upper bound",
                     "checksum elements flagged", "95 % upper bound", "NaN leaked from C (beta=0)",
                     "max syndrome/threshold"], body)


def qhist(clean, t, which, key=None):
    h = defaultdict(int)
    exact = 0
    for r in clean:
        if r["type"] != t or (key and not key(r)):
            continue
        for e, c in r[which]["log2"].items():
            h[int(e)] += c
        exact += r[which]["exact"] + r[which]["below"]
    return h, exact


def q_section(clean):
    lines = []
    for t in ("S", "D"):
        cols = [("q_ref", "reference"), ("q_rec", "recomputed"), ("q_syn", "syndrome")]
        hs = {w: qhist(clean, t, w) for w, _ in cols}
        allk = sorted(set().union(*[set(h.keys()) for h, _ in hs.values()]))
        if not allk:
            continue
        body = []
        for e in range(allk[0], allk[-1] + 1):
            row = [f"2^{e} <= q < 2^{e + 1}"]
            for w, _ in cols:
                h, _ = hs[w]
                tot = sum(h.values())
                row.append(f"{h.get(e, 0)} ({pct(h.get(e, 0), tot)})" if h.get(e, 0) else "")
            body.append(row)
        mins = []
        for w, _ in cols:
            m = min((r[w]["min_q"] for r in clean if r["type"] == t and r[w]["min_q"] is not None),
                    default=None)
            mins.append(f"{m:.3g}" if m is not None else "-")
        body.append(["smallest q"] + mins)
        lines.append(f"**{'FP32' if t == 'S' else 'FP64'}** (error of the reference checksum, of the "
                     "recomputed checksum, and of their difference, the syndrome the engine compares):\n")
        lines.append(md_table(["q = threshold / true error", "reference", "recomputed", "syndrome"], body))
        lines.append("")
    return "\n".join(lines)


def bit_section(inj):
    lines = []
    for t, width in (("S", 32), ("D", 64)):
        rs = [r for r in inj if r["type"] == t]
        if not rs:
            continue
        body = []
        for b in range(width - 1, -1, -1):
            x = [r for r in rs if r["bit"] == b]
            if not x:
                continue
            det = sum(1 for r in x if r["detected"] > 0)
            sig = [r for r in x if significant(r, "abs")]
            sdet = sum(1 for r in sig if r["detected"] > 0)
            body.append([b, x[0]["field"], len(x), pct(det, len(x)), f"{sdet}/{len(sig)}"])
        lines.append(f"**{'FP32' if t == 'S' else 'FP64'}**\n")
        lines.append(md_table(["bit", "field", "injected", "detected", "detected of err_abs-significant"], body))
        lines.append("")
    return "\n".join(lines)


def class_rows(rs):
    row = []
    for cls in ("abs", "erw", "prob"):
        sig = [r for r in rs if significant(r, cls)]
        det = sum(1 for r in sig if r["detected"] > 0)
        row.append(f"{pct(det, len(sig))} ({det}/{len(sig)})")
    return row


def class_section(inj):
    body = []
    for t in ("S", "D"):
        for field in ("mantissa", "exponent", "sign"):
            for site in ("output", "inner"):
                rs = [r for r in inj if r["type"] == t and r["field"] == field and r["site"] == site]
                if rs:
                    body.append([t, field, site, len(rs)] + class_rows(rs))
    out = [md_table(["type", "bits", "site", "injected", "err_abs (strict)", "err_erw", "err_prob (loose)"], body)]
    # mantissa flips by series and block size, FP64: the thesis's setting
    body = []
    for series in sorted({r["series"] for r in inj}):
        for bs in sorted({r["bs"] for r in inj}):
            rs = [r for r in inj if r["type"] == "D" and r["field"] == "mantissa"
                  and r["series"] == series and r["bs"] == bs]
            if rs:
                body.append([series, bs, len(rs)] + class_rows(rs))
    out.append("\nFP64 mantissa flips (the thesis's fault model) by series and block size:\n")
    out.append(md_table(["series", "BS", "injected", "err_abs", "err_erw", "err_prob"], body))
    return "\n".join(out)


def outcome_section(inj):
    body = []
    for t in ("S", "D"):
        for field in ("mantissa", "exponent", "sign"):
            rs = [r for r in inj if r["type"] == t and r["field"] == field]
            if not rs:
                continue
            cnt = defaultdict(int)
            for r in rs:
                cnt[r["outcome"]] += 1
            det = [r for r in rs if r["detected"] > 0]
            ok = sum(1 for r in det if restored(r))
            body.append([t, field, len(rs), cnt["corrected"], cnt["line_recomputed"], cnt["recomputed"],
                         cnt["detected_only"], cnt["missed"], f"{ok}/{len(det)}"])
    return md_table(["type", "bits", "injected", "corrected", "line recomputed", "block recomputed",
                     "detected only", "missed", "detected and restored"], body)


THESIS_SERIES = ("pos", "full", "orth")


def series_section(inj):
    """Where the misses are: per type and series (the thesis's pos/full/orth, then our heavy-tailed
    and cancelling data), sign/exponent flips detected (masked ones, which left C unchanged, left
    out) and err_abs-significant mantissa flips detected."""
    body = []
    for t in ("S", "D"):
        present = sorted({r["series"] for r in inj if r["type"] == t},
                         key=lambda x: (x not in THESIS_SERIES, x))
        groups = [(x, (x,)) for x in present]
        groups += [("thesis series (pos, full, orth)", THESIS_SERIES),
                   ("ours (heavy, cancel)", tuple(x for x in present if x not in THESIS_SERIES))]
        for name, members in groups:
            rs = [r for r in inj if r["type"] == t and r["series"] in members]
            if not rs:
                continue
            se = [r for r in rs if r["field"] != "mantissa" and not (r["detected"] == 0 and masked(r))]
            sed = sum(1 for r in se if r["detected"] > 0)
            m = [r for r in rs if r["field"] == "mantissa" and significant(r, "abs")]
            md = sum(1 for r in m if r["detected"] > 0)
            body.append([t, name, f"{pct(sed, len(se))} ({sed}/{len(se)})", len(se) - sed,
                         f"{pct(md, len(m))} ({md}/{len(m)})"])
    return md_table(["type", "series", "sign/exponent flips detected", "sign/exponent missed",
                     "err_abs-significant mantissa flips detected"], body)


def se_missed_section(inj):
    """Each sign/exponent miss against the thresholds it had to cross: the syndromes of the faulty
    element's unweighted column and row checksums were both under their thresholds (ratio < 1),
    and the threshold in units of err_prob shows why (a checksum over BS elements carries their
    rounding, omega sqrt(BS) sigma of the block's largest terms)."""
    miss = [r for r in inj if r["field"] != "mantissa" and r["detected"] == 0 and not masked(r)]
    nmasked = sum(1 for r in inj if r["field"] != "mantissa" and r["detected"] == 0 and masked(r))
    note = (f"{nmasked} undetected sign/exponent flips left the result unchanged (masked: absorbed by "
            "the later rounding) and are not counted as missed.\n\n") if nmasked else ""
    if not miss:
        return note + "No sign or exponent flip that changed the result was missed.\n"
    has = [r for r in miss if r.get("thr_col") and r.get("thr_row")]
    body = []
    for t in ("S", "D"):
        for thesis in (True, False):
            rs = [r for r in miss if r["type"] == t and (r["series"] in THESIS_SERIES) == thesis]
            if not rs:
                continue
            hs = [r for r in rs if r in has]
            def fmt(v):
                return f"{v:.3g}"
            if hs:
                synr = [max(r["syn_col"] / r["thr_col"], r["syn_row"] / r["thr_row"]) for r in hs
                        if r["syn_col"] is not None and r["syn_row"] is not None]
                thrp = sorted(min(r["thr_col"], r["thr_row"]) / r["err_prob"] for r in hs if r["err_prob"])
                effp = sorted(r["effect"] / r["err_prob"] for r in hs if r["err_prob"])
                body.append([t, "pos/full/orth" if thesis else "heavy/cancel", len(rs),
                             fmt(max(synr)) if synr else "n/a",
                             f"{fmt(effp[0])} .. {fmt(effp[-1])}", f"{fmt(thrp[0])} .. {fmt(thrp[-1])}",
                             ", ".join(sorted({str(r["bs"]) for r in rs}, key=int))])
            else:
                body.append([t, "pos/full/orth" if thesis else "heavy/cancel", len(rs), "n/a", "n/a", "n/a",
                             ", ".join(sorted({str(r["bs"]) for r in rs}, key=int))])
    return note + md_table(["type", "series", "missed", "largest syndrome/threshold", "effect / err_prob",
                            "smaller threshold / err_prob", "block sizes"], body) + "\n"


def missed_sig_section(inj):
    """The worst misses: significant (err_abs) errors that were not detected, relative size."""
    body = []
    for t in ("S", "D"):
        m = [r for r in inj if r["type"] == t and r["detected"] == 0 and significant(r, "abs")
             and r["effect"] is not None]
        if not m:
            continue
        rel = sorted(r["effect"] / max(abs(r["exact"] or 0), 1e-300) for r in m)
        over_prob = sum(1 for r in m if r["effect"] > r["err_prob"])
        over_3prob = sum(1 for r in m if r["effect"] > 3 * r["err_prob"])
        body.append([t, len(m), f"{rel[len(rel) // 2]:.2e}", f"{rel[-1]:.2e}", over_prob, over_3prob])
    return md_table(["type", "missed err_abs-significant", "median effect/|c|", "largest effect/|c|",
                     "of them > err_prob", "> 3 err_prob"], body)


# ---- plots ---------------------------------------------------------------------------------------

def plots(clean, inj, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    files = []
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for ax, t, which in ((axes[0], "D", "q_ref"), (axes[1], "S", "q_rec")):
        for n in sorted({r["n"] for r in clean}):
            h, _ = qhist(clean, t, which, key=lambda r, n=n: r["n"] == n)
            tot = sum(h.values())
            if not tot:
                continue
            ks = list(range(min(h), max(h) + 1))
            ax.plot(ks, [100.0 * h.get(k, 0) / tot for k in ks], marker="o", label=f"n = {n}")
        ax.set_xlabel("log2 q,  q = threshold / true rounding error")
        ax.set_ylabel("% of checksum elements")
        ax.set_title(f"{'FP64' if t == 'D' else 'FP32'}: q of the "
                     f"{'reference' if which == 'q_ref' else 'recomputed'} checksum, all series and BS")
        ax.axvline(0, color="red", lw=0.8)
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    p = os.path.join(outdir, "campaign-host-q.png")
    fig.savefig(p, dpi=110)
    files.append(p)
    plt.close(fig)

    fig, axes = plt.subplots(2, 1, figsize=(12, 7))
    for ax, t, width in ((axes[0], "S", 32), (axes[1], "D", 64)):
        for site, style in (("output", "o-"), ("inner", "s--")):
            xs, all_rate, sig_rate = [], [], []
            for b in range(width):
                x = [r for r in inj if r["type"] == t and r["bit"] == b and r["site"] == site]
                if not x:
                    continue
                xs.append(b)
                all_rate.append(100.0 * sum(1 for r in x if r["detected"] > 0) / len(x))
                sig = [r for r in x if significant(r, "abs")]
                sig_rate.append(100.0 * sum(1 for r in sig if r["detected"] > 0) / len(sig) if sig else float("nan"))
            ax.plot(xs, all_rate, style, ms=3, label=f"{site}: all flips")
            ax.plot(xs, sig_rate, style, ms=3, alpha=0.5, label=f"{site}: err_abs-significant")
        mant = 23 if t == "S" else 52
        ax.axvspan(mant - 0.5, width - 1.5, color="orange", alpha=0.1, label="exponent")
        ax.axvspan(width - 1.5, width - 0.5, color="green", alpha=0.1, label="sign")
        ax.set_xlim(-0.5, width - 0.5)
        ax.set_ylabel("% detected")
        ax.set_title(f"{'FP32' if t == 'S' else 'FP64'}: detection per flipped bit (0 = least significant)")
        ax.legend(fontsize=7, ncol=3)
        ax.grid(alpha=0.3)
    axes[1].set_xlabel("bit position")
    fig.tight_layout()
    p = os.path.join(outdir, "campaign-host-bits.png")
    fig.savefig(p, dpi=110)
    files.append(p)
    plt.close(fig)
    return files


def machine():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{platform.node() or 'host'}: {model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def git_head():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                              text=True).stdout.strip()
    except OSError:
        return "?"


def report(rows, args, seconds):
    clean, inj, failed = aggregate(rows)
    cfg = clean[0] if clean else {}
    parts = []
    parts.append("## False positives (fault-free runs)\n")
    parts.append(fp_section(clean))
    parts.append("\n## Threshold quality q = threshold / true rounding error (cf. thesis Abb. 7.1)\n")
    parts.append(q_section(clean))
    parts.append("## Detection per significance class\n")
    parts.append(class_section(inj))
    parts.append("\n## Detection by series\n")
    parts.append(series_section(inj))
    parts.append("\nSign and exponent flips that were missed, against their thresholds:\n")
    parts.append(se_missed_section(inj))
    parts.append("\n## Correction outcomes\n")
    parts.append(outcome_section(inj))
    parts.append("\nSignificant (err_abs) errors that were missed, by relative size:\n")
    parts.append(missed_sig_section(inj))
    parts.append("\n## Detection per flipped bit\n")
    parts.append(bit_section(inj))
    if failed:
        parts.append(f"\n{len(failed)} runs could not be evaluated (engine refused, or the fault did not fire).\n")
    body = "\n".join(parts)
    head = (f"Configuration: checksums={cfg.get('checksums')}, weights={cfg.get('weights')}, "
            f"threshold={cfg.get('threshold')}, omega={cfg.get('omega')}, PEA p={cfg.get('pea_p')}, "
            f"alpha={cfg.get('alpha')}, beta=0 (C filled with NaN before every call).\n"
            f"{len(clean)} fault-free GEMMs, {len(inj)} injected GEMMs.\n")
    return head, body


DOC_INTRO = """# Host ABFT fault-injection campaign

Measured by `scripts/campaign.py`, which runs `tests/campaign/campaign` (one data set per process)
and aggregates its JSON lines. Every GEMM goes through the host engine's diagnostic entry point
`blasft_abft_run` (mode correct, on_error recompute). Faults are planted *below* the engine, in the
host BLAS it calls (`tests/campaign/faultblas.c`: OpenBLAS plus one bit flip in the data GEMM),
so the campaign knows exactly what was flipped and does not depend on the engine's own
`BLASFT_INJECT` code.

## How it is measured

* **Data** (`tests/common/datagen.c`, seeded xoshiro256**): T_pos uniform in [0, 10^i], T_full
  uniform in [-10^i, 10^i] (i = 0..5), T_orth = 10^alpha U D_kappa V^T with Haar-like random
  orthogonal U, V (products of Householder reflections) and D_kappa uniform with its smallest entry
  1/kappa and largest kappa (kappa in {2, 16, 128, 1024, 8192, 65536}), heavy-tailed (random sign,
  magnitude log-uniform over 12 decades) and cancelling (A has pairs x, -x(1+d) along its rows, B
  pairs y, y(1+d') down its columns, |d| in [1e-6, 1e-3], so every dot product nearly cancels).
  C = alpha A B with square n x n operands; FP32 data is the FP64 data rounded.
* **True values** (`tests/common/hpref.c`): double-double (about 106 bits; tested against MPFR's
  correctly rounded sums). For every checksum element the exact checksum of the exact product is
  sum_k (exact encoded A or B)_k (other operand)_k; the true rounding error of the reference
  checksum, of the recomputed checksum and of their difference (the syndrome) follow.
  q = threshold / true error, histogram by powers of two as in the thesis's figure 7.1.
* **False positive**: a fault-free GEMM in which any checksum element exceeded its threshold.
  Bounds are exact one-sided 95 % Clopper-Pearson upper bounds (for 0/N: 1 - 0.05^(1/N), about
  the rule of three 3/N).
* **Faults**: one bit flip per GEMM, bit uniform over the whole word, element uniform over C.
  Site *output*: the bit of C(i,j) is flipped after the product. Site *inner*: the inner dimension
  is split at a random k1 in [1, k-1], C = alpha A(:,1:k1) B(1:k1,:) is computed, the bit of the
  partial sum C(i,j) is flipped, and the rest is accumulated on top, so the error propagates as a
  fault inside the accumulation would (the thesis injected into the multiplication/addition of
  the inner loop and the final accumulation).
* **Significance classes** (thesis 7.3; err_abs <= err_erw <= err_prob in practice). The effect of
  a fault is |flipped value - value before the flip| (it reaches C(i,j) unchanged). For the element
  c = sum_k a_k b_k (length n, t mantissa bits):
  * err_abs (strict): |fl(c) - c|, the true rounding error of the fault-free computed element;
  * err_erw: 2^-t sqrt((1/8)(sum_k (a_k b_k)^2 + sum_{k>=2} s_k^2)), the expected rounding error from
    the squared partial sums s_k (eq. 5.17/5.18, with the same term for rounded products);
  * err_prob (loose): the PEA standard deviation of the element itself,
    sqrt(n(n+1)(n+1/2)/24) y 2^-t with y = max_k |a_k b_k| (eq. 6.7), without the factor omega.
  A fault is significant in a class if its effect exceeds that bound; detection rates per class
  count only significant faults. Sign and exponent flips are reported separately (the thesis
  left them out because all were detected).
* **Outcomes**: detected = at least one checksum element over threshold; then *corrected* (the
  element was located and fixed: located by the syndromes, or, where a single line of its block
  was flagged, by comparing that line with its recomputation), *line recomputed* (one checksum,
  only one line of the block flagged and nothing located in it: its bs elements recomputed),
  *block recomputed*, or *detected only*. *Restored* means the
  final element is within omega BS err_prob of the exact value (the order of the rounding error of
  a checksum over BS elements, which a correction by syndrome subtraction inherits).
"""


def old_findings(path):
    """The hand-written '## Findings' section of an existing doc, kept across regenerations."""
    try:
        text = open(path).read()
    except OSError:
        return ""
    at = text.find("\n## Findings\n")
    if at < 0:
        return ""
    end = text.find("\n## ", at + 5)
    return text[at + 1:end + 1 if end >= 0 else len(text)]


def write_doc(rows, args, seconds, files):
    head, body = report(rows, args, seconds)
    findings = old_findings(os.path.join(ROOT, "docs", "campaign-host.md"))
    rel = [os.path.relpath(f, os.path.join(ROOT, "docs")) for f in files]
    cmd = "/usr/bin/python3 scripts/campaign.py " + " ".join(args.argv)
    grid = "\n".join(f"| {s} | {', '.join(map(str, p))} | {n} | {', '.join(map(str, b))} | {k} |"
                     for s, p, n, b, k in GRIDS[args.grid])
    with open(os.path.join(ROOT, "docs", "campaign-host.md"), "w") as f:
        f.write(DOC_INTRO)
        f.write("\n## This run\n\n")
        f.write(f"* Command: `{cmd}`\n* Machine: {args.machine or machine()}\n"
                f"* Date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}, "
                f"commit {git_head()}, wall time {seconds:.0f} s\n* {head}\n")
        if grid:
            f.write("Grid (injections are per type and block size; sites alternate output/inner):\n\n"
                    "| series | parameters | n | block sizes | injections |\n|---|---|---|---|---|\n"
                    + grid + "\n\n")
        f.write("## Targets\n\n" + targets_section(rows))
        f.write(findings + ("\n" if findings else ""))
        f.write(body)
        f.write("\n\n## Plots\n\n")
        for r in rel:
            f.write(f"![{r}]({r})\n\n")


def targets_section(rows):
    """The issue's targets, each with what this run measured."""
    clean, inj, _ = aggregate(rows)
    g = len(clean)
    gx = sum(1 for r in clean if r["flagged"] > 0)
    # a flip that left the result unchanged (masked by later rounding) is no error: not counted
    se_masked = [r for r in inj if r["field"] != "mantissa" and r["detected"] == 0 and masked(r)]
    se = [r for r in inj if r["field"] != "mantissa" and r not in se_masked]
    se_missed = [r for r in se if r["detected"] == 0]
    se_out = [r for r in se if r["site"] == "output"]
    se_out_missed = [r for r in se_out if r["detected"] == 0]
    det = [r for r in inj if r["detected"] > 0]
    corr = sum(1 for r in det if r["outcome"] == "corrected")
    line = sum(1 for r in det if r["outcome"] == "line_recomputed")
    rest = sum(1 for r in det if restored(r))
    out, low = [], []
    for t in ("D", "S"):
        m = [r for r in inj if r["type"] == t and r["field"] == "mantissa" and significant(r, "abs")]
        d = sum(1 for r in m if r["detected"] > 0)
        out.append(f"{'FP64' if t == 'D' else 'FP32'} {pct(d, len(m))} ({d}/{len(m)})")
        if m and d < 0.62 * len(m):
            low.append("FP64" if t == "D" else "FP32")
    body = [
        ["zero false positives", f"{gx}/{g} fault-free GEMMs flagged (95 % upper bound {upper95(gx, g):.2e})",
         "met" if gx == 0 else "NOT met"],
        ["every sign and exponent flip detected",
         f"{len(se) - len(se_missed)}/{len(se)} detected; output site {len(se_out) - len(se_out_missed)}/{len(se_out)}; "
         + "; ".join(f"{'FP64' if t == 'D' else 'FP32'} {sum(1 for r in se if r['type'] == t) - sum(1 for r in se_missed if r['type'] == t)}"
                     f"/{sum(1 for r in se if r['type'] == t)}" for t in ("D", "S"))
         + (f"; {len(se_masked)} more left the result unchanged (masked)" if se_masked else ""),
         "met" if not se_missed else ("NOT met (inner site; met at the output site)" if not se_out_missed
                                      else "NOT met")],
        ["every detected single error located and corrected",
         f"{corr}/{len(det)} located and corrected, {line} line recomputed (one flagged line, nothing located), "
         f"{len(det) - corr - line} block recomputed; {rest}/{len(det)} restored",
         "met" if corr == len(det) else ("restored, not all located" if rest == len(det) else "NOT met")],
        ["err_abs detection >= 62-76 % (mantissa flips; the thesis's FP64 figure)", "; ".join(out),
         "met" if not low else "NOT met for " + " and ".join(low)],
    ]
    return md_table(["target (issue 3)", "measured", "verdict"], body) + "\n\n"


# ---- threshold methods side by side (docs/thresholds.md) ------------------------------------------

def median_bucket(h):
    """Power-of-two bucket e (2^e <= q < 2^(e+1)) holding the median of a log2 histogram."""
    tot, acc = sum(h.values()), 0
    for e in sorted(h):
        acc += h[e]
        if 2 * acc >= tot:
            return e
    return None


def fmt_bucket(e):
    return "-" if e is None else f"2^{e}"


def compare_tables(runs):
    """runs: [(label, rows)]. Markdown tables: per method and type (false positives of the first
    tier, second-tier false alarms, q, detection), per data set, per bit (FP32 and FP64)."""
    out = []
    body = []
    for label, rows in runs:
        clean, inj, _ = aggregate(rows)
        for t in ("S", "D"):
            cs = [r for r in clean if r["type"] == t]
            if not cs:
                continue
            checks, flags = sum(r["checks"] for r in cs), sum(r["flagged"] for r in cs)
            fa = sum(r["false_alarms"] for r in cs)
            worst = max((r["worst_syndrome_over_threshold"] or 0) for r in cs)
            h, _ = qhist(clean, t, "q_syn")
            minq = min((r["q_syn"]["min_q"] for r in cs if r["q_syn"]["min_q"] is not None), default=None)
            ms = [r for r in inj if r["type"] == t and r["field"] == "mantissa"]
            se = [r for r in inj if r["type"] == t and r["field"] != "mantissa"]
            row = [label, t, f"{flags}/{checks}", fa, f"{worst:.3f}",
                   "-" if minq is None else f"{minq:.3g}", fmt_bucket(median_bucket(h))]
            for rs in (ms, inj_t := [r for r in inj if r["type"] == t]):
                for cls in ("abs", "prob"):
                    sig = [r for r in rs if significant(r, cls)]
                    det = sum(1 for r in sig if r["detected"] > 0)
                    row.append(f"{pct(det, len(sig))} ({det}/{len(sig)})")
            det = sum(1 for r in se if r["detected"] > 0)
            row.append(f"{det}/{len(se)}")
            del inj_t
            body.append(row)
    out.append(md_table(["method", "type", "tier-1 flags / checks", "tier-2 false alarms",
                         "worst syndrome/threshold", "min q", "median q",
                         "err_abs (mantissa)", "err_prob (mantissa)", "err_abs (all bits)",
                         "err_prob (all bits)", "sign/exponent detected"], body))
    out.append("")
    # per data set: median q bucket and err_abs-significant mantissa flips detected
    sets = []
    for _, rows in runs:
        for r in rows:
            key = (r["series"], r["param"])
            if key not in sets:
                sets.append(key)
    body = []
    for series, param in sets:
        row = [f"{series} {param:g}"]
        for t in ("S", "D"):
            qs, ds = [], []
            for label, rows in runs:
                clean, inj, _ = aggregate(rows)
                h, _ = qhist(clean, t, "q_syn", key=lambda r: r["series"] == series and r["param"] == param)
                qs.append(fmt_bucket(median_bucket(h)))
                sig = [r for r in inj if r["type"] == t and r["series"] == series and r["param"] == param
                       and r["field"] == "mantissa" and significant(r, "abs")]
                ds.append(f"{sum(1 for r in sig if r['detected'] > 0)}/{len(sig)}")
            row += [" \\| ".join(qs), " \\| ".join(ds)]
        body.append(row)
    names = " \\| ".join(label for label, _ in runs)
    out.append(f"Per data set ({names}): median q of the syndrome, err_abs-significant mantissa "
               "flips detected\n")
    out.append(md_table(["data set", "S median q", "S err_abs", "D median q", "D err_abs"], body))
    out.append("")
    for t, width in (("S", 32), ("D", 64)):
        body = []
        for b in range(width - 1, -1, -1):
            row, any_ = [b], False
            for label, rows in runs:
                _, inj, _ = aggregate(rows)
                x = [r for r in inj if r["type"] == t and r["bit"] == b]
                any_ |= bool(x)
                row.append(f"{pct(sum(1 for r in x if r['detected'] > 0), len(x))} ({len(x)})" if x else "")
            if any_:
                body.append(row)
        out.append(f"Detection per flipped bit, {'FP32' if t == 'S' else 'FP64'} (injections in brackets):\n")
        out.append(md_table(["bit"] + [label for label, _ in runs], body))
        out.append("")
    return "\n".join(out)


def q_frame(ax, title):
    """A q plot's frame: the threshold issue's target (2^6) and aim (2^4) marked, labels, legend."""
    ax.axvline(6, color="gray", lw=0.8, ls="--")
    ax.axvline(4, color="gray", lw=0.8, ls=":")
    ax.set_xlabel("log2 q,  q = threshold / |syndrome| (fault-free; target 2^6, aim 2^4)")
    ax.set_ylabel("% of checksum elements")
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)


def compare_plots(runs, outdir, prefix="thresholds"):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    files = []
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for ax, t in ((axes[0], "S"), (axes[1], "D")):
        for label, rows in runs:
            clean, _, _ = aggregate(rows)
            h, _ = qhist(clean, t, "q_syn")
            tot = sum(h.values())
            if not tot:
                continue
            ks = list(range(min(h), max(h) + 1))
            ax.plot(ks, [100.0 * h.get(k, 0) / tot for k in ks], marker="o", ms=3, label=label)
        ax.axvline(0, color="red", lw=0.8)
        q_frame(ax, f"{'FP32' if t == 'S' else 'FP64'}: threshold over the true syndrome")
    fig.tight_layout()
    p = os.path.join(outdir, f"{prefix}-q.png")
    fig.savefig(p, dpi=110)
    files.append(p)
    plt.close(fig)
    fig, axes = plt.subplots(2, 1, figsize=(12, 7))
    for ax, t, width in ((axes[0], "S", 32), (axes[1], "D", 64)):
        for label, rows in runs:
            _, inj, _ = aggregate(rows)
            xs, ys = [], []
            for b in range(width):
                x = [r for r in inj if r["type"] == t and r["bit"] == b]
                if x:
                    xs.append(b)
                    ys.append(100.0 * sum(1 for r in x if r["detected"] > 0) / len(x))
            ax.plot(xs, ys, "o-", ms=3, label=label)
        ax.set_xlim(-0.5, width - 0.5)
        ax.set_ylabel("% detected")
        ax.set_title(f"{'FP32' if t == 'S' else 'FP64'}: detection per flipped bit, n = 256, BS 32-256")
        ax.legend()
        ax.grid(alpha=0.3)
    axes[1].set_xlabel("bit position (0 = least significant)")
    fig.tight_layout()
    p = os.path.join(outdir, f"{prefix}-bits.png")
    fig.savefig(p, dpi=110)
    files.append(p)
    plt.close(fig)
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="meson build directory")
    ap.add_argument("--grid", choices=sorted(GRIDS), default="quick")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1, help="campaign processes run at once")
    ap.add_argument("--out", default=None, help="JSON lines file (default: <build>/campaign-<grid>.jsonl)")
    ap.add_argument("--from", dest="from_file", default=None, help="aggregate an existing JSON lines file")
    ap.add_argument("--machine", default=None, help="machine to record with --from (default: this one)")
    ap.add_argument("--seconds", type=float, default=0.0, help="wall time to record with --from")
    ap.add_argument("--doc", action="store_true", help="write docs/campaign-host.md and docs/*.png")
    ap.add_argument("--compare", nargs="+", metavar="LABEL=FILE", default=None,
                    help="print the threshold-method comparison of docs/thresholds.md for these "
                         "JSON lines files (with --doc also docs/thresholds-q.png, -bits.png)")
    ap.add_argument("extra", nargs="*", help="passed to the campaign program (after --), e.g. -- --checksums 2")
    args = ap.parse_args()
    args.argv = sys.argv[1:]
    if args.compare:
        runs = [(x.split("=", 1)[0], load(x.split("=", 1)[1])) for x in args.compare]
        print(compare_tables(runs))
        if args.doc:
            files = compare_plots(runs, os.path.join(ROOT, "docs"))
            print(f"wrote {', '.join(os.path.basename(f) for f in files)}", file=sys.stderr)
        return 0
    seconds = args.seconds
    if args.from_file:
        path = args.from_file
    else:
        binary = os.path.join(args.build, "tests", "campaign", "campaign")
        if not os.access(binary, os.X_OK):
            sys.exit(f"campaign: {binary} not built (ninja -C {args.build})")
        path = args.out or os.path.join(args.build, f"campaign-{args.grid}.jsonl")
        print(f"running grid '{args.grid}' -> {path}", file=sys.stderr)
        seconds = run_grid(binary, args.grid, args.seed, args.extra, path, args.jobs)
    rows = load(path)
    head, body = report(rows, args, seconds)
    print(head)
    print(targets_section(rows))
    print(body)
    if args.doc:
        os.makedirs(os.path.join(ROOT, "docs"), exist_ok=True)
        files = plots(*aggregate(rows)[:2], os.path.join(ROOT, "docs"))
        write_doc(rows, args, seconds, files)
        print(f"wrote docs/campaign-host.md and {', '.join(os.path.basename(f) for f in files)}",
              file=sys.stderr)
    clean, inj, failed = aggregate(rows)
    return 1 if failed or any(r["flagged"] for r in clean) else 0


if __name__ == "__main__":
    sys.exit(main())
