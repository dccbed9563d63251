"""Models and ONNX test cases for tests/run/cli.sh (onnxc run and check).

usage: models.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

out = sys.argv[1]


def model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def vi(name, dims, elem=T.FLOAT):
    return helper.make_tensor_value_info(name, elem, dims)


def case(name, m, sets):
    """An ONNX backend test case: model.onnx and test_data_set_N/ holding
    input_K.pb and output_K.pb; a tensor given as (NAME, ARRAY) carries NAME."""
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for s, (ins, outs) in enumerate(sets):
        sd = os.path.join(d, "test_data_set_%d" % s)
        os.makedirs(sd, exist_ok=True)
        for prefix, ts in (("input", ins), ("output", outs)):
            for k, (n, a) in enumerate(ts):
                t = numpy_helper.from_array(a, n)
                with open(os.path.join(sd, "%s_%d.pb" % (prefix, k)), "wb") as f:
                    f.write(t.SerializeToString())


# y = x @ w with w in an external data file
os.makedirs(os.path.join(out, "ext"), exist_ok=True)
w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "w")
m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
          [vi("x", ["batch", 3])], [vi("y", ["batch", 4])], [w])
onnx.save_model(m, os.path.join(out, "ext", "model.onnx"), save_as_external_data=True,
                all_tensors_to_one_file=True, location="model.data", size_threshold=0)
np.save(os.path.join(out, "x.npy"), np.arange(6, dtype=np.float32).reshape(2, 3))

# two inputs sharing a symbolic dimension: y = a + b
onnx.save(model([helper.make_node("Add", ["a", "b"], ["y"], name="add")],
                [vi("a", ["batch", 3]), vi("b", ["batch", 3])], [vi("y", ["batch", 3])]),
          os.path.join(out, "two.onnx"))
for name, a in (("a2", np.ones((2, 3), np.float32)), ("b5", np.ones((5, 3), np.float32)),
                ("i64", np.ones((2, 3), np.int64)), ("r3", np.ones((2, 3, 1), np.float32)),
                ("d4", np.ones((2, 4), np.float32))):
    np.save(os.path.join(out, name + ".npy"), a)

# Reshape's shape as a graph input: check freezes it from test_data_set_0;
# test_data_set_1's shape has more elements than the first's
data = np.arange(6, dtype=np.float32)
reshape = model([helper.make_node("Reshape", ["data", "shape"], ["y"], name="reshape")],
                [vi("data", [6]), vi("shape", [None], T.INT64)],
                [helper.make_tensor_value_info("y", T.FLOAT, None)])
case("frozen_grows", reshape,
     [([("data", data), ("shape", np.array([3, 2], np.int64))], [("y", data.reshape(3, 2))]),
      ([("data", data), ("shape", np.array([1, 3, 2], np.int64))],
       [("y", data.reshape(1, 3, 2))])])
case("frozen_same", reshape,
     [([("data", data), ("shape", np.array([3, 2], np.int64))], [("y", data.reshape(3, 2))]),
      ([("data", data + 1), ("shape", np.array([3, 2], np.int64))],
       [("y", data.reshape(3, 2) + 1)])])

# two outputs; the references name them in the other order
x = np.arange(4, dtype=np.float32)
two_out = model([helper.make_node("Add", ["x", "one"], ["a"], name="add"),
                 helper.make_node("Mul", ["x", "two"], ["b"], name="mul")],
                [vi("x", [4])], [vi("a", [4]), vi("b", [4])],
                [numpy_helper.from_array(np.float32(1), "one"),
                 numpy_helper.from_array(np.float32(2), "two")])
case("by_name", two_out, [([("x", x)], [("b", x * 2), ("a", x + 1)])])
case("unknown_name", two_out, [([("x", x)], [("zzz", x + 1), ("b", x * 2)])])
case("twice_named", two_out, [([("x", x)], [("a", x + 1), ("a", x + 1)])])
# a second data set with an input fewer than the first
case("short_set", two_out, [([("x", x)], [("a", x + 1), ("b", x * 2)]),
                            ([], [("a", x + 1), ("b", x * 2)])])
# input_0.pb of the wrong size for a static input
case("bad_input", two_out, [([("x", np.arange(5, dtype=np.float32))],
                             [("a", x + 1), ("b", x * 2)])])

# more inputs and outputs than onnxc's fixed arrays once held (64)
n = 70
onnx.save(model([helper.make_node("Sum", ["x%d" % i for i in range(n)], ["y"], name="sum")],
                [vi("x%d" % i, [1]) for i in range(n)], [vi("y", [1])]),
          os.path.join(out, "many_in.onnx"))
np.save(os.path.join(out, "one.npy"), np.ones(1, np.float32))
x = np.ones(1, np.float32)
case("many_out", model([helper.make_node("Mul", ["x", "k%d" % i], ["y%d" % i], name="m%d" % i)
                        for i in range(n)], [vi("x", [1])], [vi("y%d" % i, [1]) for i in range(n)],
                       [numpy_helper.from_array(np.float32(i), "k%d" % i) for i in range(n)]),
     [([("x", x)], [("y%d" % i, x * i) for i in range(n)])])
