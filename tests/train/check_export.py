#!/usr/bin/python3
"""check_export.py - the ONNX side of test_rt_train's export test.

    check_export.py template OUT       write an ONNX template: softmax regression
                                       (Sub running_mean, MatMul W, Add b) with the
                                       initializers W, b, running_mean removed
    check_export.py check FILE DIR     FILE must load with onnx, pass the checker and
                                       hold initializers W, b, running_mean equal to
                                       DIR/W.npy, b.npy, running_mean.npy; prints the
                                       model's output for DIR/x.npy, computed with numpy
                                       from the decoded initializers, to DIR/y.npy
Exits 77 when onnx is missing.
"""
import sys

try:
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper, TensorProto
except ImportError:
    sys.exit(77)


def template(out):
    nodes = [
        helper.make_node("Sub", ["x", "running_mean"], ["xc"]),
        helper.make_node("MatMul", ["xc", "W"], ["xw"]),
        helper.make_node("Add", ["xw", "b"], ["logits"]),
    ]
    inits = [numpy_helper.from_array(np.zeros(s, np.float32), n)
             for n, s in (("W", (4, 3)), ("b", (3,)), ("running_mean", (4,)))]
    g = helper.make_graph(nodes, "fake",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 4])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [8, 3])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    del m.graph.initializer[:]
    with open(out, "wb") as f:
        f.write(m.SerializeToString())


def check(path, d):
    m = onnx.load(path)
    onnx.checker.check_model(m)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    assert sorted(inits) == ["W", "b", "running_mean"], sorted(inits)
    for name in inits:
        want = np.load(f"{d}/{name}.npy")
        got = inits[name]
        assert got.dtype == np.float32 and got.shape == want.shape, (name, got.dtype, got.shape)
        assert np.array_equal(got, want), name
    assert [n.op_type for n in m.graph.node] == ["Sub", "MatMul", "Add"]
    x = np.load(f"{d}/x.npy")
    np.save(f"{d}/y.npy", (x - inits["running_mean"]) @ inits["W"] + inits["b"])
    print("export ok")


if sys.argv[1] == "template":
    template(sys.argv[2])
else:
    check(sys.argv[2], sys.argv[3])
