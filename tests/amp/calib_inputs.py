#!/usr/bin/env python3
"""Calibration inputs for a test case that are not its checked inputs.

    calib_inputs.py CASE OUTDIR [--samples K] [--seed S]

reads CASE/test_data_set_0/input_*.pb and writes OUTDIR/test_data_set_N/
input_*.pb (N < K) with the same names, types and shapes, drawn afresh:
floats from the standard normal distribution (what tests/models/zoo.py
draws the zoo's inputs from, with another seed), integers (token ids)
uniformly from [0, the largest id in the case's own input]. `onnxc
--calibrate OUTDIR` then calibrates on inputs the check never sees
(docs/precision.md#calibration).
"""
import argparse
import glob
import os

import numpy as np
import onnx
from onnx import numpy_helper


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("out")
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1000)
    args = ap.parse_args()
    files = sorted(glob.glob(os.path.join(args.case, "test_data_set_0", "input_*.pb")),
                   key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0]))
    if not files:
        raise SystemExit("%s: no test_data_set_0/input_*.pb" % args.case)
    inputs = []
    for p in files:
        t = onnx.TensorProto()
        with open(p, "rb") as f:
            t.ParseFromString(f.read())
        inputs.append((t.name, numpy_helper.to_array(t)))
    rng = np.random.RandomState(args.seed)
    for k in range(args.samples):
        d = os.path.join(args.out, "test_data_set_%d" % k)
        os.makedirs(d, exist_ok=True)
        for j, (name, a) in enumerate(inputs):
            if a.dtype.kind == "f":
                x = rng.standard_normal(a.shape).astype(a.dtype)
            elif a.dtype == np.bool_:
                x = rng.randint(0, 2, size=a.shape).astype(np.bool_)
            else:
                x = rng.randint(0, int(a.max()) + 1, size=a.shape).astype(a.dtype)
            with open(os.path.join(d, "input_%d.pb" % j), "wb") as f:
                f.write(numpy_helper.from_array(x, name).SerializeToString())


if __name__ == "__main__":
    main()
