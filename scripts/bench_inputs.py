#!/usr/bin/python3
"""Helpers for scripts/bench-cpu: benchmark inputs and output comparison.

Usage:
    /usr/bin/python3 scripts/bench_inputs.py make FILE.npy SPEC SEED
    /usr/bin/python3 scripts/bench_inputs.py compare DIR_A DIR_B

make writes one fixed random input array.  SPEC is TYPE:SHAPE where TYPE is
    f32        standard normal float32 values
    i64<HIGH   int64 values uniform in [0, HIGH)  (token ids)
and SHAPE is dims joined by 'x', e.g. f32:8x3x224x224 or i64<1000:2x16.
The same SPEC and SEED always give the same bytes, so every run of the
benchmark sees the same data (and bench-cpu feeds one file to both runtimes).

compare reads every NAME.npy in DIR_A, the same NAME.npy in DIR_B, and prints
one line: the largest relative L2 error ||a-b|| / ||b|| over the outputs
("0" when there are none), or "mismatch: ..." when names, shapes or dtypes
differ.  It exits 0 in both cases and 2 on a usage or I/O error.

Run with Debian's Python (/usr/bin/python3), which has numpy.
"""

import os
import sys

import numpy as np


def parse_spec(spec):
    """'f32:1x3x224x224' -> ('f32', None, (1,3,224,224)); 'i64<1000:2x16' ->
    ('i64', 1000, (2,16))."""
    kind, _, shape = spec.partition(":")
    if not shape:
        raise ValueError(f"bad SPEC {spec!r}: want TYPE:SHAPE")
    dims = tuple(int(d) for d in shape.split("x"))
    if kind == "f32":
        return kind, None, dims
    if kind.startswith("i64<"):
        return "i64", int(kind[4:]), dims
    raise ValueError(f"bad SPEC type {kind!r}: want f32 or i64<HIGH")


def make(path, spec, seed):
    kind, high, dims = parse_spec(spec)
    rng = np.random.RandomState(seed)
    if kind == "f32":
        a = rng.standard_normal(dims).astype(np.float32)
    else:
        a = rng.randint(0, high, size=dims).astype(np.int64)
    tmp = path + ".tmp.npy"
    np.save(tmp, a)
    os.replace(tmp, path)


def compare(dir_a, dir_b):
    names_a = sorted(f for f in os.listdir(dir_a) if f.endswith(".npy"))
    names_b = sorted(f for f in os.listdir(dir_b) if f.endswith(".npy"))
    if names_a != names_b:
        return f"mismatch: outputs {names_a} vs {names_b}"
    worst = 0.0
    for n in names_a:
        a = np.load(os.path.join(dir_a, n))
        b = np.load(os.path.join(dir_b, n))
        if a.shape != b.shape or a.dtype != b.dtype:
            return (f"mismatch: {n} is {a.dtype}{list(a.shape)} vs "
                    f"{b.dtype}{list(b.shape)}")
        a = a.astype(np.float64)
        b = b.astype(np.float64)
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            return f"mismatch: {n} has non-finite values"
        den = np.linalg.norm(b)
        err = np.linalg.norm(a - b) / den if den > 0 else np.linalg.norm(a - b)
        worst = max(worst, float(err))
    return f"{worst:.2g}"


def main(argv):
    try:
        if len(argv) == 4 and argv[0] == "make":
            make(argv[1], argv[2], int(argv[3]))
            return 0
        if len(argv) == 3 and argv[0] == "compare":
            print(compare(argv[1], argv[2]))
            return 0
    except (ValueError, OSError) as e:
        print(f"bench_inputs: {e}", file=sys.stderr)
        return 2
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
