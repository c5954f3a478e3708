"""Reference values from the Python cunumpy (PyPI cunumpy==0.7.1, NumPy backend), the
behavioural oracle of the C++ library: tests/oracle/test_python_oracle.cpp computes the same
quantities and compares them bit for bit (the normals within a few ulps, as the reference allows).

    python make_reference.py OUT.txt

Each line: <name> <kind> <count> <values...>; kind f (floats as float.hex) or u (unsigned
integers).  Inputs are formulas of the index, so both sides build them without a shared RNG.
"""
import sys

import numpy as np
import cunumpy as xp


def emit(out, name, values):
    a = np.asarray(values).ravel()
    if a.dtype.kind == "f":
        out.write(f"{name} f {a.size} " + " ".join(float(v).hex() for v in a) + "\n")
    else:
        out.write(f"{name} u {a.size} " + " ".join(str(int(v)) for v in a) + "\n")


def main(path):
    n = 1000
    ids = np.arange(n, dtype=np.uint64)
    with open(path, "w") as out:
        out.write(f"version s 1 {xp.__version__}\n")
        for seed, counter in ((7, 3), ((1 << 40) + 3, (1 << 33) + 1)):
            tag = f"{seed}_{counter}"
            emit(out, f"uniform_{tag}", xp.rng.philox_uniform(seed, ids, counter))
            u0, u1 = xp.rng.philox_uniform2(seed, ids, counter)
            emit(out, f"uniform2a_{tag}", u0)
            emit(out, f"uniform2b_{tag}", u1)
            emit(out, f"normal_{tag}", xp.rng.philox_normal(seed, ids, counter))
            z0, z1 = xp.rng.philox_normal2(seed, ids, counter)
            emit(out, f"normal2a_{tag}", z0)
            emit(out, f"normal2b_{tag}", z1)
        i = np.arange(n, dtype=np.float64)
        p2 = np.stack([(i * 0.6180339887498949) % 1.0, (i * 0.7548776662466927) % 1.0], axis=1)
        p3 = np.stack([(i * 0.6180339887498949) % 1.0, (i * 0.7548776662466927) % 1.0,
                       (i * 0.5698402909980532) % 1.0], axis=1)
        emit(out, "morton2_10", xp.algorithms.morton_keys(p2, [0.0, 0.0], [1.0, 1.0], 10))
        emit(out, "morton2_32", xp.algorithms.morton_keys(p2 * 3.0 - 1.0, [-1.0, -1.0], [2.0, 2.0], 32))
        emit(out, "morton3_21", xp.algorithms.morton_keys(p3, [0.0, 0.0, 0.0], [1.0, 1.0, 1.0], 21))
        keys = (np.arange(n, dtype=np.uint64) * np.uint64(2654435761)) % np.uint64(97)
        sorted_keys, order = xp.algorithms.sort_by_key(keys)[:2]
        emit(out, "sort_keys", sorted_keys)
        emit(out, "sort_order", order)
        seg_keys = (np.arange(n, dtype=np.int64) * 7) % 50
        emit(out, "segment_sum", xp.algorithms.segment_sum(np.sin(i), seg_keys, 50))
        out.write("report h 1 " + transfer_report().encode().hex() + "\n")


def transfer_report():
    """The layout of a transfer report (3 to_device from one line, 1 to_host), the call sites
    replaced by WHERE and the first line (whose kinds differ between the libraries) dropped."""
    import os
    import re
    if os.environ.get("CUNUMPY_FAKE_CUPY") != "1":
        return ""
    with xp.use_backend("cupy"):
        with xp.profiling.count_transfers() as c:
            for _ in range(3):
                d = xp.to_cupy(np.zeros(4))
            xp.to_numpy(d)
    lines = c.report().splitlines()[1:]
    return "\n".join(re.sub(r"\S+:\d+: ", "WHERE: ", line) for line in lines)


if __name__ == "__main__":
    main(sys.argv[1])
