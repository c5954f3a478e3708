#!/usr/bin/env python3
"""Plots a PIC run's field energy with the fitted and theoretical rates.

    python3 scripts/plot_energy.py out/landau            # writes out/landau/energy.png

Reads energy.csv and summary.json from the run folder (written by `pic --output`).  Draws the
field energy of the perturbed mode and of the whole field on a log scale, and the lines
W0 exp(2 gamma t) of the fit (over the fitted window) and of the theory.
"""
import csv
import json
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    folder = Path(argv[1])
    try:
        rows = list(csv.DictReader(open(folder / "energy.csv")))
        summary = json.load(open(folder / "summary.json"))
    except OSError as e:
        print(f"plot_energy: {e}; run `pic --output {folder}` first", file=sys.stderr)
        return 1
    t = [float(r["time"]) for r in rows]
    mode = [float(r["mode_energy"]) for r in rows]
    field = [float(r["field_energy"]) for r in rows]

    fig, ax = plt.subplots(figsize=(8, 5))
    ax.semilogy(t, field, color="0.7", lw=1, label="field energy (all modes)")
    ax.semilogy(t, mode, color="C0", lw=1.5, label="field energy of the mode k")
    t0, t1 = summary["fit_window"]
    g_fit, g_th = summary["gamma_fit"], summary["gamma_theory"]
    fitted = g_fit is not None  # null (with fit_failure) when the rates could not be fitted
    # Anchor both lines at the envelope of the first fitted sample (the start without a fit).
    i0 = min(range(len(t)), key=lambda i: abs(t[i] - t0)) if fitted else 0
    w0 = max(mode[max(0, i0 - 3): i0 + 4])
    if fitted:
        span = [x for x in t if t0 <= x <= t1] or [t0, t1]
        ax.semilogy(span, [w0 * math.exp(2 * g_fit * (x - t0)) for x in span], "C3--", lw=2,
                    label=f"fit: gamma = {g_fit:+.4f}")
    else:
        t0 = t[0]
    ax.semilogy(t, [w0 * math.exp(2 * g_th * (x - t0)) for x in t], "k:", lw=1.5,
                label=f"theory: gamma = {g_th:+.4f}")
    title = f"{summary['case']} ({summary['dim']}D, {summary['particles']} particles, {summary['ranks']} rank(s), {summary['backend']})"
    if not fitted:
        title += "\nno fit: " + summary.get("fit_failure", "")[:90]
    elif summary.get("omega_theory", 0) > 1e-9:
        title += f"\nomega: fit {summary['omega_fit']:.4f}, theory {summary['omega_theory']:.4f}"
    ax.set_title(title)
    ax.set_xlabel("t  (1 / omega_p)")
    ax.set_ylabel("energy")
    ax.set_ylim(max(min(mode + field) * 0.5, max(field) * 1e-12), max(field) * 3)
    ax.legend(loc="best")
    ax.grid(True, which="both", alpha=0.3)
    out = folder / "energy.png"
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
