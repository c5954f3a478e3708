#!/usr/bin/env python3
"""The table of scripts/gpu_check.sh, from the files its benchmarks wrote into <folder>:
pic/summary.json (the mini-app), gpu.txt (bench_gpu's "name value unit" lines) and staging.csv
(bench_staging's Google Benchmark CSV).

    python3 scripts/gpu_table.py <folder> <HBM GB/s> <bytes per particle-step>
"""
import csv
import json
import os
import sys


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out, hbm, bytes_per = argv[1], float(argv[2]), float(argv[3])
    rows = []
    try:
        s = json.load(open(os.path.join(out, "pic", "summary.json")))
        rate = s["particle_steps_per_second"]
        share = rate * bytes_per / (hbm * 1e9)
        rows.append((f"pic 2D CIC, {s['particles']} particles", f"{rate:.3g} particle-steps/s",
                     f"{100 * share:.0f}% of {hbm:.0f} GB/s at {bytes_per:.0f} B per particle-step "
                     "(goals: 1e10/s, 60%)"))
        rows.append(("pic transfers in the loop", str(s["transfers_in_loop"]), "goal 0"))
    except (OSError, KeyError, ValueError) as e:
        rows.append(("pic", "no result", str(e)))
    # The separate and tiled steps (steps/<dim>d_<precision>_<step>/summary.json): bytes a
    # particle-step by docs/mini-app.md's model (tiled) and the separate passes' sweeps.
    model = {("2", "single", "tiled"): 108, ("2", "double", "tiled"): 172,
             ("3", "single", "tiled"): 140, ("3", "double", "tiled"): 236,
             ("2", "single", "auto"): 100, ("2", "double", "auto"): 160,
             ("3", "single", "auto"): 136, ("3", "double", "auto"): 232}
    ns = {}
    for key in sorted(model):
        dim, precision, step = key
        name = f"{dim}d_{precision}_{step}"
        try:
            s = json.load(open(os.path.join(out, "steps", name, "summary.json")))
            t = s["ns_per_particle_step"]
            ns[key] = t
            share = model[key] / (t * 1e-9) / (hbm * 1e9)
            rows.append((f"pic {dim}D CIC {precision}, {'tiled' if step == 'tiled' else 'separate'}",
                         f"{t:.3g} ns/particle-step",
                         f"{100 * share:.0f}% of {hbm:.0f} GB/s at {model[key]} B"))
        except (OSError, KeyError, ValueError) as e:
            rows.append((f"pic {name}", "no result", str(e)))
    for (dim, precision, step), t in sorted(ns.items()):
        separate = ns.get((dim, precision, "auto"))
        if step == "tiled" and separate:
            rows.append((f"tiled speed-up {dim}D {precision}", f"{separate / t:.2f}x",
                         "goal 3x, the tiled single step at 50% of the roofline"))
    try:
        for line in open(os.path.join(out, "gpu.txt")):
            p = line.split()
            if len(p) == 3:
                rows.append((p[0], f"{p[1]} {p[2]}", ""))
    except OSError as e:
        rows.append(("bench_gpu", "no result", str(e)))
    try:
        lines = [l for l in open(os.path.join(out, "staging.csv")) if l.startswith(("name,", '"'))]
        for row in csv.DictReader(lines):
            name = row["name"]
            if "pinned_peak" in name or "staging_copy" in name:
                bw = row.get("bytes_per_second") or ""
                note = f"{float(bw) / 1e9:.1f} GB/s" if bw else ""
                rows.append((name, f"{float(row['real_time']):.1f} {row['time_unit']}", note))
    except (OSError, KeyError, ValueError) as e:
        rows.append(("bench_staging", "no result", str(e)))
    w = max(len(a) for a, _, _ in rows)
    print(f"\n{'measure':<{w}}  {'value':<26}  note")
    for a, b, c in rows:
        print(f"{a:<{w}}  {b:<26}  {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
