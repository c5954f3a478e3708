"""Reads the series write_series wrote, with the ecosystem's readers: openPMD-api (the values
and attributes), h5py (the raw file), and the openPMD validator (the standard's rules).

Usage: python check_series.py <folder> <ranks>   (exit 0: all good)
"""
import glob
import os
import subprocess
import sys

import h5py
import numpy as np
import openpmd_api as io

folder, ranks = sys.argv[1], int(sys.argv[2])
nx, ny = 24, 18
files = sorted(glob.glob(os.path.join(folder, "data_*.h5")))
assert files, f"no series files in {folder}"
assert not glob.glob(os.path.join(folder, ".*.tmp")), "a temporary file was left behind"

# 1. The validator (openPMD-validator's HDF5 checker): no errors.
for f in files:
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "openPMD_check_h5"),
                          "-i", f], capture_output=True, text=True)
    print(out.stdout.strip().splitlines()[-1] if out.stdout else out.stderr)
    assert out.returncode == 0, f"validator failed on {f}:\n{out.stdout}\n{out.stderr}"

# 2. openPMD-api: every value as written.
series = io.Series(os.path.join(folder, "data_%T.h5"), io.Access.read_only)
steps = sorted(series.iterations)
assert steps == [10 * s for s in range(len(files))], steps
i, j = np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij")
expected_rho = (i * 1000 + j).astype(float)
counts = [10 + r for r in range(ranks)]
ids = np.concatenate([np.arange(100 * r, 100 * r + counts[r]) for r in range(ranks)])
for step in steps:
    it = series.iterations[step]
    assert abs(it.time - 0.1 * step) < 1e-12 and abs(it.dt - 0.1) < 1e-12
    rho = it.meshes["rho"]
    E = it.meshes["E"]
    assert list(rho.axis_labels) == ["x", "y"]
    assert list(rho.grid_spacing) == [0.5, 0.25]
    r = rho[io.Mesh_Record_Component.SCALAR].load_chunk()
    ex = E["x"].load_chunk()
    ey = E["y"].load_chunk()
    e = it.particles["electrons"]
    x = e["position"]["x"].load_chunk()
    px = e["momentum"]["x"].load_chunk()
    py = e["momentum"]["y"].load_chunk()
    assert e["momentum"]["y"].dtype == np.float32 and e["momentum"]["x"].dtype == np.float64
    w = e["weighting"][io.Record_Component.SCALAR].load_chunk()
    pid = e["id"][io.Record_Component.SCALAR].load_chunk()
    patches = e.particle_patches
    num = patches["numParticles"][io.Record_Component.SCALAR].load()
    series.flush()
    assert list(num) == counts, num
    assert np.array_equal(r, expected_rho), "rho"
    assert np.array_equal(ex, expected_rho + 0.5) and np.array_equal(ey, -expected_rho), "E"
    assert np.array_equal(pid, ids), pid
    assert np.allclose(x, 0.001 * ids, rtol=0, atol=1e-15) and np.array_equal(px, ids.astype(float))
    assert py.dtype == np.float32 and np.array_equal(py, -ids.astype(np.float32)), "p_y as float32"
    assert np.allclose(w, 1.0 + ids / 10.0, rtol=0, atol=1e-15)
    # The ions: positionOffset int32 cells, position float32 offsets in cells, each with the
    # cell size as unitSI, so position + positionOffset in SI is (offset + cell) * cell size.
    ions = it.particles["ions"]
    for axis, size, n_cells, step_off, period in (("x", 0.5, nx, 0.125, 8),
                                                  ("y", 0.25, ny, 0.0625, 16)):
        pos, off = ions["position"][axis], ions["positionOffset"][axis]
        assert pos.dtype == np.float32 and off.dtype == np.int32, (pos.dtype, off.dtype)
        assert pos.unit_SI == size and off.unit_SI == size, (pos.unit_SI, off.unit_SI)
        p_, o_ = pos.load_chunk(), off.load_chunk()
        series.flush()
        assert np.array_equal(o_, (ids % n_cells).astype(np.int32)), axis
        assert np.array_equal(p_, (step_off * (ids % period)).astype(np.float32)), axis
        whole = p_.astype(float) * pos.unit_SI + o_.astype(float) * off.unit_SI
        assert np.allclose(whole, (ids % n_cells + step_off * (ids % period)) * size,
                           rtol=0, atol=1e-12), axis
    # The tracers (a ParticleSet written by write_particles): openPMD's records in float32,
    # the weighting column, and the set's named columns as records of their own types.
    t = it.particles["tracers"]
    tx, tvy = t["position"]["x"], t["momentum"]["y"]
    assert tx.dtype == np.float32 and tvy.dtype == np.float32, (tx.dtype, tvy.dtype)
    named = {name: t[name][io.Record_Component.SCALAR] for name in ("tag", "birth",
                                                                    "charge_fraction")}
    assert named["tag"].dtype == np.int32 and named["birth"].dtype == np.int64
    assert named["charge_fraction"].dtype == np.float32
    tw = t["weighting"][io.Record_Component.SCALAR]
    loaded = {k: v.load_chunk() for k, v in named.items()}
    tx_, tvy_, tw_ = tx.load_chunk(), tvy.load_chunk(), tw.load_chunk()
    tid = t["id"][io.Record_Component.SCALAR].load_chunk()
    series.flush()
    assert np.array_equal(tid, ids), tid
    assert np.array_equal(tx_, (0.5 + ids).astype(np.float32))
    assert np.array_equal(tvy_, -ids.astype(np.float32))
    assert np.array_equal(tw_, 2.0 + ids)
    assert np.array_equal(loaded["tag"], (ids % 7).astype(np.int32))
    assert np.array_equal(loaded["birth"], 10 * ids.astype(np.int64))
    assert np.array_equal(loaded["charge_fraction"], (0.5 * ids).astype(np.float32))
    print(f"openPMD-api: iteration {step}: rho {r.shape}, E, {len(pid)} electrons, ions "
          "(cells and offsets) and tracers (named columns) as written")
series.close()

# 3. h5py: the raw layout.
with h5py.File(files[0], "r") as f:
    assert f.attrs["openPMD"].decode() == "1.1.0"
    assert f.attrs["iterationEncoding"].decode() == "fileBased"
    assert f["data/0/meshes/rho"].shape == (nx, ny)
    assert f["data/0/particles/electrons/id"].dtype == np.uint64
print("h5py: layout as written")
