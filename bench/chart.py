"""Draws the benchmark's chart (PNG): events/s per configuration, and latency percentiles where measured.

Usage: python bench/chart.py bench/out/latest.json bench/out/bench.png   (matplotlib, Agg backend: no display needed)
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src, dst):
    with open(src, encoding="utf-8") as f:
        report = json.load(f)
    rows = report["rows"]
    labels = [f"{r['section']}\n{r['config']}" for r in rows]
    eps = [r["eventsPerSecond"] for r in rows]
    lat = [r for r in rows if r.get("p50Ms") is not None]

    fig, (ax1, ax2) = plt.subplots(
        2, 1, figsize=(12, 4 + 0.55 * len(rows) + 0.5 * len(lat)), gridspec_kw={"height_ratios": [len(rows), max(1, len(lat))]}
    )
    y = range(len(rows))
    ax1.barh(list(y), eps, color="#4477aa")
    ax1.set_xscale("log")
    ax1.set_yticks(list(y), labels, fontsize=7)
    ax1.invert_yaxis()
    ax1.set_xlabel("events/s (log scale)")
    for i, v in enumerate(eps):
        ax1.text(v, i, f" {v:,.1f}", va="center", fontsize=7)
    ax1.set_title(
        f"Throughput per configuration — {report['machine']}; load avg at start {report['loadavg']['start'][0]}"
    )

    y2 = range(len(lat))
    h = 0.25
    for k, (key, color) in enumerate((("p50Ms", "#66ccee"), ("p95Ms", "#228833"), ("p99Ms", "#ee6677"))):
        ax2.barh([i + (k - 1) * h for i in y2], [r[key] for r in lat], height=h, label=key[:3], color=color)
    ax2.set_yticks(list(y2), [f"{r['section']}\n{r['config']}" for r in lat], fontsize=7)
    ax2.invert_yaxis()
    ax2.set_xscale("log")
    ax2.set_xlabel("latency, ms (log scale): in-process = invocation; whole stack = publish to Silver")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(dst, dpi=110, bbox_inches="tight")  # long configuration labels are not cut at the left


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
