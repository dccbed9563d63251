#!/usr/bin/python3
"""If whose condition is known only at run time (docs/ir.md, Guards).

Usage: check_if.py ONNXC [ORT_RUN_JS]

Builds small models with run-time Ifs - nested Ifs, branches reading outer
values, a branch output that is an outer value or a constant, branches with
MatMul, Gemm and elementwise chains, an If inside an If's else branch, a
condition computed in the graph, several outputs - compiles each for the CPU
and runs it with every combination of condition values (`onnxc run`),
comparing with a numpy float64 reference of the model (and with ONNX
Runtime when scripts/ort_run.js finds onnxruntime-node; CI installs only
Debian packages, so there that part is skipped and says so). One model runs
with --precision mixed too (half tolerances). Each model is also exported
(`onnxc export` writes the guarded branches back as If nodes), the ONNX
checker must accept the file, and the exported model must compute the same
for every combination; a branch replaced by a trap cannot be exported, and
the export says so naming the trap. Exits 1 on any failure.
"""

import itertools
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ops"))
from backend_case import ort_outputs, run_model  # noqa: E402

F = TensorProto.FLOAT
B = TensorProto.BOOL
rng = np.random.default_rng(11)


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def graph(nodes, name, outputs, inits=()):
    return helper.make_graph(nodes, name, [], outputs, initializer=list(inits))


def const(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def make(nodes, inputs, outputs, inits=(), opset=18):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def sig(x):
    return 1 / (1 + np.exp(-x))


def cases():
    """name -> (model, {input: array} without conditions, [condition names],
    reference(inputs, conds) -> [outputs])."""
    c = {}
    x = rng.standard_normal((4, 8)).astype(np.float32)
    w1 = rng.standard_normal((8, 6)).astype(np.float32)
    b1 = rng.standard_normal((6,)).astype(np.float32)
    w2 = rng.standard_normal((6, 8)).astype(np.float32)
    b2 = rng.standard_normal((6,)).astype(np.float32)

    # nested: then = relu(x) then an inner If on c2 (neg / mul by x); else
    # gives the outer x as it is; sigmoid after the merge
    inner = helper.make_node(
        "If", ["c2"], ["z"], name="inner",
        then_branch=graph([helper.make_node("Neg", ["r"], ["z1"])], "t2", [vi("z1", F, [4, 8])]),
        else_branch=graph([helper.make_node("Mul", ["r", "x"], ["z2"])], "e2",
                          [vi("z2", F, [4, 8])]))
    m = make([helper.make_node("If", ["c1"], ["y0"], name="outer",
                               then_branch=graph([helper.make_node("Relu", ["x"], ["r"]), inner],
                                                 "then", [vi("z", F, [4, 8])]),
                               else_branch=graph([], "else", [vi("x", F, [4, 8])])),
              helper.make_node("Sigmoid", ["y0"], ["y"])],
             [vi("x", F, [4, 8]), vi("c1", B, []), vi("c2", B, [1])], [vi("y", F, [4, 8])])

    def ref_nested(i, k):
        r = np.maximum(i["x"], 0)
        z = -r if k["c2"] else r * i["x"]
        return [sig(z if k["c1"] else i["x"])]
    c["nested"] = (m, {"x": x}, ["c1", "c2"], ref_nested)

    # MatMul and Gemm branches with elementwise chains, reading outer
    # weights; two outputs, one of them a constant in the else branch
    then_g = graph([helper.make_node("MatMul", ["x", "w1"], ["m"]),
                    helper.make_node("Add", ["m", "b1"], ["a"]),
                    helper.make_node("Relu", ["a"], ["ra"]),
                    helper.make_node("Mul", ["ra", "two"], ["t"]),
                    helper.make_node("Tanh", ["t"], ["t2"]),
                    helper.make_node("ReduceSum", ["t2"], ["s"], keepdims=0)],
                   "then", [vi("t2", F, [4, 6]), vi("s", F, [])])
    else_g = graph([helper.make_node("Gemm", ["x", "w2", "b2"], ["gm"], transB=1, alpha=0.5),
                    helper.make_node("Sigmoid", ["gm"], ["sg"]),
                    helper.make_node("Sub", ["sg", "b1"], ["e"])],
                   "else", [vi("e", F, [4, 6]), vi("k", F, [])],
                   [const("k", np.array(7, np.float32))])
    m = make([helper.make_node("If", ["c"], ["y", "s_out"], name="linear",
                               then_branch=then_g, else_branch=else_g),
              helper.make_node("Add", ["y", "y"], ["yy"])],
             [vi("x", F, [4, 8]), vi("c", B, [])], [vi("yy", F, [4, 6]), vi("s_out", F, [])],
             [const("w1", w1), const("b1", b1), const("w2", w2), const("b2", b2),
              const("two", np.array(2, np.float32))])

    def ref_linear(i, k):
        xx = i["x"].astype(np.float64)
        if k["c"]:
            t2 = np.tanh(2 * np.maximum(xx @ w1 + b1, 0))
            y, s = t2, t2.sum()
        else:
            y, s = sig(0.5 * xx @ w2.T + b2) - b1, 7.0
        return [2 * y, np.array(s)]
    c["linear"] = (m, {"x": x}, ["c"], ref_linear)

    # an If in the else branch of an If, the condition computed in the
    # graph (ReduceSum(x) > 0), and a condition of the inner If read from
    # an input
    inner = helper.make_node(
        "If", ["c2"], ["z"], name="inner",
        then_branch=graph([helper.make_node("Exp", ["x"], ["z1"])], "t2", [vi("z1", F, [4, 8])]),
        else_branch=graph([helper.make_node("Abs", ["x"], ["ab"]),
                           helper.make_node("Mul", ["ab", "x"], ["z2"])], "e2",
                          [vi("z2", F, [4, 8])]))
    m = make([helper.make_node("ReduceSum", ["x"], ["sum"], keepdims=0),
              helper.make_node("Greater", ["sum", "zero"], ["c1"]),
              helper.make_node("If", ["c1"], ["y"], name="outer",
                               then_branch=graph([helper.make_node("Sigmoid", ["x"], ["sx"])],
                                                 "then", [vi("sx", F, [4, 8])]),
                               else_branch=graph([inner], "else", [vi("z", F, [4, 8])]))],
             [vi("x", F, [4, 8]), vi("c2", B, [])], [vi("y", F, [4, 8])],
             [const("zero", np.array(0, np.float32))])

    def ref_else_if(i, k):
        xx = i["x"]
        if xx.sum() > 0:
            return [sig(xx)]
        return [np.exp(xx) if k["c2"] else np.abs(xx) * xx]
    # the computed condition takes both values through the sign of x
    c["else_if_pos"] = (m, {"x": np.abs(x)}, ["c2"], ref_else_if)
    c["else_if_neg"] = (m, {"x": -np.abs(x)}, ["c2"], ref_else_if)
    return c


# ONNX Runtime refuses a branch output that is an outer value (it wants an
# Identity between), which ONNX allows and onnxc takes
ORT_SKIP = {"nested"}


def main():
    onnxc = sys.argv[1]
    ort_run = sys.argv[2] if len(sys.argv) > 2 else None
    have_ort = bool(ort_run) and subprocess.run(["node", ort_run, "--check"],
                                                capture_output=True).returncode == 0
    if not have_ort:
        print("note: onnxruntime-node not found: ONNX Runtime comparisons skipped")
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        for name, (m, data, conds, ref) in cases().items():
            path = os.path.join(d, name + ".onnx")
            onnx.save(m, path)
            outs = [o.name for o in m.graph.output]
            exported = os.path.join(d, name + ".exported.onnx")
            p = subprocess.run([onnxc, "export", path, "-o", exported], capture_output=True,
                               text=True)
            if p.returncode:
                print("FAIL: %s: onnxc export: %s" % (name, p.stderr.strip()))
                failures += 1
                exported = None
            else:
                onnx.checker.check_model(exported, full_check=True)
                print("ok: %s exported, the checker accepts it" % name)
            for values in itertools.product([False, True], repeat=len(conds)):
                k = dict(zip(conds, values))
                inputs = dict(data)
                for cn in conds:
                    shape = [dd.dim_value for dd in next(
                        i for i in m.graph.input if i.name == cn).type.tensor_type.shape.dim]
                    inputs[cn] = np.full(shape, k[cn], dtype=bool)
                want = ref(data, k)
                modes = [("fp32", (), 1e-5, 1e-5)]
                if name == "linear":
                    modes.append(("mixed", ("--precision", "mixed"), 2e-2, 2e-2))
                if exported:
                    modes.append(("exported", (), 1e-5, 1e-5))
                for mode, extra, rtol, atol in modes:
                    out, err = run_model(onnxc, d, exported if mode == "exported" else path,
                                         inputs, extra)
                    label = "%s %s %s" % (name, mode, k)
                    if out is None:
                        print("FAIL: %s: onnxc run failed: %s" % (label, err))
                        failures += 1
                        continue
                    for n, w in zip(outs, want):
                        got = np.load(os.path.join(out, n + ".npy"))
                        if got.shape != np.shape(w) or not np.allclose(got, w, rtol, atol):
                            print("FAIL: %s: output %s differs by %g" %
                                  (label, n, np.max(np.abs(got - w)) if got.shape == np.shape(w)
                                   else float("inf")))
                            failures += 1
                        else:
                            print("ok: %s: %s" % (label, n))
                if have_ort and name not in ORT_SKIP:
                    got, err = ort_outputs(ort_run, d, path, inputs, len(outs))
                    if got is None:
                        print("FAIL: %s: ONNX Runtime: %s" % (name, err))
                        failures += 1
                    else:
                        for n, g, w in zip(outs, got, want):
                            if not np.allclose(g, w, 1e-5, 1e-5):
                                print("FAIL: %s %s: ONNX Runtime's %s differs from the "
                                      "reference" % (name, k, n))
                                failures += 1
        # a branch that cannot be compiled for these shapes (Silero VAD's
        # 8 kHz network for 512-sample chunks) becomes a trap: a warning at
        # compile time, the other branch runs, taking it fails the run
        shape = lambda name, dims: const(name, np.array(dims, np.int64))  # noqa: E731
        m = make([helper.make_node("If", ["c"], ["y"], name="by_size",
                                   then_branch=graph([helper.make_node("Reshape", ["x", "s23"],
                                                                       ["t"], name="ok")],
                                                     "then", [vi("t", F, [2, 3])], [shape("s23", [2, 3])]),
                                   else_branch=graph([helper.make_node("Reshape", ["x", "s44"],
                                                                       ["e"], name="bad")],
                                                     "else", [vi("e", F, [2, 3])], [shape("s44", [4, 4])]))],
                 [vi("x", F, [6]), vi("c", B, [])], [vi("y", F, [2, 3])])
        path = os.path.join(d, "trap.onnx")
        onnx.save(m, path)
        x = rng.standard_normal(6).astype(np.float32)
        p = subprocess.run([onnxc, "compile", path, "-o", os.path.join(d, "trap")],
                           capture_output=True, text=True)
        out, err = run_model(onnxc, d, path, {"x": x, "c": np.array(True)})
        bad, why = run_model(onnxc, d, path, {"x": x, "c": np.array(False)})
        if (p.returncode or "node 'by_size' (If): the else branch cannot be compiled" not in p.stderr
                or out is None or not np.array_equal(np.load(os.path.join(out, "y.npy")),
                                                      x.reshape(2, 3))
                or bad is not None or "took a branch that cannot run" not in why):
            print("FAIL: a branch that cannot be compiled: compile %d %s; run taken: %s; "
                  "run not taken: %s" % (p.returncode, p.stderr.strip(), err or "ok",
                                         why or "it succeeded"))
            failures += 1
        else:
            print("ok: a branch that cannot be compiled: " + p.stderr.strip().splitlines()[0])
            print("ok: ... and a run that takes it: " + why.splitlines()[-1])
        # ... and cannot be exported: the export names the trap
        p = subprocess.run([onnxc, "export", path, "-o", os.path.join(d, "out.onnx")],
                           capture_output=True, text=True)
        if p.returncode != 1 or "node 'by_size' (trap): cannot export" not in p.stderr:
            print("FAIL: onnxc export of a trap branch: status %d, %s" %
                  (p.returncode, p.stderr.strip()))
            failures += 1
        else:
            print("ok: export refuses a trap: " + p.stderr.strip().splitlines()[0])
    print("%d failures" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
