#!/usr/bin/env bash
# Checkpoints and restart of the mini-app, with the ecosystem's openPMD validator:
#  1. a run killed with SIGKILL after its first checkpoint leaves only complete files under
#     final names (each passes the validator; at most a hidden temporary file besides);
#  2. restarted from that checkpoint, it gives the uninterrupted run's energy history bit for
#     bit (--deterministic, the same rank count);
#  3. restarted at another rank count, it completes with the same physics (to rounding);
#  4. a truncated or corrupted checkpoint is refused with a clear error;
#  5. output problems are errors before the time loop (an earlier series without
#     --overwrite; a disk that fills up at the first write);
#  6. a restart refuses a changed physics option (--host-step) by name, and a checkpoint of the
#     separate step restarts with it (summary.json says so), saying what the restart changed;
#  7. 3D, decomposed: checkpoints and openPMD output pass the validator, openPMD-api reads the
#     3D meshes and particles, the restart continues bit for bit, the picture draws a slice;
#  8. single precision: float32 particle records in the output and the checkpoint (validated,
#     read by openPMD-api), a decomposed restart bit for bit;
#  9. mixed precision: float32 offsets and int32 cells (positionOffset, unitSI the cell size),
#     the positions single precision's to rounding, a decomposed restart bit for bit (the
#     deterministic scalar loop, and the float lanes: 2D mixed, 3D single and mixed).
# Usage: run_restart_checks.sh <pic> <work dir> <venv> <mpiexec, or "" without MPI>
set -uo pipefail
pic="$1" work="$2" venv="$3" mpiexec="$4"
root="$(cd "$(dirname "$0")/../.." && pwd)"
check_h5="$venv/bin/openPMD_check_h5"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
args=(--deterministic --no-progress --steps 150 --particles 400000 --checkpoint-every 50)

echo "== the uninterrupted run"
"$pic" "${args[@]}" --output whole >whole.log 2>&1 || { cat whole.log; fail "uninterrupted run"; }

echo "== a run killed with SIGKILL after its first checkpoint"
"$pic" "${args[@]}" --output killed >killed.log 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  [ -e killed/checkpoints/checkpoint_50.h5 ] && break
  sleep 0.05
done
[ -e killed/checkpoints/checkpoint_50.h5 ] || { kill -9 "$pid"; fail "no checkpoint appeared"; }
# Then, as soon as the next checkpoint's temporary file appears: killed in the middle of its
# write (or, if the poll misses it, a little later).
deadline=$((SECONDS + 20))
while [ "$SECONDS" -lt "$deadline" ]; do
  [ -e killed/checkpoints/.checkpoint_100.h5.tmp ] && break
  [ -e killed/checkpoints/checkpoint_100.h5 ] && break
done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
if [ -e killed/checkpoints/.checkpoint_100.h5.tmp ]; then
  echo "killed during the write of checkpoint_100 ($(stat -c %s killed/checkpoints/.checkpoint_100.h5.tmp) bytes written)"
  [ -e killed/checkpoints/checkpoint_100.h5 ] && fail "a partial checkpoint_100.h5 under its final name"
fi
ls -la killed/checkpoints
for f in killed/checkpoints/*.h5; do
  "$check_h5" -i "$f" | tail -1
  "$check_h5" -i "$f" >/dev/null || fail "$f does not pass the validator after the kill"
done
for f in $(ls -A killed/checkpoints); do
  case "$f" in
    checkpoint_*.h5 | .checkpoint_*.h5.tmp) ;;
    *) fail "unexpected file after the kill: $f" ;;
  esac
done

echo "== restarted from the last complete checkpoint: the same energies, bit for bit"
last=$(ls killed/checkpoints/checkpoint_*.h5 | sort -t_ -k2 -n | tail -1)
"$pic" --no-progress --restart "$last" --output resumed >resumed.log 2>&1 || { cat resumed.log; fail "restart"; }
cmp whole/energy.csv resumed/energy.csv || fail "the restarted run's energy history differs"
echo "energy.csv identical to the uninterrupted run's ($(wc -l <whole/energy.csv) lines)"

echo "== a restart refuses a changed physics option and keeps the checkpoint's particle step"
if "$pic" --no-progress --restart "$last" --host-step separate --output refused >refused.log 2>&1; then
  fail "a restart ran with --host-step separate from a fused checkpoint"
fi
grep -q -- "--host-step separate: the checkpoint was made with --host-step fused" refused.log ||
  { cat refused.log; fail "no clear message naming --host-step"; }
"$pic" --no-progress --host-step separate --steps 20 --particles 20000 --checkpoint-every 10 \
  --output separate >separate.log 2>&1 || { cat separate.log; fail "a run with --host-step separate"; }
"$pic" --no-progress --restart separate/checkpoints/checkpoint_10.h5 --output separate_resumed \
  >separate_resumed.log 2>&1 || { cat separate_resumed.log; fail "its restart"; }
grep -q -- "restart: --output separate_resumed (the checkpoint's run: separate)" separate_resumed.log ||
  { cat separate_resumed.log; fail "the restart does not say what it changed"; }
for f in separate/summary.json separate_resumed/summary.json; do
  grep -q '"host-step": "separate"' "$f" || { cat "$f"; fail "$f: not the separate step's configuration"; }
  grep -q '"step": "builtin host"' "$f" || { cat "$f"; fail "$f: not the separate passes"; }
done
cmp separate/energy.csv separate_resumed/energy.csv || fail "the separate step's restart differs"

if [ -z "$mpiexec" ]; then
  echo "== (built without MPI: the restart at another rank count is not run)"
else
echo "== restarted at 2 ranks from the 1-rank checkpoint"
"$mpiexec" -n 2 --oversubscribe "$pic" --no-progress --restart killed/checkpoints/checkpoint_50.h5 \
  --output two >two.log 2>&1 || { cat two.log; fail "restart at 2 ranks"; }
python3 - whole/energy.csv two/energy.csv <<'PY' || fail "2-rank restart: other physics"
import csv, sys
a = list(csv.DictReader(open(sys.argv[1]))); b = list(csv.DictReader(open(sys.argv[2])))
assert len(a) == len(b), (len(a), len(b))
worst = max(abs(float(x["total_energy"]) - float(y["total_energy"])) / abs(float(x["total_energy"]))
            for x, y in zip(a, b))
print(f"2 ranks: total energy within {worst:.1e} of the 1-rank run")
assert worst < 1e-10
PY
fi

echo "== a truncated and a corrupted checkpoint are refused"
cp killed/checkpoints/checkpoint_50.h5 truncated.h5
truncate -s $(( $(stat -c %s truncated.h5) / 2 )) truncated.h5
if "$pic" --no-progress --restart truncated.h5 --output t >t.log 2>&1; then fail "a truncated checkpoint was accepted"; fi
grep -E "truncated|cannot open" t.log || { cat t.log; fail "no clear message for a truncated checkpoint"; }
cp killed/checkpoints/checkpoint_50.h5 corrupted.h5
"$venv/bin/python" - corrupted.h5 <<'PY' || fail "could not corrupt the copy"
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    x = f["data/50/particles/electrons/position/x"]
    x[7] = x[7] + 1e-3
PY
if "$pic" --no-progress --restart corrupted.h5 --output c >c.log 2>&1; then fail "a corrupted checkpoint was accepted"; fi
grep "checksum" c.log || { cat c.log; fail "no clear message for a corrupted checkpoint"; }

echo "== output problems are errors before the time loop"
if "$pic" --no-progress --steps 10 --output whole --output-every 5 >o.log 2>&1; then fail "an earlier output was replaced"; fi
grep -E "earlier run|--overwrite" o.log || { cat o.log; fail "no clear message for an earlier output"; }
# A disk that fills at the first write: a 64 KiB file size limit (SIGXFSZ ignored, so the
# write fails with EFBIG instead of killing the process).
( trap '' XFSZ; ulimit -f 64; "$pic" --no-progress --steps 20 --particles 400000 --output full \
    --output-every 5 >full.log 2>&1 ); rc=$?
[ "$rc" -ne 0 ] || fail "a full disk went unnoticed"
grep -E "HDF5|openPMD" full.log || { cat full.log; fail "no clear message for a full disk"; }
grep -q "step 1/" full.log && fail "the run went on after the failed write"
ls full/openpmd | grep -v '^\.' | grep -q . && fail "a partial file under a final name"
echo "== 3D: checkpoints and openPMD output of a decomposed run, a restart bit for bit"
# (A re-sort at the checkpoint step: --sort-every 20.)
three=(--dim 3 --cells 16 --cells-y 4 --cells-z 4 --particles 32768 --deterministic --no-progress
       --steps 40 --checkpoint-every 20 --output-every 20 --sort-every 20)
launch=()
[ -n "$mpiexec" ] && launch=("$mpiexec" -n 2 --oversubscribe)
"${launch[@]}" "$pic" "${three[@]}" --decompose --output d3 >d3.log 2>&1 || { cat d3.log; fail "3D run"; }
for f in d3/checkpoints/checkpoint_20.h5 d3/openpmd/data_20.h5; do
  "$check_h5" -i "$f" >/dev/null || fail "$f does not pass the validator"
done
"$venv/bin/python" - d3/openpmd/data_20.h5 <<'PY' || fail "3D output: not what openPMD-api reads"
import sys
import openpmd_api as io
s = io.Series(sys.argv[1], io.Access.read_only)
it = s.iterations[20]
rho = it.meshes["rho"][io.Mesh_Record_Component.SCALAR]
e = it.particles["electrons"]
assert list(rho.shape) == [16, 4, 4], rho.shape
assert list(it.meshes["E"]) == ["x", "y", "z"] or sorted(it.meshes["E"]) == ["x", "y", "z"]
assert sorted(e["position"]) == ["x", "y", "z"], list(e["position"])
assert e["position"]["z"].shape == [32768], e["position"]["z"].shape
print("3D output read by openPMD-api: rho", rho.shape, ", E x/y/z, 32768 particles in x/y/z")
PY
"${launch[@]}" "$pic" --no-progress --restart d3/checkpoints/checkpoint_20.h5 --output d3r \
  >d3r.log 2>&1 || { cat d3r.log; fail "3D restart"; }
cmp d3/energy.csv d3r/energy.csv || fail "the 3D restart's energy history differs"
echo "3D restart: energy.csv identical to the uninterrupted run's"
if "$venv/bin/python" -c "import matplotlib" 2>/dev/null; then
  "$venv/bin/python" "$root/scripts/plot_phase_space.py" d3 || fail "3D picture"
  test -s d3/phase_space.png || fail "no 3D picture"
fi
echo "== single precision: float32 records, a decomposed 2D restart bit for bit"
single=(--dim 2 --cells 32 --particles 65536 --precision single --deterministic --no-progress
        --steps 40 --checkpoint-every 20 --output-every 20 --sort-every 20)
"${launch[@]}" "$pic" "${single[@]}" --decompose --output s2 >s2.log 2>&1 || { cat s2.log; fail "single-precision run"; }
grep -q "particles in single precision (24 bytes each)" s2.log || { cat s2.log; fail "not single precision"; }
for f in s2/checkpoints/checkpoint_20.h5 s2/openpmd/data_20.h5; do
  "$check_h5" -i "$f" >/dev/null || fail "$f does not pass the validator"
done
"$venv/bin/python" - s2/openpmd/data_20.h5 s2/checkpoints/checkpoint_20.h5 <<'PY' || fail "single precision: not float32 records"
import sys
import numpy as np
import openpmd_api as io
for path in sys.argv[1:]:
    s = io.Series(path, io.Access.read_only)
    it = s.iterations[20]
    e = it.particles["electrons"]
    for record in ("position", "momentum"):
        for axis in ("x", "y"):
            c = e[record][axis]
            assert c.dtype == np.float32, (path, record, axis, c.dtype)
            v = c.load_chunk()
            s.flush()
            assert v.dtype == np.float32 and v.shape == (65536,), (v.dtype, v.shape)
    if "checkpoint" not in path:  # the output's fields stay double
        assert it.meshes["rho"][io.Mesh_Record_Component.SCALAR].dtype == np.float64
print("single precision: position and momentum float32 (fields float64) in the output and the checkpoint")
PY
"${launch[@]}" "$pic" --no-progress --restart s2/checkpoints/checkpoint_20.h5 --output s2r \
  >s2r.log 2>&1 || { cat s2r.log; fail "single-precision restart"; }
grep -q "particles in single precision" s2r.log || fail "the restart left single precision"
cmp s2/energy.csv s2r/energy.csv || fail "the single-precision restart's energy history differs"
echo "single-precision restart: energy.csv identical to the uninterrupted run's"
echo "== mixed precision: cells and float offsets, a decomposed 2D restart bit for bit"
"${launch[@]}" "$pic" "${single[@]/single/mixed}" --decompose --output m2 >m2.log 2>&1 || { cat m2.log; fail "mixed-precision run"; }
grep -q "particles in mixed precision (32 bytes each)" m2.log || { cat m2.log; fail "not mixed precision"; }
for f in m2/checkpoints/checkpoint_20.h5 m2/openpmd/data_20.h5; do
  "$check_h5" -i "$f" >/dev/null || fail "$f does not pass the validator"
done
"$venv/bin/python" - m2/openpmd/data_0.h5 m2/checkpoints/checkpoint_20.h5 s2/openpmd/data_0.h5 <<'PY' || fail "mixed precision: not cells and offsets"
import sys
import numpy as np
import openpmd_api as io
def load(path, step):
    s = io.Series(path, io.Access.read_only)
    e = s.iterations[step].particles["electrons"]
    out = {}
    for record in ("position", "positionOffset", "momentum"):
        for axis in ("x", "y"):
            c = e[record][axis]
            out[record, axis] = (c, c.load_chunk(), c.unit_SI)
    ids = e["id"][io.Record_Component.SCALAR].load_chunk()
    s.flush()
    return out, ids
for path, step in ((sys.argv[1], 0), (sys.argv[2], 20)):
    r, _ = load(path, step)
    for axis in ("x", "y"):
        c, v, unit = r["position", axis]
        assert c.dtype == np.float32 and v.min() >= 0 and v.max() < 1, (path, axis, c.dtype)
        c, k, unit_k = r["positionOffset", axis]
        assert c.dtype == np.int32 and k.min() >= 0 and k.max() < 32, (path, axis, c.dtype)
        assert unit == unit_k and abs(unit - 2 * np.pi / 0.5 / 32) < 1e-12, (unit, unit_k)
        assert r["momentum", axis][0].dtype == np.float32
# The same particles as single precision's at step 0: position + positionOffset within a
# float's rounding of the box.
m, mid = load(sys.argv[1], 0)
f, fid = load(sys.argv[3], 0)
om, of = np.argsort(mid), np.argsort(fid)
assert (mid[om] == fid[of]).all()
for axis in ("x", "y"):
    xm = (m["position", axis][1].astype(np.float64) * m["position", axis][2] +
          m["positionOffset", axis][1] * m["positionOffset", axis][2])[om]
    xf = f["position", axis][1].astype(np.float64)[of] * f["position", axis][2]
    box = 2 * np.pi / 0.5
    d = np.abs(xm - xf)
    d = np.minimum(d, box - d)
    assert d.max() < 1e-6 * box, (axis, d.max())
print("mixed precision: float32 offsets in [0, 1), int32 cells, the unit the cell size, the "
      "positions single precision's to a float's rounding")
PY
"${launch[@]}" "$pic" --no-progress --restart m2/checkpoints/checkpoint_20.h5 --output m2r \
  >m2r.log 2>&1 || { cat m2r.log; fail "mixed-precision restart"; }
grep -q "particles in mixed precision" m2r.log || fail "the restart left mixed precision"
cmp m2/energy.csv m2r/energy.csv || fail "the mixed-precision restart's energy history differs"
echo "mixed-precision restart: energy.csv identical to the uninterrupted run's"
# Without --deterministic: the fused step's float lanes, whose deposit alone (the restart's
# first deposit) is the push's, bit for bit.  Real grids sum in particle order, so the run
# keeps one order: the replicated grid (a decomposed one's push deposits before the migration,
# a restart after it) and no re-sort (one at the checkpoint's step reorders the restart's sum
# but not the uninterrupted run's, which its last push made); only integer grids
# (--deterministic, above) make any order exact.
lanes=(--dim 2 --cells 32 --particles 65536 --precision mixed --no-progress --steps 40
       --checkpoint-every 20 --sort-every 0)
# The same in 3D (the 3D float lanes, unpaired grids), single and mixed.
lanes3=(--dim 3 --cells 16 --cells-y 8 --cells-z 8 --particles 65536 --no-progress --steps 40
        --checkpoint-every 20 --sort-every 0)
for case in "m2f ${lanes[*]}" "s3f ${lanes3[*]} --precision single" \
            "m3f ${lanes3[*]} --precision mixed"; do
  read -r out args <<<"$case"
  # shellcheck disable=SC2086
  "${launch[@]}" "$pic" $args --output "$out" >"$out.log" 2>&1 || { cat "$out.log"; fail "$out: float-lane run"; }
  grep -q "particle step fused host (float lanes)," "$out.log" || { cat "$out.log"; fail "$out: not the float lanes"; }
  "${launch[@]}" "$pic" --no-progress --restart "$out/checkpoints/checkpoint_20.h5" --output "${out}r" \
    >"${out}r.log" 2>&1 || { cat "${out}r.log"; fail "$out: float-lane restart"; }
  cmp "$out/energy.csv" "${out}r/energy.csv" || fail "$out: the float lanes' restart's energy history differs"
  echo "$out (float lanes): the restart's energy.csv identical to the uninterrupted run's"
done
echo "all restart checks passed"
