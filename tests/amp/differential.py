#!/usr/bin/python3
"""Mixed precision against FP32 on the CPU target, for the golden AMP graphs.

Usage: /usr/bin/python3 tests/amp/differential.py ONNXC MODELDIR

For each amp_* model tests/models/small.py built, runs it with `onnxc run`
in FP32 and with --precision mixed (greedy and cost policies, FP16 and
BF16, Tensor Core padding on) on the same seeded inputs, and checks every
output's relative L2 error against the FP32 run: <= 1e-2 for FP16, <= 5e-2
for BF16 (the bounds docs/precision.md states). The graphs pad, fold casts,
repaint model casts and stage half tensors around library kernels, so this
checks those rewrites compute what the FP32 graph computes.
"""

import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto

CASES = [  # model, extra args
    ("amp_small_matmul", []),
    ("amp_exp_add", []),
    ("amp_clear_between", []),
    ("amp_model_casts", []),
    ("amp_gemm_k1001", []),
    ("amp_first_conv", ["--dim", "batch=8"]),  # padded for Tensor Cores
]
RUNS = [  # args, bound
    (["--precision", "mixed", "--amp-policy", "greedy"], 1e-2),
    (["--precision", "mixed", "--half", "bf16", "--amp-policy", "greedy"], 5e-2),
    (["--precision", "mixed"], 1e-2),
]
NP = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16,
      TensorProto.INT64: np.int64}


def inputs(model, dims, work):
    rng = np.random.RandomState(0)
    args = []
    for vi in model.graph.input:
        t = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else dims[d.dim_param]
                 for d in t.shape.dim]
        if t.elem_type == TensorProto.INT64:
            a = rng.randint(0, 4, size=shape).astype(np.int64)
        else:
            a = rng.standard_normal(shape).astype(NP[t.elem_type])
        path = os.path.join(work, vi.name + ".npy")
        np.save(path, a)
        args += ["--input", f"{vi.name}={path}"]
    return args


def run(onnxc, model_path, args, work, tag):
    out = os.path.join(work, tag)
    os.makedirs(out, exist_ok=True)
    cmd = [onnxc, "run", model_path, "--repeat", "1", "--cache-dir",
           os.path.join(work, "cache"), "--output-dir", out] + args
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"FAIL: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return out


def main():
    onnxc, models = sys.argv[1], sys.argv[2]
    failed = 0
    with tempfile.TemporaryDirectory() as work:
        for name, extra in CASES:
            path = os.path.join(models, name + ".onnx")
            model = onnx.load(path)
            dims = {extra[i + 1].split("=")[0]: int(extra[i + 1].split("=")[1])
                    for i in range(0, len(extra), 2) if extra[i] == "--dim"}
            ins = inputs(model, dims, work)
            ref = run(onnxc, path, ins + extra, work, name + ".fp32")
            for k, (args, bound) in enumerate(RUNS):
                got = run(onnxc, path, ins + extra + args, work, f"{name}.{k}")
                for o in model.graph.output:
                    r = np.load(os.path.join(ref, o.name + ".npy")).astype(np.float64)
                    g = np.load(os.path.join(got, o.name + ".npy")).astype(np.float64)
                    err = np.linalg.norm(g - r) / max(np.linalg.norm(r), 1e-30)
                    ok = g.shape == r.shape and err <= bound
                    failed += not ok
                    print(f"{'ok  ' if ok else 'FAIL'} {name} {' '.join(args)}: "
                          f"{o.name} rel l2 {err:.3g} (bound {bound:g})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
