#!/usr/bin/python3
"""Generate the ONNX backend node tests from Debian's python3-onnx.

Usage: /usr/bin/python3 tests/models/onnx_node_tests.py OUTDIR

python3-onnx ships the generators, not the data. Under numpy 1.24 the
generators still use aliases numpy removed (np.float, np.int, ...); they are
restored here before calling onnx's own generate-data command. Writes
OUTDIR/node/<case>/{model.onnx,test_data_set_0/...} (about 920 cases).
"""
import os
import sys

import numpy as np

for _name, _alias in (("float", float), ("int", int), ("bool", bool), ("object", object),
                      ("complex", complex), ("str", str)):
    if not hasattr(np, _name):
        setattr(np, _name, _alias)

from onnx.backend.test.cmd_tools import main  # noqa: E402

if len(sys.argv) != 2:
    sys.exit(__doc__)
stamp = os.path.join(sys.argv[1], "node", ".complete")
if os.path.exists(stamp):
    sys.exit(0)
sys.argv = ["backend-test-tools", "generate-data", "-o", sys.argv[1]]
with open(os.devnull, "w") as devnull:
    _stdout, sys.stdout = sys.stdout, devnull
    main()
    sys.stdout = _stdout
open(stamp, "w").close()
