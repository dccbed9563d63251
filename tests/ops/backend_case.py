"""Backend test cases written and checked with `onnxc check`, and models run
on .npy inputs by `onnxc run` and by ONNX Runtime (scripts/ort_run.js):
shared by the differential checks in this folder, tests/if and tests/loop."""
import json
import os
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper


def write_case(root, name, m, inputs, outputs):
    """root/name/model.onnx and test_data_set_0 with inputs and outputs
    [(name, array)]; returns the case's folder."""
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(m, os.path.join(d, "model.onnx"))
    for kind, vals in (("input", inputs), ("output", outputs)):
        for i, (n, a) in enumerate(vals):
            with open(os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, i)), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())
    return d


def run_check(onnxc, d, extra=()):
    """`onnxc check d --json`: (passed, the JSON result or an error)."""
    p = subprocess.run([onnxc, "check", d, "--json"] + list(extra), capture_output=True,
                       text=True)
    try:
        r = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        r = {"status": "error", "message": p.stderr.strip()[-300:]}
    return p.returncode == 0, r


def _npy_args(folder, inputs):
    """--input NAME=FILE for each of inputs {name: array}, saved in folder."""
    args = []
    for n, a in inputs.items():
        path = os.path.join(folder, "in_%s.npy" % n)
        np.save(path, a)
        args += ["--input", "%s=%s" % (n, path)]
    return args


def run_model(onnxc, d, model_path, inputs, extra=()):
    """`onnxc run` of the model on inputs {name: array}, in a new folder
    under d (its compile cache in d/cache): (the folder, its outputs there as
    NAME.npy, "") or (None, the error)."""
    out = tempfile.mkdtemp(dir=d)
    args = [onnxc, "run", model_path, "--repeat", "1", "--output-dir", out,
            "--cache-dir", os.path.join(d, "cache")] + list(extra) + _npy_args(out, inputs)
    try:
        p = subprocess.run(args, capture_output=True, text=True)
    except OSError as e:
        return None, str(e)
    if p.returncode:
        return None, p.stderr.strip()
    return out, ""


def ort_outputs(ort_run, d, model_path, inputs, count):
    """The model's first count outputs under ONNX Runtime (node ort_run) on
    inputs {name: array}: ([arrays], "") or (None, the error)."""
    out = tempfile.mkdtemp(dir=d)
    p = subprocess.run(["node", ort_run, model_path, "--output-dir", out] +
                       _npy_args(out, inputs), capture_output=True, text=True)
    if p.returncode:
        return None, p.stderr.strip()
    return [np.load(os.path.join(out, "output_%d.npy" % k)) for k in range(count)], ""
