#!/usr/bin/env python3
"""Draws the x-v phase space of a PIC run at several times, and the field E(x) (1D), the
charge density rho(x, y) (2D) or its slice through the middle of the z axis (3D), from the
run's openPMD files, read with openPMD-api.

    python scripts/plot_phase_space.py out/two_stream     # writes out/two_stream/phase_space.png

The run must have been written with `pic --output <folder> --output-every N`.  Needs
openpmd-api, numpy and matplotlib (scripts/openpmd_venv.sh makes a virtual environment with
them).
"""
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import openpmd_api as io  # noqa: E402


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    folder = Path(argv[1])
    files = sorted((folder / "openpmd").glob("data_*.h5"))
    if not files:
        print(f"plot_phase_space: no openPMD files in {folder}/openpmd (run pic with "
              "--output-every N)", file=sys.stderr)
        return 1
    series = io.Series(str(folder / "openpmd" / "data_%T.h5"), io.Access.read_only)
    steps = sorted(series.iterations)
    chosen = [steps[round(i * (len(steps) - 1) / 3)] for i in range(4)] if len(steps) >= 4 else steps
    fig, axes = plt.subplots(2, len(chosen), figsize=(4 * len(chosen), 7), squeeze=False)
    for col, step in enumerate(chosen):
        it = series.iterations[step]
        e = it.particles["electrons"]
        # position + positionOffset, each in its unitSI (mixed precision: the offset in the
        # cell and the cell; else positionOffset is a constant 0)
        pos, off = e["position"]["x"], e["positionOffset"]["x"]
        x_in, x_off = pos.load_chunk(), off.load_chunk()
        v = e["momentum"]["x"].load_chunk()
        rho = it.meshes["rho"][io.Mesh_Record_Component.SCALAR]
        rho_data = rho.load_chunk()
        ex = it.meshes["E"]["x"].load_chunk()
        spacing = it.meshes["E"].grid_spacing
        series.flush()
        x = x_in.astype(np.float64) * pos.unit_SI + x_off.astype(np.float64) * off.unit_SI
        ax = axes[0][col]
        vmax = 1.1 * np.percentile(np.abs(v), 99.9) if len(v) else 1.0
        h, xe, ve = np.histogram2d(x, v, bins=(128, 128), range=((x.min(), x.max()), (-vmax, vmax)))
        ax.imshow(h.T, origin="lower", aspect="auto", cmap="magma",
                  extent=(xe[0], xe[-1], ve[0], ve[-1]))
        ax.set_title(f"t = {it.time:.1f}")
        ax.set_xlabel("x")
        ax.set_ylabel("v_x")
        ax = axes[1][col]
        if rho_data.ndim == 1:
            xs = np.arange(ex.shape[0]) * spacing[0]
            ax.plot(xs, ex)
            ax.set_xlabel("x")
            ax.set_ylabel("E_x")
        else:
            title = "rho(x, y)"
            if rho_data.ndim == 3:  # the slice z = middle
                mid = rho_data.shape[2] // 2
                rho_data = rho_data[:, :, mid]
                title = f"rho(x, y, z = {mid * spacing[2]:.2f})"
            ax.imshow(rho_data.T, origin="lower", aspect="auto", cmap="RdBu_r",
                      extent=(0, rho_data.shape[0] * spacing[0], 0, rho_data.shape[1] * spacing[1]))
            ax.set_xlabel("x")
            ax.set_ylabel("y")
            ax.set_title(title)
    series.close()
    fig.tight_layout()
    out = folder / "phase_space.png"
    fig.savefig(out, dpi=90)
    print(f"wrote {out} ({len(chosen)} times of {len(steps)} in the series, read with openPMD-api "
          f"{io.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
