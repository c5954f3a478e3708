#!/usr/bin/env python3
"""A model of the decomposed PIC step's time from 1 to 1,024 ranks (or GPUs), calibrated on the
runs of scripts/scaling.sh and checked against them.

    python3 scripts/scaling_model.py OUT [--alpha 1.5e-6] [--beta 25e9] [--cores N]
                                         [--gpu-ns 0.05]

OUT: a scaling.sh output folder (runs.txt and each run's summary.json; scaling.sh calls this
script itself).  What the model takes from the measurements, all from the 1-rank decomposed run
of each series:

  c_p   seconds per particle-step of the particle phases (deposit, gather, push, sort, migration)
  c_s   seconds per cell and step of the field solve (an FFT: scaled by log2(cells) to other sizes)
  c_g   seconds per cell and step of the guards' sum and fill (packing and copying)

and what it assumes (stated, change them with the options):

  interconnect  a message costs alpha + bytes / beta (default 1.5 us and 25 GB/s per link, an
                InfiniBand HDR-class network); on this machine (shared memory) the check uses
                alpha 2 us and beta 5 GB/s
  the node      ranks sharing a node slow each other (memory bandwidth, cores): the check
                multiplies a rank's work by what the replicated runs of the same series
                measured (their particle phases per particle at P ranks over 1 rank), so the
                model/measured ratio shows what the decomposition itself costs; the cluster
                prediction gives each rank a core and its memory bandwidth
  halo          two exchanges per step (the density's guard sum, one field; the field's guard
                fill, E_x and E_y), 8 neighbours in 2D, `guard` = 2 node layers of 8 bytes
  migration     the leavers: particles within v_th dt of a block face (a Maxwellian's mean
                |v_x| dt = v_th dt sqrt(2 / pi) per face), 40 bytes each (x, y, vx, vy, id), one
                message per neighbour that receives any (at most 8), plus one alltoall of counts
                (P - 1 messages of 32 bytes per rank: the library's alltoall)
  FFT solve     FFTW's slab transforms: 3 all-to-alls per step (the density forward, E_x and
                E_y back), each rank sending its cells' complex values (16 bytes each, (P-1)/P
                of them) in P - 1 messages; a slab needs a row: P <= ny
  local solve   (a multigrid V-cycle on the decomposed grid, e.g. PETSc's DMDA + KSP): 10
                V-cycles per solve, each 2 guard fills of one field on each of log2(block side)
                levels, and a coarse solve gathered over the ranks (log2 P latencies)
  GPUs          --gpu-ns: ns per particle-step of one GPU (a stated assumption, not measured
                here: no GPU on this machine), the solve and halo packing 20x faster than a core

The output: the check (model beside the measurements of each run) and the prediction for the
weak series' per-rank problem at 1 to 1,024 ranks, with each solver, and where each stops
scaling (its communication exceeds the rest of the step).
"""
import argparse
import json
import math
import os
import sys


def load(out):
    runs = []
    for line in open(os.path.join(out, "runs.txt")):
        name, ranks, layout, nx, ny, n = line.split()
        s = json.load(open(os.path.join(out, name, "summary.json")))
        runs.append(dict(name=name, ranks=int(ranks), layout=layout, nx=int(nx), ny=int(ny),
                         n=int(n), s=s))
    return runs


def per_step(s, *phases):
    return sum(s["phase_seconds"].get(p, 0.0) for p in phases) / s["steps"]


def process_grid(p):
    """The near-square 2D process grid (px, py), px >= py, as MPI_Dims_create gives."""
    best = (p, 1)
    for py in range(1, int(math.isqrt(p)) + 1):
        if p % py == 0:
            best = (p // py, py)
    return best


class Model:
    def __init__(self, calib, vth_dt, alpha, beta, cores, guard=2):
        cells = calib["nx"] * calib["ny"]
        s = calib["s"]
        self.c_p = per_step(s, "deposit", "gather", "push", "sort", "migration") / calib["n"]
        self.c_s = per_step(s, "solve") / (cells * math.log2(cells))
        self.c_g = per_step(s, "reduce", "fill") / cells
        self.vth_dt, self.alpha, self.beta, self.cores, self.guard = vth_dt, alpha, beta, cores, guard

    def msg(self, count, nbytes):
        return count * self.alpha + nbytes / self.beta

    def step(self, p, nx, ny, n, solver="fft", particle_scale=1.0, field_scale=1.0, node=None):
        """node: how much slower a rank's work runs when P ranks share this node (measured on
        the replicated runs); by default the ranks beyond the cores share them."""
        px, py = process_grid(p)
        lnx, lny = nx / px, ny / py
        share = node if node else (max(1.0, p / self.cores) if self.cores else 1.0)
        cells = nx * ny
        work = (self.c_p * particle_scale * n / p + self.c_g * field_scale * cells / p) * share
        t = {"work": work}
        if p == 1:
            t["halo"] = t["migration"] = 0.0
        else:
            neighbours = 8 if py > 1 else 2
            face = lambda fields: fields * 8 * self.guard * (2 * lnx + 2 * lny) / neighbours
            t["halo"] = self.msg(neighbours, neighbours * face(1)) + self.msg(neighbours, neighbours * face(2))
            crossing = self.vth_dt * math.sqrt(2 / math.pi)  # per face, in cells (cell = 1)
            faces = (2 if px > 1 else 0) * lny + (2 if py > 1 else 0) * lnx
            leavers = n / cells * crossing * faces
            t["migration"] = self.msg(min(neighbours, 8), 40 * leavers) + self.msg(p - 1, 32 * (p - 1))
        if solver == "fft":
            solve = self.c_s * field_scale * cells * math.log2(cells) / p * share
            comm = 0.0 if p == 1 else 3 * self.msg(p - 1, 16 * cells / p * (p - 1) / p)
            t["solve"] = solve + comm
            t["solve_comm"] = comm
        else:
            levels = max(1, int(math.log2(max(2, min(lnx, lny)))))
            # Smoothing work: about 10 V-cycles of 4 sweeps over the levels' cells (4/3 of the
            # finest), each sweep like the FFT's work per cell without the log.
            solve = 10 * 4 * (4 / 3) * self.c_s * field_scale * cells / p * share
            comm = 0.0 if p == 1 else 10 * (2 * levels * self.msg(8, 8 * 8 * (lnx + lny) / 4)
                                            + math.log2(p) * self.alpha)
            t["solve"] = solve + comm
            t["solve_comm"] = comm
        t["total"] = t["work"] + t["halo"] + t["migration"] + t["solve"]
        return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--alpha", type=float, default=1.5e-6)
    ap.add_argument("--beta", type=float, default=25e9)
    ap.add_argument("--cores", type=int, default=os.cpu_count())
    ap.add_argument("--gpu-ns", type=float, default=0.05)
    a = ap.parse_args()
    all_runs = load(a.out)
    runs = [r for r in all_runs if r["layout"] == "decompose"]
    if not runs:
        sys.exit("scaling_model.py: no decomposed runs in " + a.out)
    series = {}
    for r in runs:
        series.setdefault(r["name"].rsplit("-", 1)[0], []).append(r)
    print("\nThe model beside the measurements (this machine: alpha 2 us, beta 5 GB/s, a rank's "
          "work slowed as the replicated runs' at as many ranks)")
    print(f"{'run':<28} {'ranks':>5} {'measured ms':>12} {'model ms':>9} {'model/meas':>10}")
    models = {}
    for name, rs in series.items():
        calib = min(rs, key=lambda r: r["ranks"])
        if calib["ranks"] != 1:
            continue
        s = calib["s"]
        vth_dt = s["config"].get("vth", 1.0) * s["config"].get("dt", 0.1) * calib["nx"] / (
            2 * math.pi / s["config"].get("k", 2 * math.pi / calib["nx"]))
        m = Model(calib, vth_dt, 2e-6, 5e9, a.cores)
        models[name] = (m, calib)
        replicated = {r["ranks"]: r for r in all_runs if r["layout"] == "replicate"
                      and r["name"].startswith(name.split("-")[0] + "-")}

        def node_factor(r):
            rep, rep1 = replicated.get(r["ranks"]), replicated.get(1)
            if not rep or not rep1:
                return None
            work = lambda q: per_step(q["s"], "deposit", "gather", "push", "sort") / (q["n"] / q["ranks"])
            return work(rep) / work(rep1)

        for r in sorted(rs, key=lambda r: r["ranks"]):
            meas = 1e3 * r["s"]["seconds"] / r["s"]["steps"]
            pred = 1e3 * m.step(r["ranks"], r["nx"], r["ny"], r["n"], node=node_factor(r))["total"]
            print(f"{r['name']:<28} {r['ranks']:>5} {meas:>12.1f} {pred:>9.1f} {pred / meas:>10.2f}")
    if "weak-decompose" not in models:
        return
    m, calib = models["weak-decompose"]
    m.alpha, m.beta, m.cores = a.alpha, a.beta, 0  # a cluster: a core per rank
    nx0, ny0, n0 = calib["nx"], calib["ny"], calib["n"]
    print(f"\nWeak scaling predicted on a cluster (alpha {a.alpha * 1e6:.1f} us, beta "
          f"{a.beta / 1e9:.0f} GB/s, a core per rank): {nx0} x {ny0} cells and {n0} particles "
          "per rank")
    print(f"{'ranks':>6} {'cells':>13} {'fft ms':>8} {'eff':>5} {'fft comm':>9} "
          f"{'local ms':>9} {'eff':>5} {'halo ms':>8} {'migr ms':>8}")
    t1 = {sol: m.step(1, nx0, ny0, n0, sol)["total"] for sol in ("fft", "local")}
    limits = {}
    p = 1
    while p <= 1024:
        px, py = process_grid(p)
        nx, ny, n = nx0 * px, ny0 * py, n0 * p
        row = {sol: m.step(p, nx, ny, n, sol) for sol in ("fft", "local")}
        for sol in ("fft", "local"):
            t = row[sol]
            if sol not in limits and t["solve_comm"] + t["halo"] + t["migration"] > t["total"] / 2:
                limits[sol] = p
            if sol == "fft" and p > ny and "fft-slabs" not in limits:
                limits["fft-slabs"] = p
        f, l = row["fft"], row["local"]
        print(f"{p:>6} {nx * ny:>13} {1e3 * f['total']:>8.1f} {t1['fft'] / f['total']:>5.2f} "
              f"{1e3 * f['solve_comm']:>9.2f} {1e3 * l['total']:>9.1f} "
              f"{t1['local'] / l['total']:>5.2f} {1e3 * f['halo']:>8.3f} {1e3 * f['migration']:>8.3f}")
        p *= 2
    for sol, what in (("fft", "the FFT solve"), ("local", "the local (multigrid) solve")):
        at = limits.get(sol)
        print(f"{what}: communication passes half the step at {at} ranks" if at else
              f"{what}: communication stays under half the step to 1,024 ranks")
    # GPUs: the particle work at --gpu-ns per particle-step, the rest 20x faster than a core.
    g = Model(calib, m.vth_dt, a.alpha, a.beta, 0)
    g.c_p = a.gpu_ns * 1e-9
    g.c_s /= 20
    g.c_g /= 20
    print(f"\nOn GPUs (assumed {a.gpu_ns} ns per particle-step per GPU; a rank per GPU, the same "
          "per-rank problem):")
    for p in (1, 8, 64, 512, 1024):
        px, py = process_grid(p)
        t = g.step(p, nx0 * px, ny0 * py, n0 * p, "fft")
        tl = g.step(p, nx0 * px, ny0 * py, n0 * p, "local")
        print(f"{p:>6} GPUs: fft {1e3 * t['total']:.2f} ms/step (communication "
              f"{1e3 * (t['total'] - t['work'] - t['solve'] + t['solve_comm']):.2f}), local "
              f"{1e3 * tl['total']:.2f} ms/step")


if __name__ == "__main__":
    main()
