#!/usr/bin/python3
"""Plots of the device side of the threshold campaign (tests/gpu/gpu_campaign.c) for
docs/thresholds.md: detection per flipped bit and the distribution of q = threshold / |syndrome|.

Usage: /usr/bin/python3 scripts/gpu_campaign_plot.py [--jsonl docs/thresholds-gpu.jsonl]
           [--promote docs/promote-gpu.jsonl] [--out docs]
Writes OUT/thresholds-gpu-bits.png and OUT/thresholds-gpu-q.png (matplotlib from Debian's
python3-matplotlib). The runs plotted are named below; each curve pools the run's
configurations of one type (flips: m = n = 256, k 256 and 4096, BS 32-256)."""
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
    ap.add_argument("--out", default=docs)
    a = ap.parse_args()
    rows = {"thresholds": list(lines(a.jsonl)), "promote": list(lines(a.promote))}

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


if __name__ == "__main__":
    main()
