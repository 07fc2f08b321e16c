#!/usr/bin/python3
"""Charts lngrad-bench's CSV: per dtype, GB/s per shape for each contestant,
with the triad (the memory roofline) marked over each group.

usage: /usr/bin/python3 bench/plot.py RESULTS.csv OUT.png   (or OUT.svg)
"""
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend is chosen first)
from matplotlib.lines import Line2D  # noqa: E402

CONTESTANTS = [  # CSV prefix, legend label, colour
    ("lngrad", "lngrad", "#1f77b4"),
    ("oneDNN", "oneDNN", "#ff7f0e"),
    ("torch", "PyTorch (ATen)", "#2ca02c"),
    ("naive", "naive loop (1 thread)", "#9e9e9e"),
]


def read(path):
    meta, lines = {}, []
    with open(path, newline="") as f:
        for line in f:
            if line.startswith("#"):
                key, _, value = line[1:].partition(":")
                meta[key.strip()] = value.strip()
            elif line.strip():
                lines.append(line)
    rows = list(csv.DictReader(lines))
    if not rows:
        sys.exit(f"plot.py: {path} has no result rows")
    for column in ("shape", "dtype", "triad_gbs", "lngrad_gbs"):
        if column not in rows[0]:
            sys.exit(f"plot.py: {path} lacks the column '{column}': not an lngrad-bench CSV?")
    return meta, rows


def number(text):
    return float(text) if text not in ("", None) else math.nan


def size(n):
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__.strip())
    meta, rows = read(argv[1])
    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    fig, axes = plt.subplots(len(dtypes), 1, figsize=(13, 3.9 * len(dtypes)), squeeze=False)
    width = 0.8 / len(CONTESTANTS)
    for ax, dtype in zip(axes[:, 0], dtypes):
        sub = [r for r in rows if r["dtype"] == dtype]
        # Scale to the bars and the triads near them; an in-cache triad far
        # above anything LayerNorm backward reaches (over 3x the tallest bar)
        # is drawn at the top, dotted, with its value.
        bars = [number(r.get(p + "_gbs")) for r in sub for p, _, _ in CONTESTANTS]
        tallest = max(v for v in bars if not math.isnan(v))
        triads = [number(r["triad_gbs"]) for r in sub]
        top = 1.1 * max([tallest] + [t for t in triads if t <= 3 * tallest])
        for k, (prefix, label, colour) in enumerate(CONTESTANTS):
            for i, r in enumerate(sub):
                x = i + (k - (len(CONTESTANTS) - 1) / 2) * width
                v = number(r.get(prefix + "_gbs"))
                if math.isnan(v):
                    ax.text(x, top * 0.02, "n/a", rotation=90, ha="center", va="bottom", fontsize=7, color=colour)
                    continue
                ax.bar(x, v, width, color=colour, label=label if i == 0 else None)
                if prefix == "lngrad":  # lngrad's share of the roofline, on its bar
                    share = v / number(r["triad_gbs"])
                    ax.text(x, v, f"{share:.2f}", ha="center", va="bottom", fontsize=7, color=colour)
        for i, r in enumerate(sub):
            triad = number(r["triad_gbs"])
            shown = min(triad, top * 0.97)
            ax.hlines(shown, i - 0.45, i + 0.45, colors="black", linewidth=2, linestyles="-" if triad == shown else ":")
            if triad != shown:
                ax.text(i + 0.45, shown * 0.98, f"triad {triad:.0f} \u2191", ha="right", va="top", fontsize=7)
        ax.set_xticks(range(len(sub)))
        labels = []
        for r in sub:
            beyond = " *" if r.get("beyond_llc_x3") == "1" else ""
            labels.append(f"{r['shape']}{beyond}\n{size(float(r['bytes']))}")
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel("GB/s (dy + x read, pd_x written)")
        ax.set_ylim(0, top)
        ax.set_title(dtype, loc="left", fontsize=10, fontweight="bold")
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    handles.append(Line2D([], [], color="black", linewidth=2))
    labels.append("triad, same bytes (dotted: off the axis)")
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=9, frameon=False)
    threads = meta.get("threads", "?")
    fig.suptitle(
        f"LayerNorm backward (pd_x, pd_gamma, pd_beta): {meta.get('cpu', 'CPU')}, {threads} threads, "
        f"lngrad {meta.get('target', '?')}, LLC {meta.get('llc_mib', '?')} MiB\n"
        f"higher is better; number on lngrad's bar = fraction of the triad; * = tensors beyond 3x LLC; "
        f"oneDNN {meta.get('onednn', '?')}, PyTorch {meta.get('torch', '?')}",
        x=0.01, y=0.995, ha="left", va="top", fontsize=9)
    fig.tight_layout(rect=(0, 0.35 / fig.get_figheight(), 1, 1))
    fig.subplots_adjust(top=1 - 0.75 / fig.get_figheight())  # room for the two-line title
    fig.savefig(argv[2], dpi=110)
    print(f"wrote {argv[2]}")


if __name__ == "__main__":
    main(sys.argv)
