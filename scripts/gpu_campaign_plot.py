#!/usr/bin/python3
"""Plots of the device side of the threshold campaign (tests/gpu/gpu_campaign.c) for
docs/thresholds.md: detection per flipped bit, the distribution of q = threshold / |syndrome|, and
FP64 err_prob detection against n at the thesis's sizes.

Usage: /usr/bin/python3 scripts/gpu_campaign_plot.py [--jsonl docs/thresholds-gpu.jsonl]
           [--promote docs/promote-gpu.jsonl] [--sizes docs/thresholds-gpu-n.jsonl] [--out docs]
Writes OUT/thresholds-gpu-bits.png, OUT/thresholds-gpu-q.png and OUT/thresholds-gpu-n.png
(matplotlib from Debian's python3-matplotlib). The runs plotted are named below; the first two
figures' curves pool the run's configurations of one type (flips: m = n = 256, k 256 and 4096,
BS 32-256); the third has one point per configuration (square n, one BS, one data series)."""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from campaign import q_frame  # noqa: E402  (the host campaign's plots share the frame)

# (label, file key, run, method, promote) of the detection curves
FLIP_RUNS = [
    ("PROJ (gpu13-flips)", "thresholds", "gpu13-flips", "proj", 0),
    ("PEA (gpu1-k4)", "thresholds", "gpu1-k4", "pea", None),
    ("PEA, FP32 computed in double (promote-h100-1)", "promote", "promote-h100-1", "pea", 1),
]
# (label, run) of the q curves: per-type lines where the run has them
Q_RUNS = [("PROJ (gpu11-fp)", "gpu11-fp")]
# the run of the sizes figure, and its data series
SIZES_RUN = "gpu17-flips-n"
SIZES_SERIES = [("full", "T_full, [-1, 1]"), ("orth65536", "T_orth, kappa 65536"), ("pos", "T_pos, [0, 1]")]


def lines(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                yield json.loads(line)


def pooled_bits(rows, run, method, promote, t):
    """Per bit position: (detected, flips) summed over the run's configurations of type t."""
    acc = {}
    for r in rows:
        if r.get("run") != run or r.get("method") != method or r.get("type") != t or "per_bit" not in r:
            continue
        if promote is not None and r.get("promote", 0) != promote:
            continue
        for b, (det, tot) in enumerate(r["per_bit"]):
            d0, t0 = acc.get(b, (0, 0))
            acc[b] = (d0 + det, t0 + tot)
    return acc


def q_hist(rows, run, t):
    """Checks per power of two of q (bin b: 2^b <= q < 2^(b+1); bin 0 also q < 1) over the series."""
    h = []
    for r in rows:
        if r.get("run") != run or r.get("mode") != "fp" or r.get("type") != t or r.get("series") == "all":
            continue
        hist = r.get("q_log2_hist") or []
        h = [a + b for a, b in zip(h, hist)] if h else list(hist)
    return h


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    docs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs")
    ap.add_argument("--jsonl", default=os.path.join(docs, "thresholds-gpu.jsonl"))
    ap.add_argument("--promote", default=os.path.join(docs, "promote-gpu.jsonl"))
    ap.add_argument("--sizes", default=os.path.join(docs, "thresholds-gpu-n.jsonl"))
    ap.add_argument("--out", default=docs)
    a = ap.parse_args()
    rows = {"thresholds": list(lines(a.jsonl)), "promote": list(lines(a.promote)),
            "sizes": list(lines(a.sizes))}

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(12, 7))
    for ax, t, width in ((axes[0], "S", 32), (axes[1], "D", 64)):
        for label, key, run, method, promote in FLIP_RUNS:
            acc = pooled_bits(rows[key], run, method, promote, t)
            xs = [b for b in sorted(acc) if acc[b][1] > 0 and b < width]
            if xs:
                ax.plot(xs, [100.0 * acc[b][0] / acc[b][1] for b in xs], "o-", ms=3, label=label)
        ax.set_xlim(-0.5, width - 0.5)
        ax.set_ylabel("% detected (first tier)")
        ax.set_title(f"GPU, {'FP32' if t == 'S' else 'FP64'}: detection per flipped bit of C, "
                     "m = n = 256, data in [-1, 1]")
        ax.legend()
        ax.grid(alpha=0.3)
    axes[1].set_xlabel("bit position (0 = least significant)")
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "thresholds-gpu-bits.png"), dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for ax, t in ((axes[0], "S"), (axes[1], "D")):
        for label, run in Q_RUNS:
            h = q_hist(rows["thresholds"], run, t)
            tot = sum(h)
            if tot:
                ax.plot(range(len(h)), [100.0 * x / tot for x in h], marker="o", ms=3, label=label)
        q_frame(ax, f"GPU, {'FP32' if t == 'S' else 'FP64'}: threshold over the true syndrome")
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "thresholds-gpu-q.png"), dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, 3, figsize=(14, 4.4), sharey=True)
    for ax, (series, title) in zip(axes, SIZES_SERIES):
        for bs, style in ((32, "-"), (256, "--")):
            curves = [("PROJ", "proj", "err_prob", "C0"), ("PEA", "pea", "err_prob", "C1"),
                      ("oracle threshold", "proj", "err_prob_oracle", "C2")]
            for label, method, key, color in curves:
                pts = sorted((r["n"], r[key] if key != "err_prob" else r[key][0], r["err_prob"][1])
                             for r in rows["sizes"] if r.get("run") == SIZES_RUN and r.get("series") == series
                             and r.get("method") == method and r.get("bs") == bs and key in r)
                if pts:
                    ax.plot([p[0] for p in pts], [100.0 * p[1] / p[2] for p in pts], style, color=color,
                            marker="o", ms=3, label=f"{label}, BS {bs}")
        ax.axhline(99, color="k", lw=0.8, ls=":")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("m = n = k")
        ax.set_title(f"GPU, FP64, {title}")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("err_prob-significant flips detected (%)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "thresholds-gpu-n.png"), dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
