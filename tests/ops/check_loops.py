#!/usr/bin/python3
"""Loop and Scan (frontend/ops_loop.c, unrolled at import) against numpy
and torch.

Usage: check_loops.py ONNXC

The ONNX node tests have one Loop and four Scans, all small; these cases
cover what they do not: nested Loops whose inner trip count is the outer
iteration number, a Loop that stops on a condition its body computes (and a
while loop without a trip count), loop-carried values whose shapes change
across iterations, Scan-9 over several inputs on other axes and in reverse
with outputs stacked on other axes in reverse, Scan-8 over a batch, and the
Loop torch.onnx writes for a scripted for-loop (a recurrent cell over the
time steps). References: numpy's float64 evaluation of each definition, and
torch's own output for the scripted model. Each case is written as a
backend test case and run with `onnxc check`. Exits 1 on any failure.
"""

import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from backend_case import run_check, write_case  # noqa: E402

rng = np.random.default_rng(11)
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def vi(name, dims, t=F):
    return helper.make_tensor_value_info(name, t, dims)


def const_node(name, a):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.asarray(a), name))


def graph_model(nodes, inputs, outputs, inits=(), opset=16):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


# ---------------------------------------------------------------- Loop

def nested_loops():
    """y = Loop(3) { i, y: y2 = Loop(i + 1) { j, t: t * w + j }(y); scan y2 }."""
    w = rand(4)
    inner = helper.make_graph(
        [helper.make_node("Identity", ["c_in2"], ["c_out2"], name="ci"),
         const_node("w", w),
         helper.make_node("Mul", ["t_in", "w"], ["tw"], name="mul"),
         helper.make_node("Cast", ["j"], ["jf"], name="cast", to=F),
         helper.make_node("Add", ["tw", "jf"], ["t_out"], name="add")],
        "inner", [vi("j", [], I64), vi("c_in2", [], B), vi("t_in", [4])],
        [vi("c_out2", [], B), vi("t_out", [4])])
    outer = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"], name="co"),
         const_node("one", np.int64(1)),
         helper.make_node("Add", ["i", "one"], ["n"], name="n"),
         helper.make_node("Loop", ["n", "", "y_in"], ["y_out"], name="inner", body=inner),
         helper.make_node("Identity", ["y_out"], ["scan"], name="scan")],
        "outer", [vi("i", [], I64), vi("c_in", [], B), vi("y_in", [4])],
        [vi("c_out", [], B), vi("y_out", [4]), vi("scan", [4])])
    m = graph_model([helper.make_node("Loop", ["m", "", "y0"], ["y", "ys"], name="outer",
                                      body=outer)],
                    [vi("y0", [4])], [vi("y", [4]), vi("ys", [3, 4])],
                    [numpy_helper.from_array(np.int64(3), "m")])
    y0 = rand(4)
    y, ys = y0.astype(np.float64), []
    for i in range(3):
        for j in range(i + 1):
            y = y * w + j
        ys.append(y)
    return "loop_nested", m, [("y0", y0)], [("y", f32(y)), ("ys", f32(np.stack(ys)))]


def loop_stops():
    """A Loop of at most 10 whose body says stop after iteration 2 (i < 2),
    and a while loop (no trip count) on the same condition."""
    def body():
        return helper.make_graph(
            [const_node("two", np.int64(2)),
             helper.make_node("Less", ["i", "two"], ["c_out"], name="less"),
             helper.make_node("Mul", ["y_in", "y_in"], ["y_out"], name="sq"),
             helper.make_node("Cast", ["i"], ["si"], name="s", to=F)],
            "body", [vi("i", [], I64), vi("c_in", [], B), vi("y_in", [3])],
            [vi("c_out", [], B), vi("y_out", [3]), vi("si", [])])
    y0 = (rand(3) * 0.5 + 1).astype(np.float32)
    want = y0.astype(np.float64) ** 8  # iterations 0, 1, 2 run
    cases = []
    for name, trip in (("loop_stops", "m"), ("loop_while", "")):
        inits = [numpy_helper.from_array(np.bool_(True), "c")]
        if trip:
            inits.append(numpy_helper.from_array(np.int64(10), "m"))
        m = graph_model([helper.make_node("Loop", [trip, "c", "y0"], ["y", "s"], name="loop",
                                          body=body())],
                        [vi("y0", [3])], [vi("y", [3]), vi("s", [3])], inits)
        cases.append((name, m, [("y0", y0)],
                      [("y", f32(want)), ("s", np.arange(3, dtype=np.float32))]))
    return cases


def loop_growing():
    """A loop-carried value that grows by one row per iteration (Concat)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"], name="c"),
         helper.make_node("Cast", ["i"], ["f"], name="f", to=F),
         helper.make_node("Reshape", ["f", "shape"], ["row"], name="row"),
         const_node("shape", np.array([1, 1], np.int64)),
         helper.make_node("Concat", ["y_in", "row"], ["y_out"], name="cat", axis=0)],
        "body", [vi("i", [], I64), vi("c_in", [], B), vi("y_in", None)],
        [vi("c_out", [], B), vi("y_out", None)])
    # the Constant is listed after its use: the importer orders the body's nodes
    m = graph_model([helper.make_node("Loop", ["m", "", "y0"], ["y"], name="loop", body=body)],
                    [vi("y0", [1, 1])], [vi("y", [5, 1])],
                    [numpy_helper.from_array(np.int64(4), "m")])
    y0 = rand(1, 1)
    want = np.concatenate([y0, np.arange(4, dtype=np.float32).reshape(4, 1)])
    return "loop_growing", m, [("y0", y0)], [("y", want)]


# ---------------------------------------------------------------- Scan

def scan9():
    """Two states, two scan inputs (one scanned along axis 1, one in
    reverse), two scan outputs (one stacked on axis 1, one in reverse)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "a"], ["t"], name="add"),
         helper.make_node("Mul", ["t", "b"], ["s_out"], name="mul"),
         helper.make_node("Max", ["p_in", "a"], ["p_out"], name="max"),
         helper.make_node("Sub", ["s_out", "p_out"], ["o1"], name="sub"),
         helper.make_node("Neg", ["t"], ["o2"], name="neg")],
        "body", [vi("s_in", [3]), vi("p_in", [3]), vi("a", [3]), vi("b", [3])],
        [vi("s_out", [3]), vi("p_out", [3]), vi("o1", [3]), vi("o2", [3])])
    m = graph_model([helper.make_node("Scan", ["s0", "p0", "xa", "xb"], ["s", "p", "y1", "y2"],
                                      name="scan", body=body, num_scan_inputs=2,
                                      scan_input_axes=[1, 0], scan_input_directions=[0, 1],
                                      scan_output_axes=[1, 0], scan_output_directions=[0, 1])],
                    [vi("s0", [3]), vi("p0", [3]), vi("xa", [3, 5]), vi("xb", [5, 3])],
                    [vi("s", [3]), vi("p", [3]), vi("y1", [3, 5]), vi("y2", [5, 3])])
    s0, p0, xa, xb = rand(3), rand(3), rand(3, 5), rand(5, 3) * 0.5
    s, p, o1, o2 = s0.astype(np.float64), p0.astype(np.float64), [], []
    for t in range(5):
        a, b = xa[:, t].astype(np.float64), xb[4 - t].astype(np.float64)
        tt = s + a
        s = tt * b
        p = np.maximum(p, a)
        o1.append(s - p)
        o2.append(-tt)
    return "scan9_axes_directions", m, [("s0", s0), ("p0", p0), ("xa", xa), ("xb", xb)], \
        [("s", f32(s)), ("p", f32(p)), ("y1", f32(np.stack(o1, 1))),
         ("y2", f32(np.stack(o2[::-1], 0)))]


def scan8():
    """Scan-8 over a batch of 2: a running sum and its scan, per element."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "xt"], ["s_out"], name="add"),
         helper.make_node("Identity", ["s_out"], ["o"], name="o")],
        "body", [vi("s_in", [2]), vi("xt", [2])], [vi("s_out", [2]), vi("o", [2])])
    m = graph_model([helper.make_node("Scan", ["", "s0", "x"], ["s", "y"], name="scan",
                                      body=body, num_scan_inputs=1, directions=[1])],
                    [vi("s0", [2, 2]), vi("x", [2, 4, 2])], [vi("s", [2, 2]), vi("y", [2, 4, 2])],
                    opset=8)
    s0, x = rand(2, 2), rand(2, 4, 2)
    run = s0[:, None, :] + np.cumsum(x[:, ::-1, :].astype(np.float64), axis=1)
    return "scan8_batch_reverse", m, [("s0", s0), ("x", x)], \
        [("s", f32(run[:, -1])), ("y", f32(run))]


# ---------------------------------------------------------------- torch

def torch_scripted_loop(root):
    """torch.onnx's Loop for a scripted for-loop over time steps: a tanh
    RNN cell, h = tanh(x_t W + h U), and the sum of the h's, against torch's
    own output (its trip count is a Shape, which folds)."""
    import torch

    class Cell(torch.nn.Module):
        def __init__(self):
            super().__init__()
            g = torch.Generator().manual_seed(3)
            self.w = torch.nn.Parameter(torch.randn(5, 6, generator=g) * 0.4)
            self.u = torch.nn.Parameter(torch.randn(6, 6, generator=g) * 0.4)

        def forward(self, x, h):
            acc = torch.zeros_like(h)
            for t in range(x.size(0)):
                h = torch.tanh(x[t] @ self.w + h @ self.u)
                acc = acc + h
            return h, acc

    x, h0 = torch.randn(7, 2, 5), torch.zeros(2, 6)
    mod = torch.jit.script(Cell())
    path = os.path.join(root, "torch_loop.onnx")
    torch.onnx.export(mod, (x, h0), path, input_names=["x", "h0"], output_names=["h", "acc"],
                      opset_version=16)
    with torch.no_grad():
        h, acc = mod(x, h0)
    m = onnx.load(path)
    if not any(n.op_type == "Loop" for n in m.graph.node):
        raise RuntimeError("torch did not export a Loop")
    return "torch_scripted_loop", m, [("x", x.numpy()), ("h0", h0.numpy())], \
        [("h", h.numpy()), ("acc", acc.numpy())]


def f32(a):
    return np.asarray(a, np.float32)


def main():
    onnxc = sys.argv[1]
    failed = 0
    with tempfile.TemporaryDirectory() as root:
        cases = [nested_loops(), loop_growing(), scan9(), scan8()] + loop_stops()
        cases.append(torch_scripted_loop(root))
        for name, m, ins, outs in cases:
            ok, r = run_check(onnxc, write_case(root, name, m, ins, outs))
            print("%-24s %s" % (name, "pass" if ok else "FAIL %s" % r))
            failed += not ok
    print("%d of %d cases failed" % (failed, len(cases)) if failed else "all passed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
