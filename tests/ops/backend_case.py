"""Backend test cases written and checked with `onnxc check`: shared by the
differential checks in this folder."""
import json
import os
import subprocess

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
